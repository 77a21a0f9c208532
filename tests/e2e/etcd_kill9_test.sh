#!/usr/bin/env bash
# kill -9 of an etcd holder (`dlock run --ttl 1s`): its job dies with it
# (PR_SET_PDEATHSIG), and since nobody revokes its lease, its key lives on
# until etcd expires the lease: a waiting `dlock run --wait` gets the lock
# about one lease T later, woken by its watch on the holder's key. Not sooner
# than the lease can have expired (T after its last keep-alive landed: the
# kill comes right after one), and not much later (etcd's lessor looks for
# expired leases every 500 ms).
SCENARIO="etcd: kill -9 frees the lock when the lease expires"
. "$(dirname "$0")/lib.sh"
use_etcd

name=k9
ttl_ms=1000
start_job "$name" --ttl 1s
dlock_pid=$JOB_DLOCK_PID child=$JOB_PID wrapper=$JOB_WRAPPER
holder_fence=$(cat "$tmpdir/job.pid.fence")
lease=$(etcd_keys "dlock/$name/" | json 'd[0]["lease"]')
granted=$("$ETCDCTL" lease timetolive "$lease" -w json | json 'd["granted-ttl"]')
[ "$granted" = 1 ] || fail "--ttl 1s gave the lock's lease a TTL of $granted s, expected 1"

# A waiter, queued behind the holder's key, writes the moment it got the lock.
# Its own lease (30 s) needs no keep-alive during the test, so the one
# etcd_wait_renewed sees below is the holder's.
"${DL[@]}" run "$name" --wait 30s --ttl 30s -- sh -c 'date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1"; echo "$DLOCK_FENCE" >"$1.fence"' \
  sh "$tmpdir/got" </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter "$name" || fail "the waiter never queued; stderr: $(cat "$tmpdir/waiter.err")"
# The holder keeps its lease alive meanwhile: kill it right after a
# keep-alive landed, so that the lease has (nearly) its full T left.
etcd_wait_renewed
is_alive "$dlock_pid" || fail "the holder ended before the kill; stderr: $(cat "$tmpdir/job.err")"

killed=$(now_ms)
kill -KILL "$dlock_pid"
wait_exit "$wrapper" 5
rc=$(cat "$tmpdir/dlock.rc")
[ "$rc" = 137 ] || fail "kill -9 of dlock: its status was $rc, expected 137"
wait_until -t 5 is_gone "$child" || fail "the job (pid $child, state $(proc_state "$child")) survived kill -9 of dlock"

wait_until -t 5 test -s "$tmpdir/got" ||
  fail "the waiter did not get the lock within 5 s after the kill; stderr: $(cat "$tmpdir/waiter.err"); keys: $(etcd_keys "dlock/$name/")"
elapsed=$(($(cat "$tmpdir/got") - killed))
since_renewed=$(($(cat "$tmpdir/got") - ETCD_RENEWED_AFTER))
echo "the waiter got the lock ${elapsed} ms after the kill, ${since_renewed} ms after the holder's last keep-alive (lease ${ttl_ms} ms)"
# The holder's last keep-alive landed after ETCD_RENEWED_AFTER: its lease
# ran until then + T at least.
[ "$since_renewed" -ge "$ttl_ms" ] ||
  fail "the waiter got the lock ${since_renewed} ms after the holder's last keep-alive: before its ${ttl_ms} ms lease can have expired"
[ "$elapsed" -le $((ttl_ms + 1500)) ] ||
  fail "the waiter got the lock only ${elapsed} ms after the kill (lease ${ttl_ms} ms)"
wait_exit "$waiter" 5
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(cat "$tmpdir/got.fence")" -gt "$holder_fence" ] ||
  fail "the waiter's fence $(cat "$tmpdir/got.fence") is not greater than the killed holder's, $holder_fence"
is_free "$name" || fail "the lock is still held after the waiter's job ended"
[ "$(etcd_key_count "$name")" = 0 ] || fail "keys are left under dlock/$name/: $(etcd_keys "dlock/$name/")"
pass
