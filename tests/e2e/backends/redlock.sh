# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The redlock adapter (lib.sh sources it): the independent redis-servers
# that `scripts/with-redis --nodes N` started for the test; more helpers for
# the nodes are in redlock_lib.sh.
#
#   use_redlock                switch BACKEND, DL and DLOCK_BACKEND to
#                              $DLOCK_TEST_REDLOCK_URL; fails (never skips) when
#                              not under with-redis --nodes or without redlock.
#                              Sets NODES, QUORUM (NODES/2 + 1), NODE_PORTS and
#                              NODE_PIDFILES (arrays, node 1 first)
#   redlock_server_pids [I]    node I's pid (default 1)   (see server_freeze)
#   redlock_server_kill [I]    SIGKILL node I; its data is gone
#   redlock_server_start [I]   start node I again on its port, empty
#   redlock_server_restart [I] both

use_redlock() {
  [ -n "${DLOCK_TEST_NODES:-}" ] || DLOCK_TEST_REDLOCK_URL= # both or neither
  use_server redlock DLOCK_TEST_REDLOCK_URL "scripts/with-redis --nodes 5" redlock "${DLOCK_TEST_REDLOCK_URL:-}"
  NODES=$DLOCK_TEST_NODES
  # shellcheck disable=SC2034 # QUORUM is for the caller
  QUORUM=$((NODES / 2 + 1))
  read -r -a NODE_PORTS <<<"$DLOCK_TEST_NODE_PORTS"
  read -r -a NODE_PIDFILES <<<"$DLOCK_TEST_NODE_PIDFILES"
  [ "${#NODE_PORTS[@]}" = "$NODES" ] || fail "with-redis exported ${#NODE_PORTS[@]} node ports for $NODES nodes"
}

redlock_server_pids() { cat "${NODE_PIDFILES[$((${1:-1} - 1))]}"; }
redlock_server_kill() { kill_pid "$(redlock_server_pids "${1:-1}")" "node ${1:-1}"; }
redlock_server_start() { redlock_server_restart "$@"; }
redlock_server_restart() {
  local restart=DLOCK_TEST_NODE_RESTART_${1:-1}
  run_server_script "restart node ${1:-1}" "${!restart}"
}

# The waiters' queue's cost (checks/waiter_queue.sh), summed over the nodes.
redlock_queue_reset_stats() {
  local i
  for ((i = 1; i <= NODES; i++)); do node_cli "$i" CONFIG RESETSTAT >/dev/null; done
}
redlock_queue_commands() {
  local i total=0 one
  for ((i = 1; i <= NODES; i++)); do
    one=$(node_cli "$i" INFO commandstats | _redis_count_commands)
    total=$((total + one))
  done
  echo "$total"
}
# node_cli I ARGS...: redis-cli on node I.
node_cli() {
  local var=DLOCK_TEST_NODE_CLI_$1
  shift
  "${!var}" "$@"
}
