#!/usr/bin/env bash
# kill -9 of a ZooKeeper holder: its job dies with it (PR_SET_PDEATHSIG), and
# since nobody closes its session, its ephemeral node lives on until the
# server expires the session: a waiting `dlock run --wait` gets the lock
# about one session timeout T later, woken by its watch. Not sooner than the
# server can have expired the session (its last request was at most T/3
# before the kill, as dlock talks to the server every T/3), and not much
# later. T is --ttl clamped to the server's bounds, as dlock -v reports.
SCENARIO="zookeeper: kill -9 frees the lock after the session timeout"
. "$(dirname "$0")/lib.sh"
use_zookeeper

name=k9

# The session timeout T is --ttl clamped to what the server allows (here
# minSessionTimeout = 2 ticks, maxSessionTimeout = 60 s); -v reports it.
# ttl_case TTL EXPECTED_MS
ttl_case() {
  "${DL[@]}" -v run "ttl.$1" --ttl "$1" -- true </dev/null 2>"$tmpdir/ttl.err" ||
    fail "run --ttl $1 failed: $(cat "$tmpdir/ttl.err")"
  [ "$(zk_session_timeout_ms "$tmpdir/ttl.err")" = "$2" ] ||
    fail "--ttl $1 gave a session timeout of $(zk_session_timeout_ms "$tmpdir/ttl.err") ms, expected $2 ms: $(head -1 "$tmpdir/ttl.err")"
}
ttl_case 90s 60000
ttl_case 100ms $((2 * DLOCK_TEST_ZK_TICK_MS))
ttl_case 5s 5000
start_job "$name" -v --ttl 2s
dlock_pid=$JOB_DLOCK_PID child=$JOB_PID wrapper=$JOB_WRAPPER
holder_fence=$(cat "$tmpdir/job.pid.fence")
ttl_ms=$(zk_session_timeout_ms "$tmpdir/job.err")
[ "$ttl_ms" = 2000 ] || fail "--ttl 2s gave a session timeout of $ttl_ms ms, expected 2000 (the server allows $((2 * DLOCK_TEST_ZK_TICK_MS)) ms to 60 s)"
is_held "$name" || fail "the lock is not held while the job runs"

# A waiter, queued behind the holder's node, writes the moment it got the lock.
"${DL[@]}" -v run "$name" --wait 30s -- sh -c 'date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1"; echo "$DLOCK_FENCE" >"$1.fence"' \
  sh "$tmpdir/got" </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter "$name" || fail "the waiter never queued; stderr: $(cat "$tmpdir/waiter.err")"

killed=$(now_ms)
kill -KILL "$dlock_pid"
wait_exit "$wrapper" 5
rc=$(cat "$tmpdir/dlock.rc")
[ "$rc" = 137 ] || fail "kill -9 of dlock: its status was $rc, expected 137"
wait_until -t 5 is_gone "$child" || fail "the job (pid $child, state $(proc_state "$child")) survived kill -9 of dlock"

wait_until -t $((ttl_ms / 1000 + 5)) test -s "$tmpdir/got" ||
  fail "the waiter did not get the lock within $((ttl_ms / 1000 + 5)) s after the kill; stderr: $(cat "$tmpdir/waiter.err")"
elapsed=$(($(cat "$tmpdir/got") - killed))
echo "the waiter got the lock ${elapsed} ms after the kill (session timeout ${ttl_ms} ms)"
earliest=$((ttl_ms * 2 / 3 - DLOCK_TEST_ZK_TICK_MS))
[ "$elapsed" -ge "$earliest" ] ||
  fail "the waiter got the lock ${elapsed} ms after the kill: before the session (timeout ${ttl_ms} ms) can have expired (${earliest} ms)"
[ "$elapsed" -le $((ttl_ms + 3000)) ] ||
  fail "the waiter got the lock only ${elapsed} ms after the kill (session timeout ${ttl_ms} ms)"
wait_exit "$waiter" 5
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(zk_wakeups "$tmpdir/waiter.err")" = 1 ] ||
  fail "the waiter was woken $(zk_wakeups "$tmpdir/waiter.err") times, expected once (by the expired node's deletion)"
[ "$(cat "$tmpdir/got.fence")" -gt "$holder_fence" ] ||
  fail "the waiter's fence $(cat "$tmpdir/got.fence") is not greater than the killed holder's, $holder_fence"
is_free "$name" || fail "the lock is still held after the waiter's job ended"
pass
