#!/usr/bin/env bash
# dlock doctor on PostgreSQL: a plain server is all ok (no pooler, the
# primary, no timeout shorter than T); the role's idle_session_timeout and
# the database's idle_in_transaction_session_timeout and tcp keepalives set
# shorter than T are found (warnings: dlock's own sessions turn them off,
# other clients' do not), and the password is never printed.
# Run under scripts/with-postgres.
SCENARIO="doctor: PostgreSQL session timeouts shorter than T"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/doctor_lib.sh"
use_postgres

doctor --ttl 10s
expect_all_ok
expect_check postgres.pooler ok
expect_check postgres.standby ok "primary"

pg_sql "ALTER ROLE dlock SET idle_session_timeout = '1s'" >/dev/null
pg_sql "ALTER DATABASE dlock SET idle_in_transaction_session_timeout = '2s'" >/dev/null
pg_sql "ALTER DATABASE dlock SET tcp_keepalives_idle = 1" >/dev/null
pg_sql "ALTER DATABASE dlock SET tcp_keepalives_interval = 1" >/dev/null
pg_sql "ALTER DATABASE dlock SET tcp_keepalives_count = 1" >/dev/null
doctor --ttl 10s
expect_rc 0 "timeouts shorter than T (warnings)"
expect_check postgres.idle_session_timeout warning "idle_session_timeout = 1s"
expect_check postgres.idle_in_transaction_session_timeout warning "= 2s"
expect_check postgres.tcp_keepalives warning "1/1/1"
expect_text_line postgres.idle_session_timeout warning
case "$out$err" in *"$DLOCK_TEST_PG_PASSWORD"*) fail "doctor printed the password: $out $err" ;; esac
# Longer than T: nothing to say.
doctor --ttl 500ms
expect_check postgres.idle_session_timeout ok
pg_sql "ALTER ROLE dlock RESET ALL" >/dev/null
pg_sql "ALTER DATABASE dlock RESET ALL" >/dev/null

capture "$DLOCK_BIN" -b "postgresql://dlock@127.0.0.1:1/dlock" --connect-timeout 1s doctor
[ "$rc" = 69 ] || fail "doctor with no server exited $rc, expected 69; stderr: $err"
assert_one_line_message "doctor with no server" "$err"
pass
