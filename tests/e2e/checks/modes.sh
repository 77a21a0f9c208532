# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The checks of semaphores (--limit N) and shared locks (--shared) every
# backend that offers them must pass (lib.sh sources this file).

# check_semaphore WORKERS LIMIT NAME [run options...]: WORKERS background
# `dlock run --limit LIMIT NAME [options]` at once, each over a section that
# counts who is inside (under flock(1) of a counter file of its own) and
# stays 50-150 ms. Fails if more than LIMIT are ever inside, if fewer than
# two ever are (the slots would not be shared), if two holders share a
# DLOCK_SLOT at once or a slot's fences do not increase (any fence repeats), if a run exits
# non-zero or prints on stderr, or if the workers are not done within 60 s.
check_semaphore() {
  local workers=$1 limit=$2 name=$3 w pid pids=()
  shift 3
  echo 0 >"$tmpdir/sem.inside"
  local f
  for f in peaks slots failures stderr; do : >"$tmpdir/sem.$f"; done
  cat >"$tmpdir/sem.sh" <<'SCRIPT'
d=$1
flock "$d/sem.count" sh -c 'n=$(($(cat "$1/sem.inside") + 1)); echo $n >"$1/sem.inside"; echo $n >>"$1/sem.peaks"
  echo "${DLOCK_SLOT:-none} $DLOCK_FENCE" >>"$1/sem.slots"' sh "$d"
if [ -n "${DLOCK_SLOT:-}" ] && ! mkdir "$d/sem.slot-$DLOCK_SLOT" 2>/dev/null; then
  echo "slot $DLOCK_SLOT held twice (fence $DLOCK_FENCE)" >>"$d/sem.failures"
fi
sleep "0.$((5 + $$ % 10))"
[ -z "${DLOCK_SLOT:-}" ] || rmdir "$d/sem.slot-$DLOCK_SLOT"
flock "$d/sem.count" sh -c 'echo $(($(cat "$1/sem.inside") - 1)) >"$1/sem.inside"' sh "$d"
SCRIPT
  for ((w = 0; w < workers; w++)); do
    (
      "${DL[@]}" run --limit "$limit" "$name" "$@" -- sh "$tmpdir/sem.sh" "$tmpdir" </dev/null 2>>"$tmpdir/sem.stderr"
      status=$?
      [ "$status" = 0 ] || echo "worker $w: dlock exited $status" >>"$tmpdir/sem.failures"
    ) &
    pids+=($!)
  done
  track "${pids[@]}"
  for pid in "${pids[@]}"; do
    wait_until -t 60 is_gone "$pid" || fail "semaphore worker $pid did not finish in time"
    wait "$pid"
  done
  [ ! -s "$tmpdir/sem.failures" ] || fail "$(head -3 "$tmpdir/sem.failures"); stderr: $(head -3 "$tmpdir/sem.stderr")"
  [ ! -s "$tmpdir/sem.stderr" ] || fail "dlock printed on stderr: $(head -3 "$tmpdir/sem.stderr")"
  [ "$(wc -l <"$tmpdir/sem.peaks")" = "$workers" ] || fail "$(wc -l <"$tmpdir/sem.peaks") of $workers jobs ran"
  local peak
  peak=$(sort -n "$tmpdir/sem.peaks" | tail -1)
  [ "$peak" -le "$limit" ] || fail "$peak jobs were inside a semaphore of $limit at once"
  [ "$peak" -ge 2 ] || fail "never more than one job inside a semaphore of $limit: its slots are not shared"
  python3 - "$tmpdir/sem.slots" <<'PY' || fail "a fence was handed out twice, or a slot's fences do not increase in the order its holders came in"
import sys
last, seen = {}, set()
for line in open(sys.argv[1]):
    slot, fence = line.split()
    assert fence not in seen, "fence %s handed out twice" % fence
    seen.add(fence)
    # Without slot numbers, holders that got in together may note their
    # entry in either order: only distinct fences can be checked.
    if slot != "none":
        assert int(fence) > last.get(slot, 0), line
        last[slot] = int(fence)
PY
  echo "$workers jobs through a semaphore of $limit, at most $peak inside at once"
}

