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

# The queue's checks are shared with Redlock (checks/waiter_queue.sh); here
# the waiters must also come in the order they queued.
QUEUE_FIFO=1

# No waiter at all: what one uncontended `run` (its acquire, its release
# and its connection) costs the server, over 20 runs.
redis_queue_reset_stats
for i in $(seq 1 20); do "${DL[@]}" run --ttl 30s q0 -- true || fail "run $i of q0 exited $?"; done
none=$(awk -v t="$(redis_queue_commands)" 'BEGIN { printf "%.2f", t / 20 }')
echo "no waiter on q0: $none commands per run"

queue_measure 1 q1
one=$PER_HANDOVER
queue_measure 10 q10
ten=$PER_HANDOVER
queue_measure 200 q200
many=$PER_HANDOVER
# Figures first, then the checks (so that a run on an older dlock prints
# what it costs).
[ -z "$OUT_OF_ORDER" ] || echo "$OUT_OF_ORDER"
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
[ -z "$OUT_OF_ORDER" ] || fail "$OUT_OF_ORDER"

# The same for a semaphore of 2 (a release frees one slot and wakes one)
# and for readers.
queue_measure 10 s10 --limit 2
slots_ten=$PER_HANDOVER
queue_measure 200 s200 --limit 2
[ -z "$OUT_OF_ORDER" ] || fail "$OUT_OF_ORDER"
awk -v b="$slots_ten" -v c="$PER_HANDOVER" 'BEGIN { exit !(c <= b + 2) }' ||
  fail "server commands per hand-over of a semaphore of 2 grow with the waiters: $slots_ten at 10, $PER_HANDOVER at 200"

# A writer in the queue keeps the readers who come after it out, and once
# it is done those readers get in together: each waits inside for all five.
start_holder r0 rw --shared
queue_start_waiter w rw
writer=$WAITER_PID
pids=()
for i in 1 2 3 4 5; do
  "${DL[@]}" run --shared --wait 30s rw -- sh -c 'touch "$1.in.$0"; i=0
    while [ "$(ls "$1".in.* | wc -l)" -lt 5 ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
    [ $i -lt 500 ] && echo r >>"$1"' "$i" "$tmpdir/order.rw" </dev/null 2>>"$tmpdir/stderr.rw" &
  pids+=($!)
  track "$!"
  wait_until eval '[ "$(lock_waiters rw)" -ge '"$((i + 1))"' ]' || fail "reader $i never joined the queue behind the writer"
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

# A waiter killed in the queue (the third of five) is skipped at once, and
# one stopped at the head holds the queue up for one turn, after which it
# joins again at the end.
check_killed_waiter k 5 3
check_stopped_waiter st

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
