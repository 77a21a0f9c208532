#!/usr/bin/env bash
# A client paused (a VM pause, a starved machine) for longer than its lease
# before it holds the lock must start over, not give up with 69 ("requested
# lease not found", found by scripts/chaos):
# - between the grant of its lease and the write of its queue key (strace
#   delays that write): the lease is gone, so it is granted a new one;
# - while it waits (SIGSTOP): etcd expires the waiter's lease and its key;
#   on resuming it joins the queue again and gets the lock once the holder
#   releases.
SCENARIO="etcd: a client paused past its lease before it holds the lock starts over"
. "$(dirname "$0")/lib.sh"
use_etcd

# The second sendto is the lock transaction (the first grants the lease):
# held back 1.9 s, longer than the 1 s lease (etcd's lessor expires leases
# every 500 ms) and shorter than the request's time limit.
command -v strace >/dev/null || fail "strace is missing (scripts/install-deps installs it)"
# (LeakSanitizer, in sanitizer builds, cannot run under ptrace.)
capture env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -f -o /dev/null -e trace=sendto -e inject=sendto:delay_enter=1900000:when=2 \
  "${DL[@]}" -v run g --ttl 1s -- echo ran
[ "$rc" = 0 ] && [ "$out" = ran ] ||
  fail "a run whose lease ran out before its key was written exited $rc (output '$out'), expected 0; stderr: $err"
grep -q "starting over" <<<"$err" || fail "the transaction was not held back past the lease (no start-over): $err"

name=pw
start_job "$name" --ttl 1s
"${DL[@]}" run "$name" --wait 30s --ttl 1s -- sh -c 'echo "$DLOCK_FENCE" >"$1"' sh "$tmpdir/got" \
  </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter "$name" || fail "the waiter never queued; stderr: $(cat "$tmpdir/waiter.err")"
lease=$(etcd_keys "dlock/$name/" | json 'd[1]["lease"]')
kill -STOP "$waiter"
# The pause itself is what is under test: it has to outlast the waiter's
# 1 s lease (etcd's lessor looks for expired leases every 500 ms).
wait_until -t 10 sh -c '! "$1" lease timetolive "$2" | grep -q remaining' sh "$ETCDCTL" "$lease" ||
  fail "the paused waiter's lease $lease did not expire"
kill -CONT "$waiter"
# Its own job runs only once the holder has released.
wait_until has_waiter "$name" || fail "the waiter did not join the queue again; stderr: $(cat "$tmpdir/waiter.err")"
[ ! -e "$tmpdir/got" ] || fail "the waiter got the lock while the holder still held it"
kill -TERM "$JOB_DLOCK_PID"
wait_exit "$waiter" 10
[ "$rc" = 0 ] || fail "the waiter exited $rc after a pause longer than its lease, expected 0; stderr: $(cat "$tmpdir/waiter.err")"
[ -s "$tmpdir/got" ] || fail "the waiter's job did not run"
pass
