#!/usr/bin/env bash
# --wait: a waiter starts its child only after the holder's child has exited;
# a short --wait gives up with 75 on time.
SCENARIO="--wait hand-over"
. "$(dirname "$0")/lib.sh"

order=$tmpdir/order
mkfifo "$tmpdir/go"
# The holder, after being told to finish, lingers a little before it records
# its end, so that a waiter started too early would be seen.
"${DL[@]}" run w -- sh -c 'echo $DLOCK_FENCE >"$1/holder.fence"; echo holder-start >>"$1/order"; echo $$ >"$1/holder.pid"
read x <"$1/go"; sleep 0.3; echo holder-end >>"$1/order"' sh "$tmpdir" </dev/null 2>"$tmpdir/holder.err" &
holder=$!
track "$holder"
wait_until test -s "$tmpdir/holder.pid" || fail "the holder did not start"

"${DL[@]}" run w --wait 10s -- sh -c 'echo waiter-start >>"$1/order"; echo $DLOCK_FENCE >"$1/waiter.fence"' sh "$tmpdir" \
  </dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter w || fail "the waiter never showed up as waiting (status waiters); stderr: $(cat "$tmpdir/waiter.err")"
is_alive "$waiter" || fail "the waiter ended while the lock was held"
[ "$(cat "$order")" = holder-start ] || fail "the waiter ran while the lock was held: $(cat "$order")"

timeout 5 sh -c 'echo go >"$1"' x "$tmpdir/go" || fail "could not tell the holder to finish"
wait_exit "$holder"
[ "$rc" = 0 ] || fail "the holder exited $rc; stderr: $(cat "$tmpdir/holder.err")"
wait_exit "$waiter" 10
[ "$rc" = 0 ] || fail "the waiter exited $rc, expected 0; stderr: $(cat "$tmpdir/waiter.err")"
expected=$'holder-start\nholder-end\nwaiter-start'
[ "$(cat "$order")" = "$expected" ] || fail "wrong order of events: $(tr '\n' ' ' <"$order") (expected: holder-start holder-end waiter-start)"
python3 -c 'import sys; a, b = (int(open(f).read()) for f in sys.argv[1:]); sys.exit(0 if b > a else 1)' \
  "$tmpdir/holder.fence" "$tmpdir/waiter.fence" ||
  fail "the waiter's fence $(cat "$tmpdir/waiter.fence") is not greater than the holder's $(cat "$tmpdir/holder.fence")"

# A waiter with a short --wait gives up on time.
start_holder h w
started=$(now_ms)
capture "${DL[@]}" run w --wait 300ms -- touch "$tmpdir/ran"
elapsed=$(($(now_ms) - started))
[ "$rc" = 75 ] || fail "run --wait 300ms on a held lock exited $rc, expected 75; stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "run --wait 300ms ran its command although the lock stayed held"
[ "$elapsed" -ge 250 ] || fail "run --wait 300ms gave up after only ${elapsed} ms"
[ "$elapsed" -lt 2000 ] || fail "run --wait 300ms took ${elapsed} ms to give up"
assert_one_line_message "busy after --wait" "$err"
[ "$(lock_waiters w)" = 0 ] || fail "the waiter that gave up is still listed as waiting"

# -w as the short form, with a duration in fractional seconds.
started=$(now_ms)
capture "${DL[@]}" run w -w 0.2 -- touch "$tmpdir/ran"
elapsed=$(($(now_ms) - started))
[ "$rc" = 75 ] || fail "run -w 0.2 on a held lock exited $rc, expected 75; stderr: $err"
[ "$elapsed" -ge 150 ] && [ "$elapsed" -lt 2000 ] || fail "run -w 0.2 gave up after ${elapsed} ms"

release_holder h
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "holder exited $rc"
pass
