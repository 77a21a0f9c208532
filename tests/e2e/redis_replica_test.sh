#!/usr/bin/env bash
# A read-only replica is no place for locks: run and acquire exit 69 naming
# the "read-only replica" and never run the job, not even with
# --if-unavailable run (the replica answered; so does a master out of
# memory); ping shows the role and reports the replica unhealthy. Run under scripts/with-redis --replica.
SCENARIO="redis refuses a read-only replica"
. "$(dirname "$0")/lib.sh"
[ -n "${DLOCK_TEST_REPLICA_URL:-}" ] || fail "run this test under scripts/with-redis --replica"
use_redis "$DLOCK_TEST_REPLICA_URL"
[ "$("$DLOCK_TEST_REPLICA_CLI" ROLE | head -1)" = slave ] || fail "the with-redis replica is not a replica"

capture "${DL[@]}" run on.replica -- touch "$tmpdir/ran"
[ "$rc" = 69 ] || fail "run on a replica exited $rc, expected 69; stderr: $err"
assert_one_line_message "run on a replica" "$err"
case $err in *"read-only replica"*) ;; *) fail "the message for run on a replica does not say 'read-only replica': $err" ;; esac
[ ! -e "$tmpdir/ran" ] || fail "run on a replica ran its job"

# The replica answered: someone may hold the lock on the master, so
# --if-unavailable run must not run the job unlocked (issue 34 point 3).
capture "${DL[@]}" run --if-unavailable run on.replica -- touch "$tmpdir/ran"
[ "$rc" = 69 ] || fail "run --if-unavailable run on a replica exited $rc, expected 69; stderr: $err"
assert_one_line_message "run --if-unavailable run on a replica" "$err"
case $err in *"does not apply"*) ;; *) fail "run --if-unavailable run on a replica does not say it does not apply: $err" ;; esac
[ ! -e "$tmpdir/ran" ] || fail "run --if-unavailable run on a replica ran its job without the lock"

capture "${DL[@]}" acquire on.replica --ttl 30s
[ "$rc" = 69 ] || fail "acquire on a replica exited $rc, expected 69; stderr: $err"
assert_one_line_message "acquire on a replica" "$err"
case $err in *"read-only replica"*) ;; *) fail "the message for acquire on a replica does not say 'read-only replica': $err" ;; esac
[ -z "$out" ] || fail "acquire on a replica printed a token: $out"
[ "$("$RCLI" EXISTS "$(redis_key on.replica lock)")" = 0 ] || fail "a lock key for on.replica appeared on the master"

capture "${DL[@]}" ping
[ "$rc" != 0 ] || fail "ping of a replica exited 0: a replica must be reported unhealthy; stdout: $out"
printf '%s\n%s\n' "$out" "$err" | grep -qiE 'replica|slave' || fail "ping of a replica does not show its role: $out $err"
capture "${DL[@]}" ping --json
printf '%s' "$out" | json 'd["ok"]' | grep -qx false || fail "ping --json of a replica does not say ok: false: $out"

# A master out of memory (OOM replies) answered too.
"$RCLI" CONFIG SET maxmemory-policy noeviction >/dev/null
"$RCLI" CONFIG SET maxmemory 1 >/dev/null
capture "$DLOCK_BIN" -b "$DLOCK_TEST_REDIS_URL" run --if-unavailable run on.master -- touch "$tmpdir/ran"
"$RCLI" CONFIG SET maxmemory 0 >/dev/null
[ "$rc" = 69 ] || fail "run --if-unavailable run on a master out of memory exited $rc, expected 69; stderr: $err"
assert_one_line_message "run --if-unavailable run on a master out of memory" "$err"
case $err in *OOM*"does not apply"*) ;; *) fail "run --if-unavailable run on a master out of memory: not an OOM that does not apply: $err" ;; esac
[ ! -e "$tmpdir/ran" ] || fail "run --if-unavailable run on a master out of memory ran its job without the lock"

# The master itself is fine, and ping shows it as the master.
capture "$DLOCK_BIN" -b "$DLOCK_TEST_REDIS_URL" ping
[ "$rc" = 0 ] || fail "ping of the master exited $rc; stdout: $out; stderr: $err"
printf '%s\n' "$out" | grep -qi master || fail "ping of the master does not show its role: $out"
capture "$DLOCK_BIN" -b "$DLOCK_TEST_REDIS_URL" run on.master -- true
[ "$rc" = 0 ] || fail "run on the master exited $rc; stderr: $err"
pass
