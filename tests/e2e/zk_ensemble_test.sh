#!/usr/bin/env bash
# A three-member ZooKeeper ensemble loses its leader (SIGKILL) while
# `dlock run --ttl 4s --kill-after 200ms` runs a job: the two others elect a new leader well
# within the session timeout and the session moves to a live member, so the
# job keeps running (not stopped, dlock does not exit) for at least 2 T after
# the kill and the lock stays held for everyone else; then the job finishes,
# dlock exits 0 and the lock is free. The killed member comes back and the
# ensemble serves locks with all three again.
# Run under scripts/with-zookeeper --ensemble 3.
SCENARIO="zookeeper: the leader killed under a running job"
. "$(dirname "$0")/lib.sh"
use_zookeeper

[ "${DLOCK_TEST_ZK_ENSEMBLE:-1}" = 3 ] || fail "run this test under scripts/with-zookeeper --ensemble 3"
name=ensemble.job
ttl_ms=4000

# dlock stops a job whose renewals go unconfirmed K (--kill-after) before
# the hard deadline t0 + 0.99 T - margin, K capped at about T/2; renewals come
# every T/3. With the default K, a 4 s lease would tolerate an outage of
# only T/6 to T/2 (0.7-2 s) after the last confirmed renewal: less than an
# election plus the reconnection. A short K leaves it 2.3 to 3.7 s.
start_holder h "$name" --ttl 4s --kill-after 200ms -v
job_fence=$(cat "$tmpdir/h.fence")
is_held "$name" || fail "the lock is not held while the job runs"
[ "$(zk_session_timeout_ms "$tmpdir/h.err")" = "$ttl_ms" ] ||
  fail "--ttl 4s gave a session timeout of $(zk_session_timeout_ms "$tmpdir/h.err") ms, expected $ttl_ms"

leader=$("$DLOCK_TEST_ZK_LEADER") || fail "the ensemble has no leader"
stop_var=DLOCK_TEST_ZK_STOP_$leader
start_var=DLOCK_TEST_ZK_START_$leader
killed=$(now_ms)
"${!stop_var}" || fail "could not kill the leader, member $leader"
echo "killed the leader, member $leader"

# A new leader among the other two, soon.
new_leader() {
  local l
  l=$("$DLOCK_TEST_ZK_LEADER" 2>/dev/null) && [ "$l" != "$leader" ]
}
wait_until -t $((ttl_ms / 1000)) new_leader || fail "no new leader within $((ttl_ms / 1000)) s of the kill"
echo "member $("$DLOCK_TEST_ZK_LEADER") leads $(($(now_ms) - killed)) ms after the kill"

# For 2 T after the kill, the job runs, unstopped, and dlock stays; the lock
# stays held as another dlock sees it (status may need a moment while the
# ensemble settles).
wait_until -t $((ttl_ms / 1000)) is_held "$name" || fail "status does not see the lock held after the leader's death"
checked=0
until [ $(($(now_ms) - killed)) -ge $((2 * ttl_ms)) ]; do
  is_alive "$HOLDER_PID" || fail "dlock ended $(($(now_ms) - killed)) ms after the leader was killed; stderr: $(cat "$tmpdir/h.err")"
  is_alive "$CHILD_PID" || fail "the job ended $(($(now_ms) - killed)) ms after the leader was killed; stderr: $(cat "$tmpdir/h.err")"
  [ "$(proc_state "$CHILD_PID")" != T ] || fail "the job was stopped $(($(now_ms) - killed)) ms after the leader was killed"
  if ((checked % 10 == 0)); then
    is_held "$name" || fail "the lock was free $(($(now_ms) - killed)) ms after the leader was killed"
  fi
  checked=$((checked + 1))
  sleep 0.1 # the observation window itself is under test
done
[ "$(zk_child_count "/dlock/$name")" = 2 ] || fail "/dlock/$name does not hold exactly the job's two nodes: $(zk_children "/dlock/$name")"
[ "$("${DL[@]}" status "$name" --json | json 'd["fence"]')" = "$job_fence" ] || fail "the lock's fence changed: someone else holds it"

release_holder h
wait_exit "$HOLDER_PID" 10
[ "$rc" = 0 ] || fail "dlock exited $rc after the job finished, expected 0; stderr: $(cat "$tmpdir/h.err")"
wait_until -t 2 is_free "$name" || fail "the lock is still held after the job finished"

# The killed member rejoins; a run through its address alone works.
"${!start_var}" || fail "member $leader did not rejoin"
read -ra ports <<<"$DLOCK_TEST_ZK_PORTS"
capture "$DLOCK_BIN" -b "zk://127.0.0.1:${ports[$((leader - 1))]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "a run through the rejoined member exited $rc; stderr: $err"
[ "$out" -gt "$job_fence" ] || fail "the fence after the leader change ($out) is not greater than the job's ($job_fence)"
pass
