# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The postgres adapter (lib.sh sources it): the PostgreSQL server that
# scripts/with-postgres started for the test (DLOCK_TEST_PG_*).
#
#   use_postgres [URL]     switch the test to it: BACKEND, DL and
#                          DLOCK_BACKEND name URL (default $DLOCK_TEST_PG_URL,
#                          which holds no password), and DLOCK_PASSWORD is the
#                          dlock role's password. Fails, never skips, when the
#                          test is not run under with-postgres or dlock lacks
#                          the postgres backend. Sets PSQL ("$PSQL" -c 'SQL':
#                          psql as the superuser, unaligned tuples only, see
#                          scripts/with-postgres). Holders of locks on URL
#                          (acquire's keepers) are killed on exit
#   pg_key NAME [NS]       the advisory lock key of NAME in NS (default
#                          dlock), by the documented SQL: the first 8 bytes
#                          of sha256('NS NAME') as a signed bigint
#   pg_holder_pid KEY      backend pid of the session holding KEY (empty
#                          if none)
#   pg_waiting KEY         how many ungranted requests for KEY there are
#   pg_sessions NAME       how many sessions have application_name
#                          'dlock:NAME'
#   pg_client_sessions     how many client sessions there are besides the
#                          one asking
#   pg_sql SQL             "$PSQL" -c SQL, failing the test on an error
#   start_psql_session APP a psql session that lives through the test,
#                          reading SQL from a fifo: psql_send SQL; its
#                          backend's application_name is APP and its pid
#                          $backend (psql_backend looks it up)
#   postgres_server_pids   the postmaster's pid and its children's: the
#                          server is every one of them (see server_freeze)
#   postgres_server_kill   an immediate shutdown (no checkpoint), waited for
#   postgres_server_start  start it again on its port and data
#   postgres_server_restart  a fast shutdown, then start: the data survives,
#                          sessions (and their advisory locks) do not
use_postgres() {
  use_server postgres DLOCK_TEST_PG_URL "scripts/with-postgres [options]" postgres "${1:-${DLOCK_TEST_PG_URL:-}}"
  export DLOCK_PASSWORD=$DLOCK_TEST_PG_PASSWORD
  _cleanup_backends+=("$BACKEND")
  # shellcheck disable=SC2034 # PSQL is for the caller
  PSQL=$DLOCK_TEST_PG_PSQL
}

start_psql_session() {
  _psql_app=$1
  mkfifo "$tmpdir/psql.fifo"
  "$PSQL" <"$tmpdir/psql.fifo" >"$tmpdir/psql.out" 2>&1 &
  psql_pid=$!
  track "$psql_pid"
  exec 7>"$tmpdir/psql.fifo"
  psql_send "SET application_name = '$_psql_app';"
  wait_until has_psql_backend || fail "the psql session did not show up in pg_stat_activity: $(cat "$tmpdir/psql.out")"
  backend=$(psql_backend)
}
psql_send() { printf '%s\n' "$1" >&7 || fail "psql (pid $psql_pid) no longer reads: $(cat "$tmpdir/psql.out")"; }
psql_backend() { pg_sql "SELECT pid FROM pg_stat_activity WHERE application_name = '$_psql_app'"; }
has_psql_backend() { [ -n "$(psql_backend)" ]; }

pg_sql() {
  local result
  result=$("$DLOCK_TEST_PG_PSQL" -c "$1" 2>&1) || fail "psql failed: $1: $result"
  printf '%s\n' "$result"
}

pg_key() {
  printf '%s\n' "SELECT ('x' || left(encode(sha256(convert_to(:'ns' || ' ' || :'name', 'UTF8')), 'hex'), 16))::bit(64)::bigint;" |
    "$DLOCK_TEST_PG_PSQL" -v ns="${2:-dlock}" -v name="$1"
}

# The advisory lock on a bigint key: classid holds its high 32 bits, objid
# its low 32 bits, objsubid is 1.
_pg_key_match="locktype = 'advisory' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint)"

pg_holder_pid() {
  "$DLOCK_TEST_PG_PSQL" -c "SELECT pid FROM pg_locks WHERE $_pg_key_match = $1 AND granted LIMIT 1"
}

pg_waiting() {
  "$DLOCK_TEST_PG_PSQL" -c "SELECT count(*) FROM pg_locks WHERE $_pg_key_match = $1 AND NOT granted"
}

pg_client_sessions() {
  "$DLOCK_TEST_PG_PSQL" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
}

pg_sessions() {
  printf '%s\n' "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dlock:' || :'name';" |
    "$DLOCK_TEST_PG_PSQL" -v name="$1"
}

postgres_server_pids() {
  local postmaster
  postmaster=$(cat "$DLOCK_TEST_PG_PIDFILE")
  echo "$postmaster" $(pgrep -P "$postmaster")
}
postgres_server_kill() { run_server_script "stop the PostgreSQL server" "$DLOCK_TEST_PG_STOP" --immediate; }
postgres_server_start() { run_server_script "start the PostgreSQL server" "$DLOCK_TEST_PG_START"; }
postgres_server_restart() { run_server_script "restart the PostgreSQL server" "$DLOCK_TEST_PG_RESTART"; }

# The queue of a semaphore's waiters (checks/semaphore_queue.sh): the first
# waiter holds the key of 'NS NAME queue' and LISTENs, the others wait for
# that key server-side; nobody waits on a slot's key (a waiter that did
# would count among those that look at the slots).
postgres_sem_waiting() {
  local k queue front
  queue=$(pg_key "$1 queue")
  front=$([ -n "$(pg_holder_pid "$queue")" ] && echo 1 || echo 0)
  for ((k = 0; k < $2; k++)); do front=$((front + $(pg_waiting "$(pg_key "$1 $k")"))); done
  echo "$front $(pg_waiting "$queue")"
}
postgres_sem_slot_waited() { [ "$(pg_waiting "$(pg_key "$1 $2")")" != 0 ]; }
