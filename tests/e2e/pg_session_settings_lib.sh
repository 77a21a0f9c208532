# shellcheck shell=bash
# The core of the PostgreSQL session-settings scenarios (issue 16, point 4):
# a setting that the role or the database imposes on every new session
# (ALTER ROLE dlock SET ..., ALTER DATABASE dlock SET ...) must not end a
# dlock session, or a statement of dlock's, before the lease T. Each
# pg_setting_*_test.sh sources lib.sh, then this file, and calls
#
#   check_session_setting ROLE|DATABASE SETTING VALUE
#
# which imposes SETTING = VALUE and then checks, under scripts/with-postgres:
#   - a plain session of role dlock has the setting (else the test would
#     prove nothing);
#   - a holder with --ttl 3s keeps its one session, and its lock, across at
#     least three renewals (2 s of renewal gaps, longer than VALUE): the job
#     runs on, dlock does not exit, another run finds the lock busy (75);
#   - a bounded wait on the held lock ends busy (75), a signal ends an
#     unbounded one (143), and neither leaves a request behind;
#   - a waiter that has waited longer than VALUE gets the lock when the
#     holder's job ends, and runs its job (0).

# The psql of role dlock over TCP, as dlock connects.
_pg_as_dlock() {
  PGPASSWORD=$DLOCK_TEST_PG_PASSWORD PGCONNECT_TIMEOUT=5 psql -X -A -t -q -v ON_ERROR_STOP=1 "$DLOCK_TEST_PG_URL" "$@"
}

# _state_change PID: pg_stat_activity.state_change of backend PID, or
# "gone" when there is no such session.
_state_change() {
  local at
  at=$("$DLOCK_TEST_PG_PSQL" -c "SELECT state_change FROM pg_stat_activity WHERE pid = $1") || return 1
  printf '%s\n' "${at:-gone}"
}

# _waited_longer PID MS: backend PID waits for a lock and has done so for
# more than MS milliseconds.
_waited_longer() {
  [ "$("$DLOCK_TEST_PG_PSQL" -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock' AND now() - query_start > interval '$2 milliseconds'")" = 1 ]
}

# _waiting KEY N: exactly N requests for KEY wait.
_waiting() { [ "$(pg_waiting "$1")" = "$2" ]; }

check_session_setting() {
  local scope=$1 setting=$2 value=$3 name=held key session seen changes=0 last at deadline waiter waiter_pid
  pg_sql "ALTER $scope dlock SET $setting = '$value'" >/dev/null
  seen=$(_pg_as_dlock -c "SELECT source || ' ' || setting FROM pg_settings WHERE name = '$setting'" 2>&1)
  case $seen in
  "user "* | "database "*) ;;
  *) fail "a session of role dlock does not have ALTER $scope's $setting = '$value' (source, setting: $seen): the test would prove nothing" ;;
  esac

  key=$(pg_key "$name") || fail "could not compute the key of $name"
  start_job "$name" --ttl 3s
  session=$(pg_holder_pid "$key")
  [ -n "$session" ] || fail "pg_locks shows no holder of $name while its job runs"
  # Three renewals (every T/3 = 1 s) seen as new state_change values of
  # the holder's session: its idle gaps add up to 2 s or more.
  last=$(_state_change "$session")
  deadline=$(($(now_ms) + 10000))
  while [ "$changes" -lt 3 ]; do
    at=$(_state_change "$session") || fail "psql failed"
    if [ "$at" = gone ]; then
      sleep 0.5
      fail "with $setting = '$value' the server ended the holder's session (pid $session) $changes renewals in: dlock exited $(cat "$tmpdir/dlock.rc" 2>/dev/null || echo '(not yet)'); stderr: $(cat "$tmpdir/job.err")"
    fi
    if [ "$at" != "$last" ]; then
      changes=$((changes + 1))
      last=$at
    fi
    [ "$(now_ms)" -lt "$deadline" ] || fail "the holder's session saw $changes renewals in 10 s (--ttl 3s renews every 1 s)"
    sleep 0.05
  done
  is_alive "$JOB_PID" || fail "with $setting = '$value' the holder's job ended; dlock's stderr: $(cat "$tmpdir/job.err")"
  is_alive "$JOB_DLOCK_PID" || fail "with $setting = '$value' the holder's dlock exited $(cat "$tmpdir/dlock.rc" 2>/dev/null); stderr: $(cat "$tmpdir/job.err")"
  [ "$(pg_holder_pid "$key")" = "$session" ] || fail "the lock is no longer held by the holder's session $session"
  capture "${DL[@]}" run "$name" -- true
  [ "$rc" = 75 ] || fail "with $setting = '$value' a second run of the held lock exited $rc, expected 75; stderr: $err"

  capture "${DL[@]}" run "$name" --wait 1s -- touch "$tmpdir/ran"
  [ "$rc" = 75 ] || fail "with $setting = '$value' run --wait 1s on the held lock exited $rc, expected 75; stderr: $err"
  [ ! -e "$tmpdir/ran" ] || fail "run --wait 1s ran its job on a held lock"
  [ "$(pg_waiting "$key")" = 0 ] || fail "run --wait 1s left a request for the lock behind"

  "${DL[@]}" run "$name" --wait forever -- touch "$tmpdir/ran" </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
  waiter=$!
  track "$waiter"
  wait_until _waiting "$key" 1 || fail "run --wait forever never waited in pg_advisory_lock; stderr: $(cat "$tmpdir/waiter.err")"
  kill -TERM "$waiter"
  wait_exit "$waiter" 5
  [ "$rc" = 143 ] || fail "with $setting = '$value' SIGTERM to a waiting run gave exit $rc, expected 143; stderr: $(cat "$tmpdir/waiter.err")"
  [ ! -e "$tmpdir/ran" ] || fail "the waiter ended by SIGTERM ran its job"
  wait_until -t 2 _waiting "$key" 0 || fail "the waiter ended by SIGTERM left a request for the lock behind"

  "${DL[@]}" run "$name" --wait 30s -- touch "$tmpdir/ran" </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
  waiter=$!
  track "$waiter"
  wait_until _waiting "$key" 1 || fail "run --wait 30s never waited in pg_advisory_lock; stderr: $(cat "$tmpdir/waiter.err")"
  waiter_pid=$("$DLOCK_TEST_PG_PSQL" -c "SELECT pid FROM pg_locks WHERE $_pg_key_match = $key AND NOT granted LIMIT 1")
  wait_until -t 5 _waited_longer "$waiter_pid" 1500 ||
    fail "with $setting = '$value' the waiter's session (pid $waiter_pid) did not go on waiting for 1.5 s; its stderr: $(cat "$tmpdir/waiter.err")"
  kill -TERM "$JOB_PID"
  wait_exit "$waiter" 10
  [ "$rc" = 0 ] || fail "with $setting = '$value' the waiter that got the lock exited $rc, expected 0; stderr: $(cat "$tmpdir/waiter.err")"
  [ -e "$tmpdir/ran" ] || fail "the waiter that got the lock did not run its job"
  wait_until test -e "$tmpdir/dlock.rc" || fail "the holder's dlock did not exit after its job"
  [ "$(cat "$tmpdir/dlock.rc")" = 143 ] || fail "the holder's dlock exited $(cat "$tmpdir/dlock.rc") after its job got SIGTERM, expected 143; stderr: $(cat "$tmpdir/job.err")"
}
