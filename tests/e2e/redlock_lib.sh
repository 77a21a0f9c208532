# shellcheck shell=bash
# Helpers for the Redlock end-to-end tests, which run under
# `scripts/with-redis --nodes 5` (5 independent redis-servers). Source it
# after lib.sh:
#
#   SCENARIO="redlock ..."
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/redlock_lib.sh"
#   use_redlock
#
#   use_redlock              (backends/redlock.sh) switch BACKEND, DL and
#                            DLOCK_BACKEND to $DLOCK_TEST_REDLOCK_URL; fails
#                            (never skips) when not under with-redis --nodes
#                            or without redlock
#   NODES                    the number of nodes; QUORUM = NODES/2 + 1
#   node_cli I ARGS...       redis-cli against node I (1-based; backends/redlock.sh)
#   node_pid I               node I's current server pid
#   node_address I           127.0.0.1:PORT of node I
#   stop_node I...           SIGKILL node I and wait until it is gone
#   freeze_node I...         SIGSTOP node I (lib.sh thaws it again on exit)
#   thaw_node I...           SIGCONT node I
#   restart_node I...        start node I again on its port, empty (kills it
#                            first if it still runs, frozen or not)
#   nodes_with_key KEY       how many reachable nodes hold KEY
#   nodes_with_value KEY V   how many reachable nodes hold KEY with value V
#   has_subscriber NAME      a waiter for NAME listens on some reachable node
#                            (its own channel {dlock:NAME}:queue:ID, or an
#                            older dlock's {dlock:NAME}:released)
#   elapsed_ms START         milliseconds since START (a now_ms reading)
#   dec_gt A B               decimal A > decimal B, any size (no python: its
#                            start-up costs a quarter second here)
#   check_fence WHAT FENCE   FENCE is a 64-bit positive decimal greater than
#                            every earlier one; appends it to FENCES
#   json_value KEY TEXT      the number or string KEY of a flat JSON object
#   mark_pttl I KEY / renewed_on I KEY
#                            note KEY's PTTL on node I; then true once it has
#                            risen since the last reading (a renewal landed)

# shellcheck disable=SC2154 # tmpdir comes from lib.sh

node_pid() {
  local pid
  slurp pid "${NODE_PIDFILES[$(($1 - 1))]}"
  echo "$pid"
}
node_address() { printf '127.0.0.1:%s' "${NODE_PORTS[$(($1 - 1))]}"; }

stop_node() {
  local i pid
  for i in "$@"; do
    pid=$(node_pid "$i")
    kill -KILL "$pid" 2>/dev/null
    wait_until -t 5 is_gone "$pid" || fail "node $i (pid $pid) did not die on SIGKILL"
  done
}

freeze_node() {
  local i pid
  for i in "$@"; do
    pid=$(node_pid "$i")
    _frozen_pids+=("$pid") # lib.sh's cleanup thaws it
    kill -STOP "$pid" || fail "could not SIGSTOP node $i (pid $pid)"
    wait_until -t 5 is_stopped "$pid" ||
      fail "node $i (pid $pid) did not stop on SIGSTOP"
  done
}

is_stopped() { [ "$(proc_state "$1")" = T ]; }

thaw_node() {
  local i
  for i in "$@"; do
    kill -CONT "$(node_pid "$i")" 2>/dev/null
  done
}

restart_node() {
  local i var
  for i in "$@"; do
    var=DLOCK_TEST_NODE_RESTART_$i
    "${!var}" >"$tmpdir/restart.err" 2>&1 || fail "node $i could not be restarted: $(cat "$tmpdir/restart.err")"
    [ "$(node_cli "$i" DBSIZE)" = 0 ] || fail "node $i kept its data across the restart: the test would prove nothing"
  done
}

# Stopped nodes refuse the connection; frozen ones are not asked.
_node_answers() {
  local pid
  pid=$(node_pid "$1")
  ! is_gone "$pid" && ! is_stopped "$pid"
}

nodes_with_key() {
  local i n=0
  for ((i = 1; i <= NODES; i++)); do
    _node_answers "$i" && [ "$(node_cli "$i" EXISTS "$1" 2>/dev/null)" = 1 ] && n=$((n + 1))
  done
  echo "$n"
}

nodes_with_value() {
  local i n=0
  for ((i = 1; i <= NODES; i++)); do
    _node_answers "$i" && [ "$(node_cli "$i" GET "$1" 2>/dev/null)" = "$2" ] && n=$((n + 1))
  done
  echo "$n"
}

subscribers() {
  local i n=0 count
  for ((i = 1; i <= NODES; i++)); do
    _node_answers "$i" || continue
    count=$(node_cli "$i" PUBSUB NUMSUB "$(redis_key "$1" released)" 2>/dev/null | sed -n 2p)
    n=$((n + ${count:-0}))
    count=$(node_cli "$i" PUBSUB CHANNELS "$(redis_key "$1" queue):*" 2>/dev/null | grep -c .)
    n=$((n + ${count:-0}))
  done
  echo "$n"
}

has_subscriber() { [ "$(subscribers "$1")" -ge 1 ]; }

elapsed_ms() { echo $(($(now_ms) - $1)); }

_last_pttl=

mark_pttl() { _last_pttl=$(node_cli "$1" PTTL "$2"); }

renewed_on() {
  local p
  p=$(node_cli "$1" PTTL "$2")
  [ "$p" -gt "$_last_pttl" ] 2>/dev/null && return 0
  _last_pttl=$p
  return 1
}

dec_gt() {
  local a=$1 b=$2
  [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]] || return 1
  a=${a#"${a%%[!0]*}"} b=${b#"${b%%[!0]*}"}
  a=${a:-0} b=${b:-0}
  if [ "${#a}" != "${#b}" ]; then
    [ "${#a}" -gt "${#b}" ]
  else
    [[ $a > $b ]]
  fi
}

FENCES=()
check_fence() {
  local what=$1 fence=$2
  [[ $fence =~ ^[1-9][0-9]{0,19}$ ]] || fail "$what: fence is '$fence', not a positive decimal"
  dec_gt "$fence" 18446744073709551615 && fail "$what: fence $fence is not a 64-bit number"
  if ((${#FENCES[@]})); then
    dec_gt "$fence" "${FENCES[-1]}" ||
      fail "$what: fence $fence is not greater than the previous one, ${FENCES[-1]} (all so far: ${FENCES[*]})"
  fi
  FENCES+=("$fence")
}

json_value() {
  if [[ $2 =~ \"$1\"[[:space:]]*:[[:space:]]*(\"([^\"]*)\"|([0-9]+)) ]]; then
    printf '%s\n' "${BASH_REMATCH[2]}${BASH_REMATCH[3]}"
  else
    return 1
  fi
}
