#!/usr/bin/env bash
# A three-node RabbitMQ cluster on loopback, for the cluster fault test
# (test/cluster) and for trying failover by hand. It uses the machine's
# RabbitMQ packages but none of the machine's node's settings or data: each
# node has its own name, AMQP port, distribution port, data and log
# directories, an Erlang cookie in a HOME of its own, an empty plugin list,
# and its own rabbitmq.conf / rabbitmq-env.conf (the machine's would put
# every node on 5672). The machine's own node (rabbit@localhost) is never
# touched.
#
#   scripts/rabbitmq-cluster.sh start DIR PORT1 [PORT2 PORT3]  # 1 to 3 nodes
#   scripts/rabbitmq-cluster.sh stop DIR            # every node still up
#   scripts/rabbitmq-cluster.sh stop-node DIR N     # one node (1..3), cleanly
#   scripts/rabbitmq-cluster.sh kill-node DIR N     # one node, SIGKILL (a crash)
#   scripts/rabbitmq-cluster.sh start-node DIR N PORT  # a node stopped or killed, again
#   scripts/rabbitmq-cluster.sh ctl DIR N ARGS...   # rabbitmqctl -n node N
#   scripts/rabbitmq-cluster.sh queues DIR N ARGS...  # rabbitmq-queues -n node N
#
# Node N is skicluster<N>-<id>@localhost, <id> taken from DIR so two
# clusters (two test runs) never share a name. Its AMQP port is PORTN and its
# distribution port PORTN+10000 (Erlang's rule for RABBITMQ_DIST_PORT), so
# pick ports below 55535 that are free together with their +10000.
#
# With RMQ_TLS_DIR set (holding ca.pem, server.pem, server.key), each node
# also listens for AMQPS on PORTN+1 with that certificate.
set -euo pipefail

RMQ_BIN=${RMQ_BIN:-/usr/lib/rabbitmq/bin}
fail() { echo "rabbitmq-cluster: $*" >&2; exit 1; }

