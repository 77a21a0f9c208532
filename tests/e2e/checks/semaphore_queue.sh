# shellcheck shell=bash disable=SC2034,SC2154,SC2016 # lib.sh sets and uses what these name; wait_until evals its argument
# The queue of a semaphore's waiters (--limit N) on backends where only the
# first waiter looks at the slots and the others wait behind it, asleep
# (file: NAME.queue and inotify; postgres: the key of 'NS NAME queue' and
# LISTEN/NOTIFY). lib.sh sources this file.
#
# check_semaphore_queue [run options...]: every run gets the options.
#   1. Three slots held, one waiter: the release of a slot it does not
#      itself wait on reaches it at once (an old waiter rescanned the slots
#      every 250-750 ms). Five rounds, one may be slow.
#   2. Two slots held, six waiters: one looks at the slots, five wait
#      behind it and do not wake while nothing is released; a release
#      serves one and moves the queue up by one; where the adapter can name
#      the first waiter, it is killed (SIGTERM) and the next moves up; the
#      next release reaches the new first waiter at once; with
#      SEM_QUEUE_FIFO=1 they are served in the order they came.
#   3. A first waiter whose --wait ends leaves the queue, and the one behind
#      it is served at the next release.
#
# The adapter of the backend (backends/KIND.sh) gives:
#   KIND_sem_waiting NAME N       prints "FRONT BEHIND": the waiters that
#                                 look at NAME's N slots, and those queued
#                                 behind them
#   KIND_sem_slot_waited NAME K   succeeds if a waiter waits on slot K itself
#   KIND_sem_front_pid NAME       (optional) the first waiter's dlock pid

# _sq_hold NAME N I: holder I of a semaphore of N on NAME, whose job writes
# its slot to $tmpdir/NAME.I.slot and ends when $tmpdir/NAME.I is written to.
_sq_hold() {
  mkfifo "$tmpdir/$1.$3"
  # shellcheck disable=SC2016 # expanded by the job's shell
  "${DL[@]}" run --limit "$2" "${_sq_options[@]}" "$1" -- sh -c \
    'echo "$DLOCK_SLOT" >"$1.slot.tmp"; mv "$1.slot.tmp" "$1.slot"; read -r _ <"$1"' sh "$tmpdir/$1.$3" \
    </dev/null 2>>"$tmpdir/err" &
  track $!
  wait_until test -s "$tmpdir/$1.$3.slot" || fail "holder $3 of $1 never held a slot: $(cat "$tmpdir/err")"
}
_sq_let_go() { echo >"$tmpdir/$1.$2"; }
_sq_shape() { "${SERVER_KIND}_sem_waiting" "$1" "$2"; }
# _sq_count NAME N: all the waiters, those at the slots and those behind.
_sq_count() {
  local front behind
  read -r front behind < <(_sq_shape "$1" "$2")
  echo $((front + behind))
}
# _sq_timed NAME N WAIT: a waiter on NAME whose job writes the time it
# started to $tmpdir/NAME.started; its pid in _sq_pid.
_sq_timed() {
  # shellcheck disable=SC2016 # expanded by the job's shell
  "${DL[@]}" run --limit "$2" "${_sq_options[@]}" --wait "$3" "$1" -- sh -c 'date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1"' \
    sh "$tmpdir/$1.started" </dev/null 2>>"$tmpdir/err" &
  _sq_pid=$!
  track "$_sq_pid"
}
# _sq_switches: the voluntary context switches of each waiter's main
# thread, in the array _sq_seen.
_sq_switches() {
  local pid
  _sq_seen=()
  for pid in "${_sq_waiters[@]}"; do
    _sq_seen+=("$(awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo gone)")
  done
}
# _sq_woken: how many waiters switched since _sq_before.
_sq_woken() {
  local k n=0
  _sq_switches
  for k in "${!_sq_waiters[@]}"; do [ "${_sq_seen[$k]}" = "${_sq_before[$k]}" ] || n=$((n + 1)); done
  echo "$n"
}

