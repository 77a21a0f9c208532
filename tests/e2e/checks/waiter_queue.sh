# shellcheck shell=bash disable=SC2034,SC2154,SC2016 # lib.sh sets and uses what these name; wait_until evals its argument
# The waiters' queue of the Redis and Redlock backends (lib.sh sources this
# file): a release wakes the head of the queue (of each node's queue), not
# every waiter, so the work a hand-over costs the server(s) does not grow
# with the waiters, and a dead or stopped waiter at the head holds the
# others up for one turn at most. With QUEUE_FIFO=1 the waiters must also
# be served in the order they came (Redis; Redlock's nodes each keep a
# queue of their own and promise no order across them).
#
#   queue_measure W NAME [run options...]
#       W waiters join NAME one after the other behind as many holders as
#       the options admit (one; two for --limit 2); each job appends
#       "FENCE I" to $tmpdir/order.NAME. Sets PER_HANDOVER (server commands
#       per hand-over, two decimals) and TOOK (ms from the release to the
#       last waiter's exit), and prints them. With QUEUE_FIFO=1 an order
#       that is not the queue's (two slots run at once: a few places off
#       at most) is added to OUT_OF_ORDER.
#   queue_start_waiter ID NAME [run options...]
#       a waiter whose job appends ID to $tmpdir/order.NAME, in the queue
#       when this returns: WAITER_PID
#   check_killed_waiter NAME N K
#       N waiters, the K-th killed (SIGKILL) while they wait: once the
#       holder lets go, each of the others gets in within 1.5 s of the one
#       before it (its wake-up has no listener any more: no turn of 2 s or
#       lease to wait out; a gap, not the whole chain, so that a loaded
#       machine's process starts cannot add up past the bound)
#   check_stopped_waiter NAME
#       three waiters, the first stopped (SIGSTOP) as its turn comes: the
#       second gets in after that turn (2 s), not after the holder's lease
#       (30 s); the stopped one, continued, gets in too (with QUEUE_FIFO=1,
#       last: it joins again at the end)
#
# The adapter of the backend (backends/KIND.sh) gives KIND_queue_reset_stats
# and KIND_queue_commands: every command the server (or every node) ran
# since the reset, but INFO and CONFIG, those inside scripts included.

OUT_OF_ORDER=""

queue_measure() {
  local w=$1 name=$2 i pids=() total released holders=1
  shift 2
  [ "$*" = "--limit 2" ] && holders=2
  for ((i = 1; i <= holders; i++)); do start_holder "h$i$name" "$name" "$@" --ttl 30s; done
  : >"$tmpdir/order.$name"
  for ((i = 1; i <= w; i++)); do
    "${DL[@]}" run "$@" --ttl 30s --wait 120s "$name" -- sh -c 'echo "$DLOCK_FENCE $0" >>"$1"' "$i" \
      "$tmpdir/order.$name" </dev/null 2>>"$tmpdir/stderr.$name" &
    pids+=($!)
    track "$!"
    wait_until -t 30 eval '[ "$(lock_waiters "$name")" -ge '"$i"' ]' ||
      fail "waiter $i of $w on $name never showed as waiting"
  done
  "${SERVER_KIND}_queue_reset_stats"
  released=$(now_ms)
  for ((i = 1; i <= holders; i++)); do release_holder "h$i$name"; done
  for i in "${pids[@]}"; do
    wait_exit "$i" 120
    [ "$rc" = 0 ] || fail "a waiter on $name exited $rc: $(head -3 "$tmpdir/stderr.$name")"
  done
  TOOK=$(($(now_ms) - released))
  total=$("${SERVER_KIND}_queue_commands")
  PER_HANDOVER=$(awk -v t="$total" -v w="$w" 'BEGIN { printf "%.2f", t / w }')
  echo "$w waiters on $name: $total commands for $w hand-overs: $PER_HANDOVER per hand-over, all in $TOOK ms"
  [ "${QUEUE_FIFO:-0}" = 1 ] || return 0
  # With two slots waiters are woken in order, but a woken one that is slow
  # to come (a loaded machine) may be passed by those woken for the other
  # slot after it: a few places, never more (out of 200, an order that is
  # not the queue's is off by far more).
  sort -n "$tmpdir/order.$name" | cut -d' ' -f2 |
    awk -v w="$w" -v n="$holders" '{ d = $1 - NR; if (d < 0) d = -d; if (d >= (n > 1 ? 2 * n : 1)) bad = 1 } END { exit bad || NR != w }' ||
    OUT_OF_ORDER+="$w waiters on $name did not get the lock in the order they came: $(sort -n "$tmpdir/order.$name" | cut -d' ' -f2 | head -20 | tr '\n' ' '); "
}

