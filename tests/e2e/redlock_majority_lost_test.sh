#!/usr/bin/env bash
# The holder loses its majority while `dlock run --ttl 2s` runs a job: three
# of five nodes are killed (SIGKILL), later three are frozen (SIGSTOP, so
# renewals hang instead of failing). Renewals cannot reach a majority, so
# dlock must have the job gone and exit 76 before the lease it last renewed
# could have lapsed, i.e. within the ttl of the loss. Afterwards the lock is
# free for the next holder, with a greater fence.
SCENARIO="redlock the holder's majority lost mid-run"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

ttl_ms=2000

# lose_majority HOW NAME WATCHED NODES...: runs a job on NAME, waits until a
# renewal reaches node WATCHED (which stays up), then kills (HOW=kill) or
# freezes (HOW=freeze) NODES and checks that the job and dlock end in time.
lose_majority() {
  local how=$1 name=$2 watched=$3
  shift 3
  local key pid fence lost rc
  key=$(redis_key "$name" lock)
  start_job "$name" --ttl 2s
  [ "$(nodes_with_key "$key")" = 5 ] || fail "$how: the lock key is on $(nodes_with_key "$key") of 5 nodes while the job runs"
  fence=$("${DL[@]}" status "$name" --json | json 'd["fence"]')

  # Let at least one renewal happen (the PTTL jumps up between two
  # readings), so that the loss lands on a heartbeat in full swing.
  mark_pttl "$watched" "$key"
  wait_until -t 3 renewed_on "$watched" "$key" || fail "$how: the lease was never renewed on node $watched (PTTL now $_last_pttl)"

  lost=$(now_ms)
  for pid in "$@"; do
    pid=$(node_pid "$pid")
    _frozen_pids+=("$pid")
    if [ "$how" = kill ]; then kill -KILL "$pid"; else kill -STOP "$pid"; fi
  done
  if [ "$how" = kill ]; then
    check_job_stopped "$lost" "$ttl_ms" "nodes $* were killed"
  else
    # Frozen nodes stay frozen until the lease has surely lapsed: the pause
    # is what is under test, and what they queued must not revive the lock.
    check_job_stopped "$lost" "$ttl_ms" "nodes $* were frozen" thaw_node "$@"
  fi

  # The nodes back (killed ones restarted empty, so the lost lease is left
  # on a minority only), the lock is free and the next holder gets a greater
  # fence.
  [ "$how" = kill ] && restart_node "$@"
  wait_until -t 1 is_free "$name" || fail "$how: the lock is still held after the lease lapsed: $("${DL[@]}" status "$name" 2>&1)"
  capture "${DL[@]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE"'
  [ "$rc" = 0 ] || fail "$how: run after the loss exited $rc; stderr: $err"
  dec_gt "$out" "$fence" ||
    fail "$how: the fence after the loss ($out) is not greater than the lost holder's ($fence)"
}

lose_majority kill killed.majority 5 1 2 3
lose_majority freeze frozen.majority 1 3 4 5
pass
