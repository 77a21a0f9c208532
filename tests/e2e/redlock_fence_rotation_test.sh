#!/usr/bin/env bash
# Quorum fences: 50 acquisitions of one name, alternating `run` and
# `acquire` + `release`, while nodes are killed, FLUSHALLed and restarted
# empty in rotation, never more than a minority (2 of 5) affected at once.
# Every DLOCK_FENCE must be greater than all before it, and each must have
# been stored on a majority before it was handed out. Then the quorum
# counter is checked apart from the clock: counters far ahead of the servers'
# clocks on every node, a minority flushed, the next fence still exceeds them.
SCENARIO="redlock fences across killed, flushed and restarted nodes"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

fence_key=$(redis_key f fence)
# check_stored_fence WHAT FENCE: check_fence, and FENCE is already on a
# majority of nodes (the counter there is at least FENCE; nodes are only
# ever changed between acquisitions here).
check_stored_fence() {
  local what=$1 fence=$2 i stored=0 value
  check_fence "$what" "$fence"
  for ((i = 1; i <= NODES; i++)); do
    is_gone "$(node_pid "$i")" && continue
    value=$(node_cli "$i" GET "$fence_key")
    { [ "$value" = "$fence" ] || dec_gt "$value" "$fence"; } && stored=$((stored + 1))
  done
  [ "$stored" -ge "$QUORUM" ] || fail "$what: fence $fence is stored on only $stored nodes, not a majority of $NODES"
}

# acquisition N: the Nth acquisition, by run (even N) or acquire + release.
acquisition() {
  local n=$1 token
  if ((n % 2 == 0)); then
    capture "${DL[@]}" run f --ttl 10s -- sh -c 'echo "$DLOCK_FENCE"'
    [ "$rc" = 0 ] || fail "acquisition $n (run) exited $rc; $(describe); stderr: $err"
    check_stored_fence "acquisition $n (run; $(describe))" "$out"
  else
    capture "${DL[@]}" acquire f --ttl 10s --json
    [ "$rc" = 0 ] || fail "acquisition $n (acquire) exited $rc; $(describe); stderr: $err"
    token=$(json_value token "$out")
    check_stored_fence "acquisition $n (acquire; $(describe))" "$(json_value fence "$out")"
    capture "${DL[@]}" release f "$token"
    [ "$rc" = 0 ] || fail "release after acquisition $n exited $rc; $(describe); stderr: $err"
  fi
}

down='' flushed=''
describe() { echo "node down: ${down:-none}, node flushed: ${flushed:-none}"; }

# Ten rounds of five acquisitions. In round r node r%5+1 is killed for the
# round (and restarted empty at its end) and node (r+2)%5+1 is FLUSHALLed
# at its start: at most two nodes without their data at any time. Over the
# rounds every node is killed twice and flushed twice.
for ((round = 0; round < 10; round++)); do
  down=$((round % 5 + 1))
  flushed=$(((round + 2) % 5 + 1))
  node_cli "$flushed" FLUSHALL >/dev/null
  [ "$(node_cli "$flushed" DBSIZE)" = 0 ] || fail "FLUSHALL left keys on node $flushed"
  stop_node "$down"
  for ((k = 0; k < 5; k++)); do
    acquisition $((round * 5 + k))
  done
  restart_node "$down"
done
down='' flushed=''
[ "${#FENCES[@]}" = 50 ] || fail "${#FENCES[@]} fences, expected 50"

# The counter apart from the clock: every node's counter is set far above
# any server clock (in µs), then two nodes lose it. Any majority the next
# acquisition gets holds at least one node that kept it.
ahead=$(python3 -c 'import time; print(int(time.time() * 1e6) * 3)')
for ((i = 1; i <= NODES; i++)); do
  node_cli "$i" SET "$fence_key" "$ahead" >/dev/null
done
FENCES+=("$ahead")
node_cli 1 FLUSHALL >/dev/null
restart_node 2
flushed='1 (FLUSHALL) and 2 (restarted empty)'
acquisition 50
capture "${DL[@]}" run f -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "the last run exited $rc; stderr: $err"
check_stored_fence "run after the counters went ahead and nodes 1 and 2 lost them" "$out"
echo "first fence ${FENCES[0]}, last ${FENCES[-1]} (counters set to $ahead)"
pass
