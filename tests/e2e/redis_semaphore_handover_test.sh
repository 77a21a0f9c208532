#!/usr/bin/env bash
# Redis semaphore (--limit N) hand-over: with N holders (1, 10, then 100)
# and one waiter, the release of one slot and the waiter's run cost the
# server the same few commands whatever N is (every command the server ran,
# those inside the scripts included, from INFO commandstats): neither the
# release nor the waiter's acquire reads every holder. The waiter gets the
# slot number that was freed, the lowest free one. Prints the figures.
# Leases are long (600 s), so that few renewals fall in the window.
SCENARIO="redis: a semaphore's hand-over costs the same with 1, 10 and 100 holders"
. "$(dirname "$0")/lib.sh"
use_redis

# Every command the server ran since the last CONFIG RESETSTAT but INFO.
server_commands() {
  "$RCLI" INFO commandstats | tr -d '\r' | awk -F'[:=,]' '
    /^cmdstat_/ { name = $1; sub("cmdstat_", "", name); if (name != "info") total += $3 }
    END { printf "%d\n", total }'
}

# measure N: N holders of --limit N on sN, one waiter, then the holder in
# the middle (slot N/2) lets go. Sets work (the commands from that release
# to the waiter's exit) and checks the waiter's slot.
measure() {
  local n=$1 name=s$1 i freed waiter
  for i in $(seq 0 $((n - 1))); do start_holder "h$name.$i" "$name" --limit "$n" --ttl 600s; done
  "${DL[@]}" run --limit "$n" --ttl 600s --wait 60s "$name" -- sh -c 'echo "$DLOCK_SLOT" >"$0"' \
    "$tmpdir/slot.$name" </dev/null 2>"$tmpdir/stderr.$name" &
  waiter=$!
  track "$waiter"
  wait_until has_waiter "$name" || fail "the waiter on $name never showed as waiting"
  freed=$((n / 2))
  "$RCLI" CONFIG RESETSTAT >/dev/null
  release_holder "h$name.$freed"
  wait_exit "$waiter" 30
  [ "$rc" = 0 ] || fail "the waiter on $name exited $rc: $(head -3 "$tmpdir/stderr.$name")"
  work=$(server_commands)
  [ "$(cat "$tmpdir/slot.$name")" = "$freed" ] ||
    fail "with $n held, the waiter got slot $(cat "$tmpdir/slot.$name"), not the freed slot $freed"
  for i in $(seq 0 $((n - 1))); do [ "$i" = "$freed" ] || release_holder "h$name.$i"; done
  wait_until -t 20 is_free "$name" || fail "$name stayed held after its holders let go"
  echo "$n held: $work commands from the release to the waiter's exit"
}

measure 1
one=$work
measure 10
ten=$work
measure 100
many=$work
# A scan of the holders costs a command or more per holder: 100 held would
# cost some 100 more than one. The holders' renewals fall in the window
# too (a few commands each; one in 200 s per holder with these leases),
# hence the margin.
awk -v a="$one" -v b="$ten" -v c="$many" 'BEGIN { exit !(b <= a + 15 && c <= a + 15) }' ||
  fail "server commands per hand-over of a semaphore grow with its holders: $one at 1, $ten at 10, $many at 100"
echo "commands per hand-over: $one with 1 held, $ten with 10, $many with 100"
