#!/usr/bin/env bash
# A three-member etcd cluster loses its leader (SIGKILL) while `dlock run
# --ttl 2s --kill-after 200ms` runs a job: the two others elect a new leader
# (election timeout 500 ms) and keep-alives go on through them, so for 3 T
# after the kill the job runs on (not stopped, dlock does not exit), at least
# three keep-alives reach the new leader, and the lock stays exclusive (a
# second `dlock run` is busy, 75) with the job's fence; then the job
# finishes, dlock exits 0 and the lock is free. The stopped member comes back
# and serves locks again.
# Run under scripts/with-etcd --cluster 3.
SCENARIO="etcd: the leader stopped under a running job"
. "$(dirname "$0")/lib.sh"
use_etcd

[ "${DLOCK_TEST_ETCD_CLUSTER:-1}" = 3 ] || fail "run this test under scripts/with-etcd --cluster 3"
name=leader.job
ttl_ms=2000

# dlock stops a job whose keep-alives go unconfirmed K (--kill-after) before
# the hard deadline t0 + 0.99 T - margin; keep-alives go every T/3. With the
# default K (capped near T/2) a 2 s lease would tolerate an outage of only
# about 0.3 s after a missed keep-alive: less than an election. With a short
# K it is about 1 s.
# -v: the holder's renewals and retries, for the failure messages.
start_holder h "$name" --ttl 2s --kill-after 200ms -v
job_fence=$(cat "$tmpdir/h.fence")
is_held "$name" || fail "the lock is not held while the job runs"

# Stop the leader right after a keep-alive landed on it: the outage then
# starts with the lease at (nearly) its full T.
leader=$(etcd_leader) || fail "the cluster has no leader"
etcd_wait_renewed
killed=$(now_ms)
etcd_stop "$leader"
echo "stopped the leader, member $leader, $((killed - ETCD_RENEWED_AFTER)) ms after its last keep-alive came in"

# A new leader among the other two, soon.
new_leader() {
  local l
  l=$(etcd_leader 2>/dev/null) && [ "$l" != "$leader" ]
}
wait_until -t 5 new_leader || fail "no new leader within 5 s of the kill"
now_leader=$(etcd_leader)
echo "member $now_leader leads $(($(now_ms) - killed)) ms after the kill"
renewals_before=$(etcd_renewals "$now_leader") || fail "could not read member $now_leader's lease metrics"

# For 3 T after the kill the job runs, unstopped, and dlock stays; the lock
# stays held, and another run on it is busy.
busy_checks=0
until [ $(($(now_ms) - killed)) -ge $((3 * ttl_ms)) ]; do
  is_alive "$HOLDER_PID" || fail "dlock ended $(($(now_ms) - killed)) ms after the leader was stopped; stderr: $(cat "$tmpdir/h.err")"
  is_alive "$CHILD_PID" || fail "the job ended $(($(now_ms) - killed)) ms after the leader was stopped; stderr: $(cat "$tmpdir/h.err")"
  [ "$(proc_state "$CHILD_PID")" != T ] || fail "the job was stopped $(($(now_ms) - killed)) ms after the leader was stopped"
  rm -f "$tmpdir/ran"
  capture "${DL[@]}" run "$name" -- touch "$tmpdir/ran"
  [ "$rc" = 75 ] || fail "a second run on $name $(($(now_ms) - killed)) ms after the leader was stopped exited $rc, expected 75 (busy); stderr: $err"
  [ ! -e "$tmpdir/ran" ] || fail "a second run on $name ran its job while the first held the lock"
  busy_checks=$((busy_checks + 1))
  sleep 0.2 # the observation window itself is under test
done
renewals=$(($(etcd_renewals "$now_leader") - renewals_before))
echo "$busy_checks busy runs, $renewals keep-alives on the new leader in the 3 T after the kill"
[ "$renewals" -ge 3 ] || fail "only $renewals keep-alives reached the new leader (member $now_leader) in the 3 T after the kill"
[ "$(etcd_key_count "$name")" = 1 ] || fail "dlock/$name/ does not hold exactly the job's key: $(etcd_keys "dlock/$name/")"
[ "$("${DL[@]}" status "$name" --json | json 'd["fence"]')" = "$job_fence" ] || fail "the lock's fence changed: someone else holds it"

release_holder h
wait_exit "$HOLDER_PID" 10
[ "$rc" = 0 ] || fail "dlock exited $rc after the job finished, expected 0; stderr: $(cat "$tmpdir/h.err")"
wait_until -t 2 is_free "$name" || fail "the lock is still held after the job finished"

# The stopped member rejoins; a run through its address alone works.
etcd_start "$leader"
read -ra ports <<<"$DLOCK_TEST_ETCD_PORTS"
capture "$DLOCK_BIN" -b "$(etcd_url "127.0.0.1:${ports[$((leader - 1))]}")" run "$name" -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "a run through the rejoined member exited $rc; stderr: $err"
[ "$out" -gt "$job_fence" ] || fail "the fence after the leader change ($out) is not greater than the job's ($job_fence)"
pass