# check_readers_writer NAME [run options...]: two readers (`run --shared`)
# hold NAME together; a writer (`run`, no flag) is busy meanwhile, and one
# that waits gets the lock only once both readers are done, with a fence
# above theirs; while it holds the lock a reader is busy.
check_readers_writer() {
  local name=$1 r1 r2 writer
  shift
  mkfifo "$tmpdir/rw.go1" "$tmpdir/rw.go2" "$tmpdir/rw.gow"
  # shellcheck disable=SC2016 # expanded by the job's shell
  local reader='echo "$DLOCK_FENCE" >"$1.fence"; touch "$1.in"; read -r _ <"$1"; rm "$1.in"'
  "${DL[@]}" run --shared "$name" "$@" -- sh -c "$reader" sh "$tmpdir/rw.go1" </dev/null 2>"$tmpdir/rw.err1" &
  r1=$!
  track "$r1"
  wait_until test -e "$tmpdir/rw.go1.in" || fail "the first reader did not get $name: $(cat "$tmpdir/rw.err1")"
  "${DL[@]}" run --shared "$name" "$@" -- sh -c "$reader" sh "$tmpdir/rw.go2" </dev/null 2>"$tmpdir/rw.err2" &
  r2=$!
  track "$r2"
  wait_until test -e "$tmpdir/rw.go2.in" ||
    fail "a second reader did not get $name while the first held it: $(cat "$tmpdir/rw.err2")"
  capture "${DL[@]}" run "$name" "$@" -- true
  [ "$rc" = 75 ] || fail "a writer ran beside two readers of $name: exit $rc, expected 75 (busy)"

  # shellcheck disable=SC2016
  "${DL[@]}" run "$name" --wait 20s "$@" -- sh -c '[ ! -e "$1/rw.go1.in" ] && [ ! -e "$1/rw.go2.in" ] || exit 9
    echo "$DLOCK_FENCE" >"$1/rw.writer.fence"; touch "$1/rw.writer.in"; read -r _ <"$1/rw.gow"' sh "$tmpdir" \
    </dev/null 2>"$tmpdir/rw.errw" &
  writer=$!
  track "$writer"
  wait_until has_waiter "$name" || fail "the writer never waited for $name"
  echo >"$tmpdir/rw.go1"
  wait_exit "$r1"
  [ "$rc" = 0 ] || fail "the first reader exited $rc"
  [ ! -e "$tmpdir/rw.writer.in" ] || fail "the writer got $name while a reader still held it"
  echo >"$tmpdir/rw.go2"
  wait_exit "$r2"
  [ "$rc" = 0 ] || fail "the second reader exited $rc"
  wait_until test -e "$tmpdir/rw.writer.in" || fail "the writer did not get $name once the readers left: $(cat "$tmpdir/rw.errw")"
  capture "${DL[@]}" run --shared "$name" "$@" -- true
  [ "$rc" = 75 ] || fail "a reader ran beside the writer of $name: exit $rc, expected 75 (busy)"
  local fw f1 f2
  fw=$(cat "$tmpdir/rw.writer.fence") f1=$(cat "$tmpdir/rw.go1.fence") f2=$(cat "$tmpdir/rw.go2.fence")
  [ "$f1" != "$f2" ] || fail "both readers got fence $f1: each holder needs its own"
  if [ "$fw" -le "$f1" ] || [ "$fw" -le "$f2" ]; then
    fail "the writer's fence $fw is not above the readers' $f1 and $f2"
  fi
  echo >"$tmpdir/rw.gow"
  wait_exit "$writer"
  [ "$rc" = 0 ] || fail "the writer exited $rc: $(cat "$tmpdir/rw.errw")"
}

# The checks of a shared lock's readers that the Redis and Redlock tests
# share (redis_shared_test.sh, redlock_shared_test.sh).

# readers NAME: how many readers status NAME --json lists (-1: no answer).
readers() { "${DL[@]}" status "$1" --json 2>/dev/null | json 'len(d.get("holders") or [])' 2>/dev/null || echo -1; }
has_readers() { [ "$(readers "$1")" = "$2" ]; }

# check_two_readers_shown NAME: while two readers hold NAME, status --json
# shows a shared lock with two holders, each with a fence of its own and
# neither with its token, and list --json shows NAME.
check_two_readers_shown() {
  local name=$1
  capture "${DL[@]}" status "$name" --json
  [ "$rc" = 0 ] || fail "status $name exited $rc; stderr: $err"
  [ "$(printf '%s' "$out" | json '[d["mode"], len(d["holders"]), len(set(h["fence"] for h in d["holders"]))]')" = \
    '["shared", 2, 2]' ] || fail "status $name --json does not show two readers with fences of their own: $out"
  case $out in *rd-*) fail "status shows a reader's token: $out" ;; esac
  capture "${DL[@]}" list --json
  case $out in *"\"$name\""*) ;; *) fail "list does not show $name, held only by readers: $out" ;; esac
}

# check_reader_token NAME ID: the DLOCK_TOKEN of start_holder ID, a reader
# of NAME, renews it from another process; a forged reader's token releases
# nothing (3).
check_reader_token() {
  local name=$1 id=$2
  capture "${DL[@]}" renew "$name" "$(cat "$tmpdir/$id.token")" --ttl 1s
  [ "$rc" = 0 ] || fail "renew of a reader with its DLOCK_TOKEN exited $rc; stderr: $err"
  capture "${DL[@]}" release "$name" "rd-00000000000000000000000000000000"
  [ "$rc" = 3 ] || fail "release with a forged reader token exited $rc, expected 3; stderr: $err"
}

# check_killed_reader_lapses NAME PID: PID is the dlock of one of two
# readers of NAME, each with a 1 s lease. After its kill -9 its share counts
# until its own lease runs out (under 3 s), not as long as the other reader
# renews.
check_killed_reader_lapses() {
  local name=$1 pid=$2 killed gone
  kill -KILL "$pid"
  killed=$(now_ms)
  wait_until -t 5 has_readers "$name" 1 ||
    fail "the killed reader still counts 5 s after kill -9: $(readers "$name") readers"
  gone=$(($(now_ms) - killed))
  [ "$gone" -lt 3000 ] || fail "the killed reader's 1 s share lapsed only after ${gone} ms"
  echo "the killed reader stopped counting ${gone} ms after kill -9"
}
