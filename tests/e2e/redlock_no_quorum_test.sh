#!/usr/bin/env bash
# Busy is not the same as unavailable. A lock that another holder has on
# all five nodes is busy (75), also with two nodes dead (three busy nodes
# leave no majority for anyone). A free lock with three of five nodes dead,
# or frozen (SIGSTOP: connections hang), is "no quorum" (69): one line,
# naming the failed nodes, within --connect-timeout, and the job never runs.
SCENARIO="redlock no quorum with three of five nodes down"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

slack_ms=1000 # process start and round trips on a loaded machine

# assert_no_quorum WHAT FAILED_NODES...: the captured command failed for lack
# of a quorum, naming each failed node.
assert_no_quorum() {
  local what=$1 i
  shift
  [ "$rc" = 69 ] || fail "$what exited $rc, expected 69 (no quorum); stderr: $err"
  assert_one_line_message "$what" "$err"
  case $err in "dlock: no quorum"*) ;; *) fail "$what: the message does not start with 'dlock: no quorum': $err" ;; esac
  for i in "$@"; do
    case $err in *"$(node_address "$i")"*) ;; *) fail "$what: the message does not name the failed node $(node_address "$i"): $err" ;; esac
  done
  [ "$err" != "$busy_message" ] || fail "$what: the no-quorum message is the busy message: $err"
}

# Held by another holder on all five nodes: busy.
start_holder h q --ttl 30s
holder=$HOLDER_PID
[ "$(nodes_with_key "$(redis_key q lock)")" = 5 ] || fail "the holder's lock is on $(nodes_with_key "$(redis_key q lock)") of 5 nodes"
capture "${DL[@]}" run q -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "run of a lock held on all nodes exited $rc, expected 75; stderr: $err"
assert_one_line_message "busy run" "$err"
busy_message=$err
case $err in *"no quorum"*) fail "a busy lock is reported as no quorum: $err" ;; esac
capture "${DL[@]}" acquire q
[ "$rc" = 75 ] || fail "acquire of a lock held on all nodes exited $rc, expected 75; stderr: $err"

# Two nodes dead, three still hold the lock for the holder: still busy.
stop_node 4 5
capture "${DL[@]}" run q -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "run of a lock held on the 3 live nodes (2 dead) exited $rc, expected 75; stderr: $err"
case $err in *"no quorum"*) fail "a lock held on the live majority is reported as no quorum: $err" ;; esac
[ ! -e "$tmpdir/ran" ] || fail "a job ran while the lock was held by another"
release_holder h
wait_exit "$holder"
[ "$rc" = 0 ] || fail "the holder (with a majority left) exited $rc; stderr: $(cat "$tmpdir/h.err")"

# Three nodes dead (connection refused): no quorum at once.
stop_node 3
started=$(now_ms)
capture "${DL[@]}" --connect-timeout 1s run q -- touch "$tmpdir/ran"
took=$(elapsed_ms "$started")
assert_no_quorum "run with nodes 3, 4, 5 dead" 3 4 5
[ "$took" -lt $((1000 + slack_ms)) ] || fail "run with 3 dead nodes took ${took} ms to give up (--connect-timeout 1s)"
[ ! -e "$tmpdir/ran" ] || fail "the job ran without a quorum"
capture "${DL[@]}" --connect-timeout 1s acquire q --ttl 10s
assert_no_quorum "acquire with nodes 3, 4, 5 dead" 3 4 5
[ -z "$out" ] || fail "acquire without a quorum printed a token: $out"
capture "${DL[@]}" --connect-timeout 1s run q --wait 1s -- touch "$tmpdir/ran"
[ "$rc" = 69 ] || fail "run --wait 1s with 3 dead nodes exited $rc, expected 69; stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "the job ran without a quorum"
# A failed attempt takes back what it got on the live nodes.
[ "$(nodes_with_key "$(redis_key q lock)")" = 0 ] || fail "failed attempts left the lock key on $(nodes_with_key "$(redis_key q lock)") live nodes"

# Three nodes frozen: they accept connections but never answer, so only the
# timeout ends the attempt (the per-node timeout is ttl/20 = 6 s, cut to
# the connect timeout, 2 s), and the take-back must not wait on them again
# (4 s). The bound, 2 s and 1.2 s for a loaded machine's process start and
# round trips, tells both apart.
restart_node 3 4 5
freeze_node 1 2 3
started=$(now_ms)
capture "${DL[@]}" --connect-timeout 2s run q --ttl 120s -- touch "$tmpdir/ran"
took=$(elapsed_ms "$started")
echo "no quorum after ${took} ms with 3 frozen nodes (--connect-timeout 2s)"
assert_no_quorum "run with nodes 1, 2, 3 frozen" 1 2 3
[ "$took" -lt $((2000 + 1200)) ] || fail "run with 3 frozen nodes took ${took} ms to give up (--connect-timeout 2s)"
[ ! -e "$tmpdir/ran" ] || fail "the job ran without a quorum"
[ "$(nodes_with_key "$(redis_key q lock)")" = 0 ] || fail "the failed attempt left the lock key on $(nodes_with_key "$(redis_key q lock)") of the answering nodes"

# The frozen nodes restarted (what they queued dies with them), the lock is
# free at once.
restart_node 1 2 3
capture "${DL[@]}" run q -- true
[ "$rc" = 0 ] || fail "run after the frozen nodes were restarted exited $rc; stderr: $err"
pass
