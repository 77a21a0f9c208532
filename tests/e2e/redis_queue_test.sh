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
# behind as many holders as the options admit (one; two for --limit 2),
# each job appends its fence and number to $tmpdir/order.NAME. Sets
# per_handover (commands per hand-over, two decimals) and checks that
# they got the lock in the order they came (by their fences: two slots
# run at once, so there a waiter may be a few places off).
measure() {
  local w=$1 name=$2 i pids=() total evals holders=1
  shift 2
  [ "$*" = "--limit 2" ] && holders=2
  for i in $(seq 1 "$holders"); do start_holder "h$i$name" "$name" "$@" --ttl 30s; done
  : >"$tmpdir/order.$name"
  for i in $(seq 1 "$w"); do
    "${DL[@]}" run "$@" --ttl 30s --wait 120s "$name" -- sh -c 'echo "$DLOCK_FENCE $0" >>"$1"' "$i" \
      "$tmpdir/order.$name" </dev/null 2>>"$tmpdir/stderr.$name" &
    pids+=($!)
    track "$!"
    wait_until -t 10 waiters_at_least "$name" "$i" || fail "waiter $i of $w on $name never showed as waiting"
  done
  "$RCLI" CONFIG RESETSTAT >/dev/null
  for i in $(seq 1 "$holders"); do release_holder "h$i$name"; done
  for i in "${pids[@]}"; do
    wait_exit "$i" 120
    [ "$rc" = 0 ] || fail "a waiter on $name exited $rc: $(head -3 "$tmpdir/stderr.$name")"
  done
  read -r total evals < <(server_commands)
  per_handover=$(awk -v t="$total" -v w="$w" 'BEGIN { printf "%.2f", t / w }')
  echo "$w waiters on $name: $total commands ($evals EVAL) for $w hand-overs: $per_handover per hand-over"
  # With two slots, waiters are woken in order, but a woken one that is
  # slow to come (a loaded machine) may be passed by those woken for the
  # other slot after it: a few places, never more (out of 200, an order
  # that is not the queue's is off by far more).
  sort -n "$tmpdir/order.$name" | cut -d' ' -f2 |
    awk -v w="$w" -v n="$holders" '{ d = $1 - NR; if (d < 0) d = -d; if (d >= (n > 1 ? 2 * n : 1)) bad = 1 } END { exit bad || NR != w }' ||
    out_of_order+="$w waiters on $name did not get the lock in the order they came: $(sort -n "$tmpdir/order.$name" | cut -d' ' -f2 | head -20 | tr '\n' ' '); "
}
out_of_order=""

# No waiter at all: what one uncontended `run` (its acquire, its release
# and its connection) costs the server, over 20 runs.
"$RCLI" CONFIG RESETSTAT >/dev/null
for i in $(seq 1 20); do "${DL[@]}" run --ttl 30s q0 -- true || fail "run $i of q0 exited $?"; done
read -r total evals < <(server_commands)
none=$(awk -v t="$total" 'BEGIN { printf "%.2f", t / 20 }')
echo "no waiter on q0: $total commands ($evals EVAL) for 20 runs: $none per run"

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
echo "commands per hand-over: $none with no waiter, $one at 1 waiter, $ten at 10, $many at 200"
# The hot path: a script touches only the keys it needs, and none of the
# queue's beyond one look when nobody waits (17 and 35 now; the whole
# prelude in every script cost 26 and 47).
awk -v n="$none" -v a="$one" 'BEGIN { exit !(n <= 20 && a <= 40) }' ||
  fail "an uncontended run costs $none commands (at most 20), a hand-over to one waiter $one (at most 40)"
[ -z "$out_of_order" ] || fail "$out_of_order"

# The same for a semaphore of 2 (a release frees one slot and wakes one)
# and for readers.
measure 10 s10 --limit 2
slots_ten=$per_handover
measure 200 s200 --limit 2
[ -z "$out_of_order" ] || fail "$out_of_order"
awk -v b="$slots_ten" -v c="$per_handover" 'BEGIN { exit !(c <= b + 2) }' ||
  fail "server commands per hand-over of a semaphore of 2 grow with the waiters: $slots_ten at 10, $per_handover at 200"

# start_waiter ID NAME [run options...]: a waiter whose job appends ID to
# $tmpdir/order.NAME; it joins the queue before this returns. WAITER_PID.
start_waiter() {
  local id=$1 name=$2 before
  shift 2
  before=$(lock_waiters "$name")
  "${DL[@]}" run "$@" --wait 30s "$name" -- sh -c 'echo "$0" >>"$1"' "$id" "$tmpdir/order.$name" \
    </dev/null 2>>"$tmpdir/stderr.$name" &
  WAITER_PID=$!
  track "$WAITER_PID"
  wait_until waiters_at_least "$name" $((before + 1)) || fail "waiter $id never joined the queue of $name"
}

