#!/usr/bin/env bash
# kill -9 of dlock: the child dies with it (PR_SET_PDEATHSIG) and the lock is free.
SCENARIO="kill -9 frees the lock"
. "$(dirname "$0")/lib.sh"

start_job k
dlock_pid=$JOB_DLOCK_PID child=$JOB_PID wrapper=$JOB_WRAPPER
is_held k || fail "lock k is not held while its job runs"

kill -KILL "$dlock_pid"
wait_exit "$wrapper" 5
rc=$(cat "$tmpdir/dlock.rc")
[ "$rc" = 137 ] || fail "kill -9 of dlock: its status was $rc, expected 137"

wait_until -t 5 is_gone "$child" || fail "the child (pid $child, state $(proc_state "$child")) survived kill -9 of dlock"

started=$(now_ms)
capture "${DL[@]}" run k -- true
elapsed=$(($(now_ms) - started))
[ "$rc" = 0 ] || fail "after kill -9 of the holder, run k -- true exited $rc, expected 0; stderr: $err"
[ "$elapsed" -lt 2000 ] || fail "run k -- true took ${elapsed} ms after the holder was killed"
pass