queue_start_waiter() {
  local id=$1 name=$2 before
  shift 2
  before=$(lock_waiters "$name")
  "${DL[@]}" run "$@" --ttl 30s --wait 30s "$name" -- sh -c 'echo "$0" >>"$1"; date +%s%3N >>"$1.times"' "$id" "$tmpdir/order.$name" \
    </dev/null 2>>"$tmpdir/stderr.$name" &
  WAITER_PID=$!
  track "$WAITER_PID"
  wait_until eval '[ "$(lock_waiters "$name")" -ge '"$((before + 1))"' ]' ||
    fail "waiter $id never joined the queue of $name"
}

check_killed_waiter() {
  local name=$1 n=$2 k=$3 i pids=() released took gap want=""
  start_holder "h$name" "$name" --ttl 30s
  for ((i = 1; i <= n; i++)); do
    queue_start_waiter "$i" "$name"
    pids[i]=$WAITER_PID
    [ "$i" = "$k" ] || want+="$i "
  done
  kill -KILL "${pids[k]}"
  wait_until is_gone "${pids[k]}" || fail "the killed waiter did not end"
  wait "${pids[k]}" 2>/dev/null
  release_holder "h$name"
  released=$(now_ms) # the holder's job has ended by now
  for ((i = 1; i <= n; i++)); do
    [ "$i" = "$k" ] && continue
    wait_exit "${pids[i]}" 20
    [ "$rc" = 0 ] || fail "waiter $i exited $rc: $(cat "$tmpdir/stderr.$name")"
  done
  took=$(($(now_ms) - released))
  if [ "${QUEUE_FIFO:-0}" = 1 ]; then
    [ "$(tr '\n' ' ' <"$tmpdir/order.$name")" = "$want" ] ||
      fail "after a killed waiter: $(tr '\n' ' ' <"$tmpdir/order.$name"), expected $want"
  fi
  # The longest wait from one job (or the release) to the next one's start.
  gap=$(sort -n "$tmpdir/order.$name.times" |
    awk -v t="$released" '{ if ($1 - t > g) g = $1 - t; t = $1 } END { print g + 0 }')
  [ "$gap" -lt 1500 ] ||
    fail "a live waiter got in ${gap} ms after the one before it, past a killed one (waiter $k of $n): it waited out a turn"
  echo "$((n - 1)) waiters went past a killed one (waiter $k of $n) in ${took} ms, at most ${gap} ms apart"
}

check_stopped_waiter() {
  local name=$1 i pids=() released took
  start_holder "h$name" "$name" --ttl 30s
  for i in 1 2 3; do
    queue_start_waiter "$i" "$name"
    pids[i]=$WAITER_PID
  done
  kill -STOP "${pids[1]}"
  released=$(now_ms)
  release_holder "h$name"
  wait_exit "${pids[2]}" 20
  took=$(($(now_ms) - released))
  [ "$rc" = 0 ] || fail "waiter 2 exited $rc behind a stopped one: $(cat "$tmpdir/stderr.$name")"
  wait_exit "${pids[3]}" 20
  kill -CONT "${pids[1]}"
  wait_exit "${pids[1]}" 20
  [ "$rc" = 0 ] || fail "the stopped waiter exited $rc once it went on: $(cat "$tmpdir/stderr.$name")"
  if [ "${QUEUE_FIFO:-0}" = 1 ]; then
    # The next one is told it is next and tries once the turn could have
    # run out.
    [ "$(tr '\n' ' ' <"$tmpdir/order.$name")" = "2 3 1 " ] ||
      fail "around a stopped waiter: $(tr '\n' ' ' <"$tmpdir/order.$name")"
    [ "$took" -ge 1900 ] || fail "the waiter behind a stopped one got in after ${took} ms, before its turn (2 s) ran out"
  fi
  [ "$took" -lt 5000 ] || fail "the waiter behind a stopped one got in after ${took} ms (a turn is 2 s)"
  echo "a stopped waiter at the head held the others up for ${took} ms"
}