check_semaphore_queue() {
  _sq_options=("$@")
  local round name i j delays=() fourth released_at front served_in n pid first second delay
  : >"$tmpdir/err"

  # 1.
  for round in 1 2 3 4 5; do
    name=r$round
    for i in 0 1 2; do _sq_hold "$name" 3 "$i"; done
    _sq_timed "$name" 3 20s
    wait_until eval '[ "$(_sq_shape "$name" 3)" = "1 0" ]' ||
      fail "the waiter on $name never waited (waiting: $(_sq_shape "$name" 3))"
    for i in 0 1 2; do
      "${SERVER_KIND}_sem_slot_waited" "$name" "$(cat "$tmpdir/$name.$i.slot")" || break
    done
    released_at=$(now_ms)
    _sq_let_go "$name" "$i"
    wait_exit "$_sq_pid" 20
    [ "$rc" = 0 ] || fail "the waiter on $name exited $rc: $(tail -3 "$tmpdir/err")"
    delays+=($(($(cat "$tmpdir/$name.started") - released_at)))
    for j in 0 1 2; do [ "$j" = "$i" ] || _sq_let_go "$name" "$j"; done
  done
  fourth=$(printf '%s\n' "${delays[@]}" | sort -n | sed -n 4p)
  echo "hand-over from a slot the waiter did not wait on: ${delays[*]} ms"
  [ "$fourth" -le 150 ] ||
    fail "a release of a slot the waiter did not wait on reached it late: ${delays[*]} ms (4 of 5 within 150 ms expected)"

  # 2.
  for i in 1 2; do _sq_hold h 2 "$i"; done
  _sq_waiters=()
  : >"$tmpdir/h.queued"
  : >"$tmpdir/h.served"
  for i in 1 2 3 4 5 6; do
    mkfifo "$tmpdir/h.w$i"
    # shellcheck disable=SC2016 # expanded by the job's shell
    "${DL[@]}" run --limit 2 "${_sq_options[@]}" --wait 60s h -- sh -c 'echo "$1" >>"$2"; read -r _ <"$3"' sh "$i" \
      "$tmpdir/h.served" "$tmpdir/h.w$i" </dev/null 2>>"$tmpdir/err" &
    _sq_waiters+=($!)
    track $!
    echo "$i" >>"$tmpdir/h.queued"
    # (The first waiter is out of its wait for a moment when it looks at
    # the slots again, after a newcomer's first try.)
    wait_until eval '[ "$(_sq_count h 2)" = '"$i"' ]' ||
      fail "waiter $i of h never queued (waiting: $(_sq_shape h 2))"
  done
  wait_until eval '[ "$(_sq_shape h 2)" = "1 5" ]' ||
    fail "h's waiters: $(_sq_shape h 2) look at the slots and wait behind, expected 1 and 5"
  [ "$(lock_waiters h)" = 6 ] || fail "status h counts $(lock_waiters h) waiters, expected 6"
  _sq_switches
  _sq_before=("${_sq_seen[@]}")
  sleep 1.2 # a window in which a polling waiter would wake
  n=$(_sq_woken)
  [ "$n" -le 1 ] || fail "$n of 6 waiters woke in 1.2 s without a release: they poll"
  _sq_switches
  _sq_before=("${_sq_seen[@]}")
  _sq_let_go h 1
  wait_until eval '[ "$(wc -l <"$tmpdir/h.served")" = 1 ] && [ "$(_sq_shape h 2)" = "1 4" ]' ||
    fail "after one release h's queue did not move up by one (waiting: $(_sq_shape h 2))"
  n=$(_sq_woken)
  [ "$n" -le 2 ] || fail "one release woke $n of 6 waiters (counting the one served), expected at most 2"
  front=
  if declare -F "${SERVER_KIND}_sem_front_pid" >/dev/null; then
    front=$("${SERVER_KIND}_sem_front_pid" h)
    [ -n "$front" ] || fail "no first waiter on h while waiters wait"
    kill -TERM "$front"
    wait_exit "$front" 10
    for i in "${!_sq_waiters[@]}"; do
      [ "${_sq_waiters[$i]}" = "$front" ] && sed -i "/^$((i + 1))\$/d" "$tmpdir/h.queued"
    done
    wait_until eval '[ "$(_sq_shape h 2)" = "1 3" ]' ||
      fail "the waiters behind one killed with SIGTERM did not move up (waiting: $(_sq_shape h 2))"
  fi
  released_at=$(now_ms)
  _sq_let_go h 2
  wait_until eval '[ "$(wc -l <"$tmpdir/h.served")" = 2 ]' || fail "the second release of h served nobody"
  served_in=$(($(now_ms) - released_at))
  [ "$served_in" -le 1000 ] || fail "the next waiter took $served_in ms to be served"
  # The rest, as the served let go.
  for ((n = 1; n <= $(wc -l <"$tmpdir/h.queued"); n++)); do
    wait_until -t 20 eval '[ "$(wc -l <"$tmpdir/h.served")" -ge '"$n"' ]' ||
      fail "h served $(wc -l <"$tmpdir/h.served") of its waiters"
    _sq_let_go h "w$(sed -n "${n}p" "$tmpdir/h.served")"
  done
  for pid in "${_sq_waiters[@]}"; do
    [ "$pid" = "$front" ] && continue
    wait_exit "$pid" 30
    [ "$rc" = 0 ] || fail "a waiter on h exited $rc: $(tail -3 "$tmpdir/err")"
  done
  if [ "${SEM_QUEUE_FIFO:-0}" = 1 ]; then
    cmp -s "$tmpdir/h.queued" "$tmpdir/h.served" ||
      fail "h's waiters were served in the order $(tr '\n' ' ' <"$tmpdir/h.served"), not as they queued"
  fi

  # 3.
  for i in 1 2; do _sq_hold g 2 "$i"; done
  # (Long enough for the second to queue behind it, and for the looks at
  # the queue to see both, on a loaded machine: 3 s was not, in CI, where
  # each look at PostgreSQL's queue ran psql several times.)
  "${DL[@]}" run --limit 2 "${_sq_options[@]}" --wait 6s g -- true </dev/null 2>/dev/null &
  first=$!
  track "$first"
  wait_until eval '[ "$(_sq_shape g 2)" = "1 0" ]' || fail "the first waiter on g never waited"
  _sq_timed g 2 20s
  second=$_sq_pid
  wait_until eval '[ "$(_sq_shape g 2)" = "1 1" ]' || fail "the second waiter on g never queued"
  wait_exit "$first" 10
  [ "$rc" = 75 ] || fail "a waiter with --wait 6s exited $rc, expected 75"
  wait_until eval '[ "$(_sq_shape g 2)" = "1 0" ]' || fail "the waiter behind one that timed out did not move up"
  released_at=$(now_ms)
  _sq_let_go g 1
  wait_exit "$second" 20
  [ "$rc" = 0 ] || fail "the second waiter on g exited $rc"
  delay=$(($(cat "$tmpdir/g.started") - released_at))
  [ "$delay" -le 1000 ] || fail "the waiter that moved up after a timeout took $delay ms to be served"
  _sq_let_go g 2
  [ ! -s "$tmpdir/err" ] || fail "dlock printed on stderr: $(head -3 "$tmpdir/err")"
}
