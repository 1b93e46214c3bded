#!/usr/bin/env bash
# Makes sure the servers the test suite talks to are up: starts the ones that
# are installed but stopped, and fails loudly, naming the missing piece, when
# one cannot be had. Without -short nothing is skipped (test/needs): a test
# that needs a server must find it.
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

# PostgreSQL on 127.0.0.1:5432 (the adapter and --store postgres tests; the
# URL they use is SKIDATA_TEST_POSTGRES_URL, default
# postgres://postgres@127.0.0.1:5432/test?sslmode=disable).
pg_up() {
  if command -v pg_isready >/dev/null; then pg_isready -q -h 127.0.0.1 -p 5432; else port_open 5432; fi
}
if ! pg_up; then
  command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ] && [ -n "$(ls /etc/postgresql)" ] \
    || fail "PostgreSQL is not answering on 127.0.0.1:5432 and is not installed (need pg_ctlcluster and a cluster under /etc/postgresql)"
  echo "services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start \
    || fail "PostgreSQL is installed but would not start (pg_ctlcluster ... main start failed)"
  wait_for "PostgreSQL on 127.0.0.1:5432" pg_up
fi
echo "services: PostgreSQL answers on 127.0.0.1:5432"

# RabbitMQ: the rabbitmq adapter's contract, failure and end-to-end tests.
# SKIDATA_TEST_AMQP_URL points the tests at another broker instead.
if [[ -z "${SKIDATA_TEST_AMQP_URL:-}" ]] && ! port_open 5672; then
  command -v rabbitmq-server >/dev/null || fail "RabbitMQ is not running on 127.0.0.1:5672 and not installed (apt-get install rabbitmq-server)"
  echo "services: starting RabbitMQ"
  rabbitmq-server -detached
  wait_for RabbitMQ port_open 5672
fi
command -v rabbitmqctl >/dev/null || fail "rabbitmqctl is needed by the RabbitMQ connection-cut test"

# dynalite (the DynamoDB the dynamo adapter's tests use) runs on Node.js and
# is pinned in test/dynamodb; each test binary starts its own.
command -v node >/dev/null || fail "node (Node.js) is not installed; dynalite and fauxqs need it: apt-get install nodejs npm"
if [ ! -f test/dynamodb/node_modules/dynalite/cli.js ]; then
  echo "services: installing dynalite (npm ci --prefix test/dynamodb)"
  npm ci --prefix test/dynamodb --no-audit --no-fund >/dev/null || fail "npm ci --prefix test/dynamodb failed"
fi

# fauxqs (the Amazon SQS stand-in the sqs adapter's tests use) runs on
# Node.js too and is pinned in test/sqs; each test binary starts its own.
if [ ! -f test/sqs/node_modules/fauxqs/package.json ]; then
  echo "services: installing fauxqs (npm ci --prefix test/sqs)"
  npm ci --prefix test/sqs --no-audit --no-fund >/dev/null || fail "npm ci --prefix test/sqs failed"
fi

# CloudFormation's resource specification (npm @aws-cdk/aws-service-spec,
# pinned in deploy/cfnspec): deploy/cfnspec_test.go checks the template
# against its db.json.gz.
if [ ! -f deploy/cfnspec/node_modules/@aws-cdk/aws-service-spec/db.json.gz ]; then
  echo "services: installing the CloudFormation specification (npm ci --prefix deploy/cfnspec)"
  npm ci --prefix deploy/cfnspec --no-audit --no-fund >/dev/null || fail "npm ci --prefix deploy/cfnspec failed"
fi

# need_command CMD PACKAGE WHY: the tests use CMD, from Debian's PACKAGE;
# it is installed when missing (apt-get update once), or make test stops
# naming it.
apt_updated=
need_command() {
  local cmd=$1 pkg=$2 why=$3
  command -v "$cmd" >/dev/null && return 0
  command -v apt-get >/dev/null || fail "$cmd is not installed ($why) and there is no apt-get to install Debian's $pkg"
  echo "services: installing $cmd (apt-get install $pkg): $why"
  if [ -z "$apt_updated" ]; then
    apt-get update -qq >/dev/null || fail "apt-get update failed; $cmd ($pkg) is needed: $why"
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null \
    || fail "$cmd is not installed and apt-get install $pkg failed; it is needed: $why"
  command -v "$cmd" >/dev/null || fail "apt-get installed $pkg but $cmd is not on PATH"
}

need_command rsvg-convert librsvg2-bin "skiload's chart test renders the SVG and checks it shows lines"
need_command shellcheck shellcheck "checks deploy/aws/pitr-restore.sh and the instances' user-data (deploy/template_test.go)"
need_command promtool prometheus "checks and unit-tests the Prometheus alert rules in deploy/prometheus (the package is not started)"
need_command systemd-analyze systemd "rates the hardening of deploy/systemd's units"
need_command systemd-nspawn systemd-container "boots deploy/systemd's API unit under a real systemd (deploy/systemd_boot_test.go)"
need_command mmdebstrap mmdebstrap "builds the Debian root that test boots"
# The root is cached (scripts/nspawn-root.sh); building it here makes a
# missing mirror or permission fail before the tests start, by name.
scripts/nspawn-root.sh >/dev/null || fail "the Debian root for the systemd boot test could not be built (scripts/nspawn-root.sh)"

# Redis: the cache contract suite and the --cache redis end-to-end test.
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
if ! redis_up; then
  command -v redis-server >/dev/null || fail "Redis does not answer on 127.0.0.1:6379 and redis-server is not installed"
  command -v redis-cli >/dev/null || fail "redis-cli is not installed (needed to check Redis on 127.0.0.1:6379)"
  echo "services: starting Redis on 127.0.0.1:6379"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log \
    || fail "Redis would not start (see /var/log/redis/ci.log)"
  wait_for "Redis on 127.0.0.1:6379" redis_up
fi

echo "services: ok"
