#!/usr/bin/env bash
# dlock and its job frozen (SIGSTOP, like a VM or GC pause) for longer than
# the lease: on resuming, dlock must not renew its way back into the lock; it
# stops the job at once and exits 76 with a message naming the cause.
SCENARIO="a pause longer than the lease stops the job"
. "$(dirname "$0")/lib.sh"

"${DL[@]}" run p --ttl 1s --kill-after 5s -- sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' sh "$tmpdir/child.pid" \
  </dev/null >/dev/null 2>"$tmpdir/err" &
dlock_pid=$!
track "$dlock_pid"
wait_until test -s "$tmpdir/child.pid" || fail "the job did not start; stderr: $(cat "$tmpdir/err")"
child=$(cat "$tmpdir/child.pid")
track "$child"
wait_until grep -qx sleep "/proc/$child/comm" || fail "the job never became 'sleep'"
# Freeze only once the heartbeat is running (it has renewed at least once),
# so that on resuming it races the deadline check.
renewed_once() {
  local record
  record=$(cat "$tmpdir/locks/dlock/p.lock" 2>/dev/null) || return 1
  local since renewed
  since=$(grep -o '"since_ms":[0-9]*' <<<"$record" | cut -d: -f2)
  renewed=$(grep -o '"renewed_ms":[0-9]*' <<<"$record" | cut -d: -f2)
  [ -n "$since" ] && [ -n "$renewed" ] && [ $((renewed - since)) -ge 300 ]
}
wait_until renewed_once || fail "the lease was never renewed"

kill -STOP "$dlock_pid"
kill -STOP -- "-$child"
# The pause itself is what is under test: it has to outlast the 1 s lease.
sleep 1.5
resumed=$(now_ms)
kill -CONT "$dlock_pid"
kill -CONT -- "-$child" 2>/dev/null
wait_exit "$dlock_pid" 3
elapsed=$(($(now_ms) - resumed))
[ "$rc" = 76 ] || fail "dlock exited $rc after a pause longer than its lease, expected 76; stderr: $(cat "$tmpdir/err")"
[ "$elapsed" -lt 500 ] || fail "dlock took ${elapsed} ms after resuming to stop the job (limit 500 ms)"
wait_until -t 5 is_gone "$child" || fail "the job (pid $child) outlived dlock"
assert_one_line_message "stderr after the pause" "$(cat "$tmpdir/err")"
grep -q "lease" "$tmpdir/err" || fail "the message does not name the cause: $(cat "$tmpdir/err")"
pass
