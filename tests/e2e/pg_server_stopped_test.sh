#!/usr/bin/env bash
# PostgreSQL: the server stopped under a running job. A fast shutdown
# terminates every session, an immediate one kills them: either way the
# advisory lock is gone, so the job must be stopped and dlock must exit 76
# (one line) within --ttl of the stop. While the server is down a run exits
# 69. After a start the lock is free, and fences keep increasing across the
# restart (the transaction id survives it).
SCENARIO="postgres: server stopped under a running job"
. "$(dirname "$0")/lib.sh"
use_postgres

name=x
fence_of_run() { "${DL[@]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE"' </dev/null; }

first=$(fence_of_run) || fail "a first run of $name failed"
[[ $first =~ ^[0-9]+$ ]] || fail "the first run's DLOCK_FENCE is '$first'"

# stopped_under_job HOW STOP...: a job under --ttl 2s, then STOP (in the
# background: a fast shutdown waits for a checkpoint, and the job is watched
# meanwhile).
stopped_under_job() {
  local how=$1 since stopper
  shift
  start_job "$name" --ttl 2s
  is_held "$name" || fail "status $name: not held while the job runs"
  since=$(now_ms)
  "$@" &
  stopper=$!
  track "$stopper"
  check_job_stopped "$since" 2000 "$how"
  wait_exit "$stopper" 30
  [ "$rc" = 0 ] || fail "could not stop the server ($how)"
}

stopped_under_job "a fast shutdown of the server" "$DLOCK_TEST_PG_STOP"

started=$(now_ms)
capture "${DL[@]}" --connect-timeout 1s run y -- touch "$tmpdir/ran"
elapsed=$(($(now_ms) - started))
[ "$rc" = 69 ] || fail "run while the server is down exited $rc, expected 69; stderr: $err"
assert_one_line_message "run while the server is down" "$err"
[ ! -e "$tmpdir/ran" ] || fail "the job ran while the server was down"
[ "$elapsed" -lt 3000 ] || fail "run while the server is down took ${elapsed} ms to fail (--connect-timeout 1s)"

"$DLOCK_TEST_PG_START" || fail "could not start the server again"
capture "${DL[@]}" status "$name"
[ "$rc" = 3 ] || fail "status $name after the restart exited $rc, expected 3 (free): $out $err"
second=$(fence_of_run) || fail "run $name after the restart failed"
[ "$second" -gt "$first" ] || fail "the fence after a restart ($second) is not greater than the one before ($first)"

stopped_under_job "an immediate shutdown of the server" "$DLOCK_TEST_PG_STOP" --immediate
"$DLOCK_TEST_PG_START" || fail "could not start the server again after the immediate shutdown"
third=$(fence_of_run) || fail "run $name after the immediate shutdown failed"
[ "$third" -gt "$second" ] || fail "the fence after a crash restart ($third) is not greater than the one before ($second)"
pass
