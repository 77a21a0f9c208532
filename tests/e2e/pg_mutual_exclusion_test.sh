#!/usr/bin/env bash
# 8 workers x 25 `dlock run --wait` of one critical section on one
# PostgreSQL lock: exactly 200 entries, never two at once, fences strictly
# increasing; afterwards no advisory lock, request or session is left.
SCENARIO="postgres: mutual exclusion"
. "$(dirname "$0")/lib.sh"
use_postgres

check_mutual_exclusion 8 25 c --wait 40s
key=$(pg_key c)
[ -z "$(pg_holder_pid "$key")" ] || fail "the advisory lock on $key is still held after the last run"
[ "$(pg_waiting "$key")" = 0 ] || fail "ungranted requests for $key are left after the last run"
no_sessions() { [ "$(pg_client_sessions)" = 0 ]; }
wait_until -t 2 no_sessions || fail "$(pg_client_sessions) client sessions are left after the last run"
pass
