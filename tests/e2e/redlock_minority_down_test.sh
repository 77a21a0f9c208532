#!/usr/bin/env bash
# Two of five Redlock nodes killed (SIGKILL): a majority is still there, so
# run, acquire, renew, release, status and a --wait hand-over all work, they
# do not wait on the dead nodes, and fences keep growing.
SCENARIO="redlock two of five nodes down"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

lock_key=$(redis_key m lock)

# All five up: the lock lives on all five nodes with one token.
start_holder h0 m --ttl 20s
check_fence "holder with all nodes up" "$(cat "$tmpdir/h0.fence")"
[ "$(nodes_with_key "$lock_key")" = 5 ] || fail "with all nodes up the lock key is on $(nodes_with_key "$lock_key") of 5 nodes"
token=$(node_cli 1 GET "$lock_key")
[ "$(nodes_with_value "$lock_key" "$token")" = 5 ] || fail "the five nodes do not hold the same token"
release_holder h0
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "holder h0 exited $rc; stderr: $(cat "$tmpdir/h0.err")"
[ "$(nodes_with_key "$lock_key")" = 0 ] || fail "the lock key is left on $(nodes_with_key "$lock_key") nodes after release"

stop_node 2 4

# run: exit status passes through, the job sees a larger fence, and the dead
# nodes (connection refused) cost no waiting.
started=$(now_ms)
capture "${DL[@]}" run m -- sh -c 'echo "$DLOCK_FENCE"; exit 7'
took=$(elapsed_ms "$started")
[ "$rc" = 7 ] || fail "run with 2 of 5 nodes down exited $rc, expected the job's 7; stderr: $err"
check_fence "run with 2 nodes down" "$out"
[ -z "$err" ] || fail "run with 2 of 5 nodes down printed on stderr: $err"
[ "$took" -lt 1500 ] || fail "run with 2 of 5 nodes down (connection refused) took ${took} ms"

# A holder on the three live nodes excludes others.
start_holder h1 m --ttl 20s
check_fence "holder with 2 nodes down" "$(cat "$tmpdir/h1.fence")"
[ "$(nodes_with_key "$lock_key")" = 3 ] || fail "the lock key is on $(nodes_with_key "$lock_key") of the 3 live nodes"
capture "${DL[@]}" run m -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "a second run while m is held exited $rc, expected 75; stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "the second run's job ran although m was held"
case $err in "dlock: no quorum"*) fail "busy with 2 nodes down is reported as no quorum: $err" ;; esac
capture "${DL[@]}" status m --json
[ "$rc" = 0 ] || fail "status of the held lock exited $rc; stderr: $err"
[ "$(printf '%s' "$out" | json 'd["holder"]["pid"]')" = "$HOLDER_PID" ] || fail "status does not name the holder $HOLDER_PID: $out"
[ "$(printf '%s' "$out" | json 'd["fence"]')" = "${FENCES[-1]}" ] || fail "status shows another fence than the holder's ${FENCES[-1]}: $out"

# A waiter is woken when the holder releases (pub/sub on the live nodes).
"${DL[@]}" run m --wait 15s -- sh -c 'echo "$DLOCK_FENCE" >"$1"' sh "$tmpdir/waiter.fence" \
  </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_subscriber m || fail "the waiting run never subscribed on any node"
released=$(now_ms)
release_holder h1
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "holder h1 exited $rc; stderr: $(cat "$tmpdir/h1.err")"
wait_exit "$waiter" 15
handover=$(elapsed_ms "$released")
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
check_fence "waiter after the hand-over" "$(cat "$tmpdir/waiter.fence")"
[ "$handover" -lt 3000 ] || fail "the waiter took ${handover} ms to get the released lock (not woken?)"

# acquire / renew / release from a script.
capture "${DL[@]}" acquire m --ttl 20s --json
[ "$rc" = 0 ] || fail "acquire with 2 of 5 nodes down exited $rc; stderr: $err"
token=$(json_value token "$out")
check_fence "acquire with 2 nodes down" "$(json_value fence "$out")"
[ "$(nodes_with_key "$lock_key")" = 3 ] || fail "after acquire the lock key is on $(nodes_with_key "$lock_key") of the 3 live nodes"
capture "${DL[@]}" acquire m
[ "$rc" = 75 ] || fail "a second acquire exited $rc, expected 75; stderr: $err"
node_cli 1 PEXPIRE "$lock_key" 5000 >/dev/null
capture "${DL[@]}" renew m "$token" --ttl 20s
[ "$rc" = 0 ] || fail "renew with 2 of 5 nodes down exited $rc; stderr: $err"
pttl=$(node_cli 1 PTTL "$lock_key")
[ "$pttl" -gt 10000 ] || fail "renew --ttl 20s left a PTTL of $pttl ms on node 1"
capture "${DL[@]}" release m "$token"
[ "$rc" = 0 ] || fail "release with 2 of 5 nodes down exited $rc; stderr: $err"
[ "$(nodes_with_key "$lock_key")" = 0 ] || fail "release left the lock key on $(nodes_with_key "$lock_key") nodes"
is_free m || fail "status does not show m free after release"
capture "${DL[@]}" release m "$token"
[ "$rc" = 3 ] || fail "a second release with the same token exited $rc, expected 3"

# The dead nodes come back empty: still one more, larger fence.
restart_node 2 4
capture "${DL[@]}" run m -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run after the nodes came back exited $rc; stderr: $err"
check_fence "run after the nodes came back empty" "$out"
echo "fences: ${FENCES[*]}"
pass
