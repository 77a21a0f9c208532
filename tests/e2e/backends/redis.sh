# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The redis adapter (lib.sh sources it): the single Redis server that
# scripts/with-redis started for the test (DLOCK_TEST_REDIS_*).
#
#   use_redis [URL]            switch the test to that server: BACKEND, DL and
#                              DLOCK_BACKEND name URL (default
#                              $DLOCK_TEST_REDIS_URL); RCLI is the redis-cli
#                              wrapper of that server. Fails, never skips,
#                              when the test is not run under with-redis or
#                              dlock lacks the redis backend
#   redis_key NAME PART [NS]   the server-side key of a lock: {NS:NAME}:PART
#   wait_renewed KEY           wait (3 s) for a renewal of KEY's lease to land
#   redis_server_pids          the server's pid       (see server_freeze)
#   redis_server_kill          SIGKILL it; its data is gone (no persistence)
#   redis_server_start         start it again on its port, empty
#   redis_server_restart       both

use_redis() {
  use_server redis DLOCK_TEST_REDIS_URL "scripts/with-redis [options]" redis "${1:-${DLOCK_TEST_REDIS_URL:-}}"
  # shellcheck disable=SC2034 # RCLI is for the caller
  RCLI=$DLOCK_TEST_REDIS_CLI
}

redis_key() { printf '{%s:%s}:%s' "${3:-dlock}" "$1" "$2"; }

# wait_renewed KEY: (after use_redis) waits up to 3 s until a renewal of the
# lease on KEY lands (its PTTL rises between two readings); fails if none does.
wait_renewed() {
  _redis_pttl=$("$RCLI" PTTL "$1")
  wait_until -t 3 _redis_pttl_rose "$1" || fail "the lease was never renewed (PTTL now $_redis_pttl)"
}

_redis_pttl_rose() {
  local p
  p=$("$RCLI" PTTL "$1")
  [ "$p" -gt "$_redis_pttl" ] 2>/dev/null && return 0
  _redis_pttl=$p
  return 1
}

redis_server_pids() { cat "$DLOCK_TEST_REDIS_PIDFILE"; }
redis_server_kill() { kill_pid "$(redis_server_pids)" "the Redis server"; }
# with-redis's restart script kills what still runs, then starts anew.
redis_server_start() { run_server_script "start the Redis server" "$DLOCK_TEST_REDIS_RESTART"; }
redis_server_restart() { run_server_script "restart the Redis server" "$DLOCK_TEST_REDIS_RESTART"; }

# The waiters' queue's cost (checks/waiter_queue.sh): every command the
# server ran since the reset but INFO and CONFIG.
redis_queue_reset_stats() { "$RCLI" CONFIG RESETSTAT >/dev/null; }
redis_queue_commands() { "$RCLI" INFO commandstats | _redis_count_commands; }
_redis_count_commands() {
  tr -d '\r' | awk -F'[:=,]' '
    /^cmdstat_/ { name = $1; sub("cmdstat_", "", name); if (name != "info" && name !~ /^config/) total += $3 }
    END { printf "%d\n", total }'
}
