#!/usr/bin/env bash
# Prints the path of a minimal Debian root with systemd that
# deploy/systemd_boot_test.go boots with systemd-nspawn --boot, building it
# with mmdebstrap when it is not in the cache yet (about 20 s with a nearby
# mirror, 215 MB). Only Debian packages go in; the test brings the binary,
# the unit and its environment file as read-only bind mounts and boots the
# root with --volatile=overlay, so the cached tree is never written to.
#
# The cache is keyed by a hash of the suite, the package list and the apt
# sources the root is built from: a change to any of them builds a new root
# beside the old one. Sources are the machine's own Debian ones
# (/etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list), or
# SKIDATA_NSPAWN_SOURCES (a sources file, or a mirror URL). The cache
# directory is SKIDATA_NSPAWN_CACHE, default /var/cache/skidata-nspawn.
#
# Fails loudly, naming the missing piece: mmdebstrap must be installed
# (scripts/services.sh installs it) and it must run as root.
set -euo pipefail

fail() { echo "nspawn-root: $*" >&2; exit 1; }

suite=bookworm
packages=systemd,systemd-sysv,dbus,passwd,ca-certificates
cache=${SKIDATA_NSPAWN_CACHE:-/var/cache/skidata-nspawn}

sources=${SKIDATA_NSPAWN_SOURCES:-}
if [ -z "$sources" ]; then
  for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    if [ -s "$f" ]; then sources=$f; break; fi
  done
fi
[ -n "$sources" ] || fail "no Debian apt sources found (/etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list); set SKIDATA_NSPAWN_SOURCES to a sources file or a mirror URL"

if [ -f "$sources" ]; then source_text=$(cat "$sources"); else source_text=$sources; fi
key=$(printf '%s\n%s\n%s\n' "$suite" "$packages" "$source_text" | sha256sum | cut -c1-16)
dir=$cache/$suite-$key

if [ -f "$dir/complete" ]; then
  echo "$dir/root"
  exit 0
fi

command -v mmdebstrap >/dev/null || fail "mmdebstrap is not installed (apt-get install mmdebstrap; scripts/services.sh does it)"
[ "$(id -u)" = 0 ] || fail "building the Debian root needs root (mmdebstrap in root mode; systemd-nspawn needs it too)"

mkdir -p "$cache"
# One build at a time; a second caller waits and then finds it done.
exec 9>"$cache/.lock"
flock 9
if [ ! -f "$dir/complete" ]; then
  echo "nspawn-root: building $dir/root ($suite: $packages) from $sources" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  mmdebstrap --quiet --variant=minbase --include="$packages" "$suite" "$dir/root" "$sources" >"$dir/build.log" 2>&1 \
    || fail "mmdebstrap failed building $dir/root; its output: $dir/build.log"
  touch "$dir/complete"
fi
echo "$dir/root"
