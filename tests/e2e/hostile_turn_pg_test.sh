#!/usr/bin/env bash
# As hostile_turn_redis_test.sh, for PostgreSQL: a proxy (tests/hostile/
# fake_server.py turn-pg-MODE) in front of the real server turns hostile
# (garbage, a drip, a 2 GiB ErrorResponse with an endless stream, a
# truncated message and a close, the end of another query's answer) once a
# renewal went through. The lock lives as long as the server's session,
# which the proxy keeps open 2 s (the ttl: the server's keepalives would
# end it then) after dlock's connection to it closed. The `dlock run --ttl
# 2s` through the proxy must stop its job and exit 76 with one line within
# 2 s of the turn, under 32 MiB, and a `dlock run --wait` against the
# server itself must not start its job while the first one still runs.
# (Before: the endless ErrorResponse, which libpq buffers whole, took
# dlock past 32 MiB.) Run under scripts/with-postgres.
SCENARIO="hostile servers: a running job outlives no PostgreSQL session behind a proxy turned hostile"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
use_postgres

# The session's last statement started: a renewal moves it.
_pg_query_start() {
  printf '%s\n' "SELECT query_start FROM pg_stat_activity WHERE application_name = 'dlock:' || :'name';" |
    "$PSQL" -v name="$1"
}
_pg_query_moved() { [ "$(_pg_query_start "$1")" != "$2" ]; }
wait_renewal() {
  local before
  before=$(_pg_query_start "$1")
  [ -n "$before" ] || fail "no session of dlock:$1 on the server"
  wait_until -t 3 _pg_query_moved "$1" "$before" || fail "no renewal of $1 reached the server within 3 s"
}

for mode in ${HOSTILE_CASES:-garbage drip huge truncated other}; do
  start_turn_proxy pg "$mode" "$DLOCK_TEST_PG_PORT" 2000
  check_turn "postgres, turned $mode" 2000 "postgresql://dlock@127.0.0.1:$PROXY_PORT/dlock" "$DLOCK_TEST_PG_URL" "turn-$mode"
  kill "$PROXY_PID" 2>/dev/null
done
pass
