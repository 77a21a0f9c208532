#!/usr/bin/env bash
# `dlock release --force NAME` revokes the lease of whoever holds an etcd
# lock and says who that was. The `dlock run --ttl 12s` holding it watches
# its own key from its first renewal on (event_fd): it learns of the revoke
# from the watch, stops its job at once (not at its next keep-alive, T/3 =
# 4 s later) and exits 76 with one line naming the cause. The same watch
# stops a job whose lease an etcd 3.4 leader revoked on resuming from a
# pause (etcd issue #15247; scripts/chaos server-pause). A waiter is handed
# the lock by its watch right after the revoke; the next holders' fences
# are greater. The bounds (2 s) leave room for a loaded machine's process
# starts and are still far below the next keep-alive's 3.5 s and more.
SCENARIO="etcd: release --force stops the holder at once"
. "$(dirname "$0")/lib.sh"
use_etcd

name=forced
start_job "$name" --ttl 12s
fence=$("${DL[@]}" status "$name" --json | json 'd["fence"]')
[[ $fence =~ ^[0-9]+$ ]] || fail "status shows no fence for the job's lock"

# A waiter, queued behind the job, writes the moment it got the lock. (Its
# lease of 60 s sends its first keep-alive 20 s on: the keep-alive seen
# below is the holder's.)
"${DL[@]}" run "$name" --wait 20s --ttl 60s -- sh -c 'date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1"; echo "$DLOCK_FENCE" >"$1.fence"' \
  sh "$tmpdir/got" </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter "$name" || fail "the waiter never queued; stderr: $(cat "$tmpdir/waiter.err")"
# A renewal (every T/3) opens the holder's watch; the revoke then comes
# right after one, 4 s before the next.
etcd_wait_renewed 6

forced=$(now_ms)
capture "${DL[@]}" release "$name" --force
[ "$rc" = 0 ] || fail "release --force exited $rc; stdout: $out; stderr: $err"
case $out$err in *"$JOB_DLOCK_PID"*) ;; *) fail "release --force does not say who held the lock (pid $JOB_DLOCK_PID): $out $err" ;; esac

# The waiter gets the lock at once (the revoke deleted the key it watches),
# while the old holder has not noticed yet.
wait_until -t 3 test -s "$tmpdir/got" || fail "the waiter did not get the lock within 3 s of release --force; stderr: $(cat "$tmpdir/waiter.err")"
handed=$(($(cat "$tmpdir/got") - forced))
echo "the waiter got the lock ${handed} ms after release --force"
[ "$handed" -lt 2000 ] || fail "the waiter got the lock only ${handed} ms after release --force"
wait_exit "$waiter" 5
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
waiter_fence=$(cat "$tmpdir/got.fence")
[ "$waiter_fence" -gt "$fence" ] || fail "the waiter's fence $waiter_fence is not greater than the forced holder's, $fence"

# The old holder: job gone and exit 76 well before its next renewal.
check_job_stopped "$forced" 2000 "release --force"
grep -qiE 'gone|revoked|expired|lost' "$tmpdir/job.err" || fail "the holder's message does not name the cause: $(cat "$tmpdir/job.err")"

capture "${DL[@]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run after the forced release exited $rc; stderr: $err"
[ "$out" -gt "$waiter_fence" ] 2>/dev/null || fail "the next fence ($out) is not greater than the waiter's ($waiter_fence)"
is_free "$name" || fail "the lock is still held after the last run: $(etcd_keys "dlock/$name/")"

# release --force of a free lock: nothing to break.
capture "${DL[@]}" release "$name" --force
[ "$rc" = 3 ] || fail "release --force of a free lock exited $rc, expected 3; stdout: $out; stderr: $err"
pass