# A writer in the queue keeps the readers who come after it out, and once
# it is done those readers get in together: each waits inside for all five.
start_holder r0 rw --shared
start_waiter w rw
writer=$WAITER_PID
pids=()
for i in 1 2 3 4 5; do
  "${DL[@]}" run --shared --wait 30s rw -- sh -c 'touch "$1.in.$0"; i=0
    while [ "$(ls "$1".in.* | wc -l)" -lt 5 ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
    [ $i -lt 500 ] && echo r >>"$1"' "$i" "$tmpdir/order.rw" </dev/null 2>>"$tmpdir/stderr.rw" &
  pids+=($!)
  track "$!"
  wait_until waiters_at_least rw $((i + 1)) || fail "reader $i never joined the queue behind the writer"
done
release_holder r0
wait_exit "$writer" 10
[ "$rc" = 0 ] || fail "the writer exited $rc: $(cat "$tmpdir/stderr.rw")"
for pid in "${pids[@]}"; do
  wait_exit "$pid" 20
  [ "$rc" = 0 ] || fail "a reader exited $rc: $(cat "$tmpdir/stderr.rw")"
done
[ "$(tr '\n' ' ' <"$tmpdir/order.rw")" = "w r r r r r " ] ||
  fail "the writer and the five readers behind it: $(tr '\n' ' ' <"$tmpdir/order.rw") (want the writer, then all five readers inside together)"
echo "a writer in the queue went before the readers behind it, who then got in together"

# A waiter killed in the queue is skipped at once (its channel has no
# listener any more): the others get in, in order, without waiting for a
# turn (2 s) to run out.
start_holder hk k
for i in 1 2 3 4 5; do
  start_waiter "$i" k
  eval "pid$i=\$WAITER_PID"
done
kill -KILL "$pid3"
wait_until is_gone "$pid3" || fail "the killed waiter did not end"
wait "$pid3" 2>/dev/null
released=$(now_ms)
release_holder hk
for i in 1 2 4 5; do
  eval "wait_exit \$pid$i 10"
  [ "$rc" = 0 ] || fail "waiter $i exited $rc: $(cat "$tmpdir/stderr.k")"
done
took=$(($(now_ms) - released))
[ "$(tr '\n' ' ' <"$tmpdir/order.k")" = "1 2 4 5 " ] || fail "after a killed waiter: $(tr '\n' ' ' <"$tmpdir/order.k")"
[ "$took" -lt 1500 ] || fail "the four live waiters took ${took} ms past a killed one"
echo "four waiters went past a killed one in ${took} ms"

# A waiter stopped (SIGSTOP) when its turn comes holds the queue up for one
# turn (2 s), not for the holder's lease (30 s): the next one is told it is
# next and tries again once that turn could have run out. The stopped one,
# once it goes on, joins again at the end.
start_holder hs st --ttl 30s
for i in 1 2 3; do
  start_waiter "$i" st
  eval "pid$i=\$WAITER_PID"
done
kill -STOP "$pid1"
released=$(now_ms)
release_holder hs
wait_exit "$pid2" 10
took=$(($(now_ms) - released))
[ "$rc" = 0 ] || fail "waiter 2 exited $rc behind a stopped one: $(cat "$tmpdir/stderr.st")"
wait_exit "$pid3" 10
kill -CONT "$pid1"
wait_exit "$pid1" 10
[ "$rc" = 0 ] || fail "the stopped waiter exited $rc once it went on: $(cat "$tmpdir/stderr.st")"
[ "$(tr '\n' ' ' <"$tmpdir/order.st")" = "2 3 1 " ] || fail "around a stopped waiter: $(tr '\n' ' ' <"$tmpdir/order.st")"
[ "$took" -ge 1900 ] && [ "$took" -lt 4500 ] ||
  fail "the waiter behind a stopped one got in after ${took} ms (its turn is 2 s)"
echo "a stopped waiter held the queue up for ${took} ms"

# A waiter that gives up (--wait) leaves the queue; the keys of the queue
# go with the last waiter.
start_holder hg g
"${DL[@]}" run --wait 0.3s g -- true </dev/null 2>/dev/null &
quitter=$!
track "$quitter"
wait_exit "$quitter" 10
[ "$rc" = 75 ] || fail "a waiter that gave up exited $rc, expected 75"
[ "$("$RCLI" EXISTS "$(redis_key g queue)")" = 0 ] || fail "a waiter that gave up is still in the queue"
release_holder hg
wait_until is_free g || fail "g stayed held"
for part in queue turns; do
  for name in q200 s200 rw k st; do
    [ "$("$RCLI" EXISTS "$(redis_key "$name" "$part")")" = 0 ] || fail "$(redis_key "$name" "$part") is left"
  done
done
pass
