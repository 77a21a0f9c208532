#!/usr/bin/env bash
# PostgreSQL: the lock is the session's. When an administrator ends that
# session (pg_terminate_backend of the backend whose application_name is
# dlock:NAME), the advisory lock is gone at once, so the job must be gone
# at once too, long before --ttl: within 1 s of the terminate even with
# --ttl 30s, and dlock exits 76 with one line naming the cause. The lock is
# then free for the next run, whose fence is greater.
SCENARIO="postgres: the session terminated stops the job at once"
. "$(dirname "$0")/lib.sh"
use_postgres

name=x
key=$(pg_key "$name") || fail "could not compute the key of $name"

before=$("${DL[@]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE"' </dev/null) || fail "a first run of $name failed"
[[ $before =~ ^[0-9]+$ ]] || fail "the first run's DLOCK_FENCE is '$before'"

start_job "$name" --ttl 30s
is_held "$name" || fail "status $name: not held while the job runs"
one_session() { [ "$(pg_sessions "$1")" = 1 ]; }
wait_until -t 2 one_session "$name" ||
  fail "there is not exactly one session with application_name 'dlock:$name': $(pg_sql "SELECT pid, application_name FROM pg_stat_activity WHERE backend_type = 'client backend'")"
session=$(pg_sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'dlock:$name'")
holder=$(pg_holder_pid "$key")
[ -n "$holder" ] || fail "pg_locks shows no granted advisory lock on the key of $name ($key): $(pg_sql "SELECT * FROM pg_locks WHERE locktype = 'advisory'")"
[ "$holder" = "$session" ] || fail "the advisory lock on $key is held by backend $holder, not by the session 'dlock:$name' ($session)"

since=$(now_ms)
terminated=$(pg_sql "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'dlock:$name') t WHERE ok")
[ "$terminated" = 1 ] || fail "pg_terminate_backend ended $terminated sessions, expected 1"
check_job_stopped "$since" 3000 "pg_terminate_backend of its session (--ttl 30s; the next renewal 10 s away)"
grep -qiE 'session|terminat|connection' "$tmpdir/job.err" ||
  fail "the message does not name the cause (the session ended): $(cat "$tmpdir/job.err")"

[ -z "$(pg_holder_pid "$key")" ] || fail "the advisory lock on $key is still held after the terminate"
capture "${DL[@]}" status "$name"
[ "$rc" = 3 ] || fail "status $name after the terminate exited $rc, expected 3 (free): $out $err"
capture "${DL[@]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run $name after the terminate exited $rc; stderr: $err"
[ "$out" -gt "$before" ] || fail "the fence after the terminate ($out) is not greater than an earlier one ($before)"
pass
