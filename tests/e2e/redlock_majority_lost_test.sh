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
  local key pid child dlock_pid lost child_gone exited rc fence remaining
  key=$(redis_key "$name" lock)
  rm -f "$tmpdir/child.pid" "$tmpdir/dlock.pid" "$tmpdir/dlock.rc" "$tmpdir/dlock.exit_ms"
  # dlock runs below a subshell that stamps the moment it exits.
  (
    "${DL[@]}" run "$name" --ttl 2s -- sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' sh "$tmpdir/child.pid" \
      </dev/null >/dev/null 2>"$tmpdir/err" &
    echo $! >"$tmpdir/dlock.pid"
    wait $!
    echo $? >"$tmpdir/dlock.rc.tmp"
    now_ms >"$tmpdir/dlock.exit_ms"
    mv "$tmpdir/dlock.rc.tmp" "$tmpdir/dlock.rc"
  ) &
  track $!
  wait_until test -s "$tmpdir/dlock.pid" || fail "$how: dlock did not start"
  dlock_pid=$(cat "$tmpdir/dlock.pid")
  track "$dlock_pid"
  wait_until test -s "$tmpdir/child.pid" || fail "$how: the job did not start; stderr: $(cat "$tmpdir/err")"
  child=$(cat "$tmpdir/child.pid")
  track "$child"
  wait_until grep -qx sleep "/proc/$child/comm" || fail "$how: the job never became 'sleep'"
  [ "$(nodes_with_key "$key")" = 5 ] || fail "$how: the lock key is on $(nodes_with_key "$key") of 5 nodes while the job runs"
  fence=$("${DL[@]}" status "$name" --json | json 'd["fence"]')

  # Let at least one renewal happen (the PTTL jumps up between two
  # readings), so that the loss lands on a heartbeat in full swing.
  mark_pttl "$watched" "$key"
  wait_until -t 3 renewed_on "$watched" "$key" || fail "$how: the lease was never renewed on node $watched (PTTL now $_last_pttl)"

  lost=$(now_ms)
  for pid in "$@"; do
    pid=$(node_pid "$pid")
    _frozen_nodes+=("$pid")
    if [ "$how" = kill ]; then kill -KILL "$pid"; else kill -STOP "$pid"; fi
  done
  wait_until -t 5 is_gone "$child" || fail "$how: the job was still running 5 s after nodes $* were lost (ttl 2 s)"
  child_gone=$(elapsed_ms "$lost")
  wait_until -t 10 test -e "$tmpdir/dlock.rc" ||
    fail "$how: dlock did not exit within 10 s of losing nodes $* (ttl 2 s; job gone after ${child_gone} ms)"
  # Frozen nodes stay frozen until the lease has surely lapsed: the pause is
  # what is under test, and what they queued must not revive the lock.
  if [ "$how" = freeze ]; then
    remaining=$((lost + ttl_ms + 500 - $(now_ms)))
    [ "$remaining" -gt 0 ] && sleep "$((remaining / 1000)).$(printf '%03d' $((remaining % 1000)))"
    thaw_node "$@"
  fi
  rc=$(cat "$tmpdir/dlock.rc")
  exited=$(($(cat "$tmpdir/dlock.exit_ms") - lost))
  echo "$how nodes $*: job gone ${child_gone} ms, dlock exited ${exited} ms after the loss (ttl ${ttl_ms} ms)"
  [ "$rc" = 76 ] || fail "$how: dlock exited $rc after nodes $* were lost, expected 76; stderr: $(cat "$tmpdir/err")"
  [ "$child_gone" -lt "$ttl_ms" ] ||
    fail "$how: the job was gone only ${child_gone} ms after the loss: the ${ttl_ms} ms lease could have lapsed while it ran"
  [ "$exited" -lt "$ttl_ms" ] ||
    fail "$how: dlock exited ${exited} ms after the loss (job gone after ${child_gone} ms): later than the ${ttl_ms} ms lease"
  assert_one_line_message "$how: stderr after the loss" "$(cat "$tmpdir/err")"

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
