#!/usr/bin/env bash
# kill -9 of dlock: the child dies with it (PR_SET_PDEATHSIG) and the lock is free.
SCENARIO="kill -9 frees the lock"
. "$(dirname "$0")/lib.sh"

# dlock runs below a subshell that reports its pid and status, so that this
# shell does not print a "Killed" job notice when dlock dies of SIGKILL.
(
  "${DL[@]}" run k -- sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' sh "$tmpdir/child.pid" \
    </dev/null >/dev/null 2>"$tmpdir/err" &
  echo $! >"$tmpdir/dlock.pid"
  wait $!
  echo $? >"$tmpdir/dlock.rc"
) 2>/dev/null &
wrapper=$!
track "$wrapper"
wait_until test -s "$tmpdir/dlock.pid" || fail "dlock did not start"
dlock_pid=$(cat "$tmpdir/dlock.pid")
track "$dlock_pid"
wait_until test -s "$tmpdir/child.pid" || fail "the child did not start; stderr: $(cat "$tmpdir/err")"
child=$(cat "$tmpdir/child.pid")
track "$child"
# Wait until the child is the sleep itself, so that we kill a settled process.
wait_until grep -qx sleep "/proc/$child/comm" || fail "the child never became 'sleep'"
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