[ $# -ge 2 ] || fail "usage: $0 start|stop|stop-node|kill-node|start-node|ctl|queues DIR ..."
cmd=$1 dir=$2
shift 2
[ -x "$RMQ_BIN/rabbitmq-server" ] || fail "$RMQ_BIN/rabbitmq-server not found (apt-get install rabbitmq-server)"

id=$(basename "$dir" | tr -c 'a-zA-Z0-9\n' '-' | tail -c 13)
node_name() { echo "skicluster$1-${id}@localhost"; }

# env_for N: the environment every command for node N runs in.
env_for() {
  local n=$1 nd="$dir/node$1"
  echo HOME="$dir/home" \
    RABBITMQ_NODENAME="$(node_name "$n")" \
    RABBITMQ_CONF_ENV_FILE="$nd/rabbitmq-env.conf" \
    RABBITMQ_CONFIG_FILE="$nd/rabbitmq.conf" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$nd/advanced.config" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$nd/enabled_plugins" \
    RABBITMQ_MNESIA_BASE="$nd/mnesia" \
    RABBITMQ_LOG_BASE="$nd/log" \
    RABBITMQ_PID_FILE="$nd/pid" \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    ERL_EPMD_ADDRESS=127.0.0.1
}

ctl() { local n=$1; shift; env $(env_for "$n") "$RMQ_BIN/rabbitmqctl" -n "$(node_name "$n")" "$@"; }
queues() { local n=$1; shift; env $(env_for "$n") "$RMQ_BIN/rabbitmq-queues" -n "$(node_name "$n")" "$@"; }

start_node() {
  local n=$1 port=$2 nd="$dir/node$1"
  mkdir -p "$nd/mnesia" "$nd/log"
  : >"$nd/rabbitmq-env.conf"
  echo "[]." >"$nd/enabled_plugins"
  echo "[]." >"$nd/advanced.config"
  cat >"$nd/rabbitmq.conf" <<EOF
listeners.tcp.local = 127.0.0.1:$port
loopback_users = none
EOF
  if [ -n "${RMQ_TLS_DIR:-}" ]; then
    cat >>"$nd/rabbitmq.conf" <<EOF
listeners.ssl.local = 127.0.0.1:$((port + 1))
ssl_options.cacertfile = $RMQ_TLS_DIR/ca.pem
ssl_options.certfile = $RMQ_TLS_DIR/server.pem
ssl_options.keyfile = $RMQ_TLS_DIR/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
EOF
  fi
  env $(env_for "$n") RABBITMQ_NODE_PORT="$port" RABBITMQ_DIST_PORT="$((port + 10000))" \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
    "$RMQ_BIN/rabbitmq-server" >"$nd/log/stdout.log" 2>&1 &
  echo $! >"$nd/launcher.pid"
}

# await_node N: await_startup fails at once while the node is not yet
# registered with epmd, so it is retried until the node answers (up to
# 120 s), or until the node's launcher has exited: a node that stopped or
# crashed while starting (a port taken since it was chosen) will not answer.
await_node() {
  local n=$1
  for _ in $(seq 1 240); do
    if ctl "$n" await_startup --timeout 120 >/dev/null 2>&1; then return 0; fi
    kill -0 "$(cat "$dir/node$n/launcher.pid")" 2>/dev/null || fail "node $(node_name "$n") exited while starting; see $dir/node$n/log"
    sleep 0.5
  done
  fail "node $(node_name "$n") did not start; see $dir/node$n/log"
}

case $cmd in
start)
  { [ $# -ge 1 ] && [ $# -le 3 ]; } || fail "start needs one to three AMQP ports"
  nodes=$(seq 1 $#)
  mkdir -p "$dir/home"
  # One cookie for the three nodes and the CLI tools, in this cluster's HOME.
  if [ ! -f "$dir/home/.erlang.cookie" ]; then
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/home/.erlang.cookie"
    chmod 400 "$dir/home/.erlang.cookie"
  fi
  n=1
  for port in "$@"; do
    start_node "$n" "$port"
    n=$((n + 1))
  done
  for n in $nodes; do await_node "$n"; done
  for n in $nodes; do
    [ "$n" = 1 ] && continue
    ctl "$n" stop_app >/dev/null
    ctl "$n" join_cluster "$(node_name 1)" >/dev/null || fail "$(node_name "$n") could not join $(node_name 1)"
    ctl "$n" start_app >/dev/null
  done
  ctl 1 await_online_nodes $# --timeout 120 >/dev/null 2>&1 || fail "the cluster did not reach $# running nodes"
  for n in $nodes; do echo "$(node_name "$n") amqp://guest:guest@127.0.0.1:${!n}/"; done
  ;;
stop)
  for n in 1 2 3; do
    [ -d "$dir/node$n" ] || continue
    ctl "$n" stop >/dev/null 2>&1 || true
  done
  # A node that would not stop through rabbitmqctl is killed by the pid it
  # wrote, never by name: other RabbitMQ nodes run on this machine.
  for n in 1 2 3; do
    pidf="$dir/node$n/pid"
    if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; then kill -9 "$(cat "$pidf")" || true; fi
  done
  ;;
stop-node)
  [ $# -eq 1 ] || fail "stop-node needs a node number"
  ctl "$1" stop >/dev/null
  ;;
kill-node)
  [ $# -eq 1 ] || fail "kill-node needs a node number"
  pidf="$dir/node$1/pid"
  [ -f "$pidf" ] || fail "node $1 wrote no pid file ($pidf)"
  pid=$(cat "$pidf")
  kill -9 "$pid"
  # Wait until it is gone (or a zombie nobody reaps): the caller's next
  # step assumes it is.
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || exit 0
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && exit 0
    sleep 0.1
  done
  fail "node $1 (pid $pid) still alive 10 s after SIGKILL"
  ;;
start-node)
  # A node of a cluster started here before rejoins it by itself (its
  # membership is in its data directory).
  [ $# -eq 2 ] || fail "start-node needs a node number and its AMQP port"
  start_node "$1" "$2"
  await_node "$1"
  ;;
ctl)
  n=$1; shift
  ctl "$n" "$@"
  ;;
queues)
  n=$1; shift
  queues "$n" "$@"
  ;;
*)
  fail "unknown command $cmd"
  ;;
esac
