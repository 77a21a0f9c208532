#!/usr/bin/env bash
# A signal to a dlock that waits for a lock ends the wait at once (128+N) and
# leaves nothing behind: the holder keeps the lock, which is free after it.
SCENARIO="signal while waiting"
. "$(dirname "$0")/lib.sh"

start_holder h w
files_before=$(cd "$LOCKDIR" && find . | sort)

"${DL[@]}" run w --wait forever -- touch "$tmpdir/ran" </dev/null >"$tmpdir/waiter.out" 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter w || fail "the second run never showed up as a waiter; stderr: $(cat "$tmpdir/waiter.err")"

started=$(now_ms)
kill -TERM "$waiter"
wait_exit "$waiter" 5
elapsed=$(($(now_ms) - started))
[ "$rc" = 143 ] || fail "SIGTERM to a waiting dlock: exit $rc, expected 143; stderr: $(cat "$tmpdir/waiter.err")"
[ "$elapsed" -lt 1000 ] || fail "the waiting dlock took ${elapsed} ms to end on SIGTERM"
[ ! -e "$tmpdir/ran" ] || fail "the interrupted waiter ran its command"

# Nothing left behind: same holder, no waiter, no new files.
holder=$("${DL[@]}" status w --json | json 'd["holder"]["pid"]')
[ "$holder" = "$HOLDER_PID" ] || fail "after the interrupted wait, status w names holder pid $holder, expected $HOLDER_PID"
[ "$(lock_waiters w)" = 0 ] || fail "the interrupted waiter is still counted as waiting"
files_after=$(cd "$LOCKDIR" && find . | sort)
[ "$files_before" = "$files_after" ] || fail "the interrupted waiter left files: $files_after"
is_alive "$CHILD_PID" || fail "the holder's child died"

# The same with SIGINT and a bounded wait.
"${DL[@]}" run w --wait 20s -- touch "$tmpdir/ran" </dev/null 2>"$tmpdir/waiter2.err" &
waiter=$!
track "$waiter"
wait_until has_waiter w || fail "the third run never showed up as a waiter"
kill -INT "$waiter"
wait_exit "$waiter" 5
[ "$rc" = 130 ] || fail "SIGINT to a waiting dlock: exit $rc, expected 130; stderr: $(cat "$tmpdir/waiter2.err")"
[ ! -e "$tmpdir/ran" ] || fail "the interrupted waiter ran its command"

# The holder still holds the lock until it ends; then it is free.
is_held w || fail "lock w is not held any more although its holder still runs"
release_holder h
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the holder exited $rc; stderr: $(cat "$tmpdir/h.err")"
capture "${DL[@]}" status w
[ "$rc" = 3 ] || fail "after the holder ended, status w exited $rc, expected 3 (free): $out"
capture "${DL[@]}" run w -- true
[ "$rc" = 0 ] || fail "after the holder ended, run w -- true exited $rc; stderr: $err"
pass
