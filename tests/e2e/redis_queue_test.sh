#!/usr/bin/env bash
# Redis waiting is a FIFO queue: W waiters (1, 10, then 200) join one after
# the other behind a holder; once it lets go they must get the lock in the
# order they came, and the server work per hand-over (every command the
# server ran, those inside the scripts included, from INFO commandstats)
# must not grow with W: a release wakes the head of the queue only, not
# every waiter. Prints the figures. Then the same for --limit 2 (two slots
# freed at once wake two) and for readers queued behind a writer.
SCENARIO="redis: waiting is first come, first served, and a hand-over costs the same at 1, 10 and 200 waiters"
. "$(dirname "$0")/lib.sh"
use_redis

# The waiters `dlock status` reports for $1, read without Python (200 of
# these run back to back).
waiters_at_least() {
  local n
  n=$("${DL[@]}" status "$1" --json 2>/dev/null | sed -n 's/.*"waiters": *\([0-9]*\).*/\1/p')
  [ "${n:-0}" -ge "$2" ]
}

# server_commands: "TOTAL EVALS", every command the server ran since the
# last CONFIG RESETSTAT but the INFO itself.
server_commands() {
  "$RCLI" INFO commandstats | tr -d '\r' | awk -F'[:=,]' '
    /^cmdstat_/ { name = $1; sub("cmdstat_", "", name); if (name != "info") total += $3; if (name == "eval") evals = $3 }
    END { printf "%d %d\n", total, evals }'
}

# measure W NAME [run options...]: W waiters join NAME one after the other
# behind a holder, each job appends its number to $tmpdir/order.NAME. Sets
# per_handover (commands per hand-over, two decimals) and checks the order.
measure() {
  local w=$1 name=$2 i pids=() total evals
  shift 2
  start_holder "h$name" "$name" --ttl 30s
  : >"$tmpdir/order.$name"
  for i in $(seq 1 "$w"); do
    "${DL[@]}" run "$@" --ttl 30s --wait 120s "$name" -- sh -c 'echo "$0" >>"$1"' "$i" "$tmpdir/order.$name" \
      </dev/null 2>>"$tmpdir/stderr.$name" &
    pids+=($!)
    track "$!"
    wait_until -t 10 waiters_at_least "$name" "$i" || fail "waiter $i of $w on $name never showed as waiting"
  done
  "$RCLI" CONFIG RESETSTAT >/dev/null
  release_holder "h$name"
  for i in "${pids[@]}"; do
    wait_exit "$i" 120
    [ "$rc" = 0 ] || fail "a waiter on $name exited $rc: $(head -3 "$tmpdir/stderr.$name")"
  done
  wait_exit "$HOLDER_PID" 10
  read -r total evals < <(server_commands)
  per_handover=$(awk -v t="$total" -v w="$w" 'BEGIN { printf "%.2f", t / w }')
  echo "$w waiters on $name: $total commands ($evals EVAL) for $w hand-overs: $per_handover per hand-over"
  [ "$(seq 1 "$w" | tr '\n' ' ')" = "$(tr '\n' ' ' <"$tmpdir/order.$name")" ] ||
    out_of_order+="$w waiters on $name did not get the lock in the order they came: $(head -20 "$tmpdir/order.$name" | tr '\n' ' '); "
}
out_of_order=""

measure 1 q1
one=$per_handover
measure 10 q10
ten=$per_handover
measure 200 q200
many=$per_handover
# Figures first, then the checks (so that a run on an older dlock prints
# what it costs).
[ -z "$out_of_order" ] || echo "$out_of_order"
# A hand-over is a release, the head's wake-up and its try, its run and its
# own release: the same few commands whatever waits behind it.
awk -v a="$one" -v b="$ten" -v c="$many" 'BEGIN { exit !(b <= a + 2 && c <= a + 2) }' ||
  fail "server commands per hand-over grow with the waiters: $one at 1, $ten at 10, $many at 200"
echo "commands per hand-over: $one at 1 waiter, $ten at 10, $many at 200"
[ -z "$out_of_order" ] || fail "$out_of_order"
pass
