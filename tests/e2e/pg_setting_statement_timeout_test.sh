#!/usr/bin/env bash
# PostgreSQL: ALTER DATABASE dlock SET statement_timeout = '500ms' must not cancel a
# statement of dlock's: a wait longer than it goes on.
# See pg_session_settings_lib.sh for what is checked. Then a wait that
# someone cancels on the server (pg_cancel_backend, what statement_timeout
# would do) must look neither like a held lock nor like a loss: 69 with a
# message that says so, the job not run, no session or request left, the
# holder untouched.
SCENARIO="postgres: the database's statement_timeout does not cancel dlock's statements"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_session_settings_lib.sh"
use_postgres
check_session_setting DATABASE statement_timeout 500ms

key=$(pg_key held)
start_holder h held --ttl 30s
holder_backend=$(pg_holder_pid "$key")
rm -f "$tmpdir/ran"
"${DL[@]}" run held --wait 30s -- touch "$tmpdir/ran" </dev/null >/dev/null 2>"$tmpdir/cancelled.err" &
waiter=$!
track "$waiter"
wait_until _waiting "$key" 1 || fail "the waiter never waited in pg_advisory_lock"
pg_sql "SELECT pg_cancel_backend(pid) FROM pg_locks WHERE $_pg_key_match = $key AND NOT granted" >/dev/null
wait_exit "$waiter" 5
[ "$rc" = 69 ] || fail "a wait cancelled with pg_cancel_backend exited $rc, expected 69; stderr: $(cat "$tmpdir/cancelled.err")"
assert_one_line_message "a cancelled wait" "$(cat "$tmpdir/cancelled.err")"
grep -qi cancel "$tmpdir/cancelled.err" || fail "the message does not say the wait was cancelled: $(cat "$tmpdir/cancelled.err")"
[ ! -e "$tmpdir/ran" ] || fail "the cancelled waiter ran its job"
wait_until -t 2 _waiting "$key" 0 || fail "the cancelled waiter left a request behind"
[ "$(pg_sessions held)" = 1 ] || fail "$(pg_sessions held) sessions named dlock:held after the cancel, expected the holder's alone"
[ "$(pg_holder_pid "$key")" = "$holder_backend" ] || fail "the holder's session no longer holds the lock after the waiter's cancel"
release_holder h
pass
