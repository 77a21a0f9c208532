#!/usr/bin/env bash
# One of five nodes frozen (SIGSTOP): it accepts connections but never
# answers. The other four are a majority, so an acquisition must not wait
# for the frozen node longer than the per-node timeout (ttl/20 = 100 ms for
# --ttl 2s), far below the 2 s connect timeout; renewals and the release
# carry on around it too, also when the node freezes under a running job.
SCENARIO="redlock one node frozen"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

# A connect timeout of 10 s: a run that waits for the frozen node takes
# that long, so the bound below can leave a loaded machine's process starts
# and round trips plenty of room (800 ms did not always) and still tell.
DL+=(--connect-timeout 10s)
limit_ms=2500 # per-node timeout 100 ms, plus process start and round trips
lock_key=$(redis_key frozen lock)

# Warm-up with every node answering, so that the runs below are not the first.
capture "${DL[@]}" run frozen --ttl 2s -- true
[ "$rc" = 0 ] || fail "run with all nodes up exited $rc; stderr: $err"

freeze_node 3
for i in 1 2 3; do
  started=$(now_ms)
  capture "${DL[@]}" run frozen --ttl 2s -- true
  took=$(elapsed_ms "$started")
  echo "run $i with node 3 frozen: exit $rc after ${took} ms"
  [ "$rc" = 0 ] || fail "run $i with node 3 frozen exited $rc; stderr: $err"
  [ -z "$err" ] || fail "run $i with node 3 frozen printed on stderr: $err"
  [ "$took" -lt "$limit_ms" ] ||
    fail "run $i with node 3 frozen took ${took} ms (per-node timeout 100 ms, connect timeout 10 s): it waited for the frozen node"
done

started=$(now_ms)
capture "${DL[@]}" acquire frozen --ttl 2s
took=$(elapsed_ms "$started")
[ "$rc" = 0 ] || fail "acquire with node 3 frozen exited $rc; stderr: $err"
token=$out
[ "$took" -lt "$limit_ms" ] || fail "acquire with node 3 frozen took ${took} ms"
[ "$(nodes_with_key "$lock_key")" = 4 ] || fail "the lock key is on $(nodes_with_key "$lock_key") of the 4 answering nodes"
started=$(now_ms)
capture "${DL[@]}" release frozen "$token"
took=$(elapsed_ms "$started")
[ "$rc" = 0 ] || fail "release with node 3 frozen exited $rc; stderr: $err"
[ "$took" -lt "$limit_ms" ] || fail "release with node 3 frozen took ${took} ms"
[ "$(nodes_with_key "$lock_key")" = 0 ] || fail "release left the lock key on $(nodes_with_key "$lock_key") answering nodes"

# A job longer than the lease: renewals (every ttl/3) must succeed around the
# frozen node, or the job would be stopped and dlock exit 76.
capture "${DL[@]}" run frozen --ttl 2s -- sleep 2.5
[ "$rc" = 0 ] || fail "a 2.5 s job under --ttl 2s with node 3 frozen exited $rc (renewals failed?); stderr: $err"
[ -z "$err" ] || fail "the 2.5 s job with node 3 frozen printed on stderr: $err"

# A node that freezes while a job runs: the job goes on.
thaw_node 3
restart_node 3 # what it queued while frozen dies with it
start_holder h frozen --ttl 2s
mark_pttl 1 "$lock_key"
wait_until -t 3 renewed_on 1 "$lock_key" || fail "the lease was never renewed on node 1 (PTTL now $_last_pttl)"
freeze_node 2
frozen_at=$(now_ms)
# Three renewal periods after the freeze the job must still run, renewed by
# the other nodes.
mark_pttl 1 "$lock_key"
wait_until -t 3 renewed_on 1 "$lock_key" || fail "no renewal reached node 1 after node 2 froze (PTTL now $_last_pttl)"
wait_until -t 3 renewed_on 1 "$lock_key" || fail "only one renewal reached node 1 after node 2 froze"
wait_until -t 3 renewed_on 1 "$lock_key" || fail "only two renewals reached node 1 after node 2 froze"
is_alive "$CHILD_PID" || fail "the job was stopped $(elapsed_ms "$frozen_at") ms after node 2 froze; dlock stderr: $(cat "$tmpdir/h.err")"
is_alive "$HOLDER_PID" || fail "dlock ended after node 2 froze; stderr: $(cat "$tmpdir/h.err")"
release_holder h
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the holder exited $rc after node 2 froze under it; stderr: $(cat "$tmpdir/h.err")"
[ "$(nodes_with_key "$lock_key")" = 0 ] || fail "the lock key is left on $(nodes_with_key "$lock_key") answering nodes"
pass
