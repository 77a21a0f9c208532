#!/usr/bin/env bash
# Redis semaphore (--limit N): 12 contenders `dlock run --limit 3 --wait`
# never have more than 3 jobs in the section at once, all get in, the
# fences differ and no two jobs inside at once have the same DLOCK_SLOT
# (0, 1 or 2); a name held with --limit 3 refuses --limit 4 and an
# exclusive lock (78); a token of a slot renews from another process; and a
# holder killed with SIGKILL keeps its slot only until its lease runs out.
SCENARIO="redis: semaphore --limit 3"
. "$(dirname "$0")/lib.sh"
use_redis

# The section: counts itself in and out under flock, records the most
# jobs ever inside at once, its fence and its slot, and holds its slot's
# marker directory while inside. $1 = scratch dir.
cat >"$tmpdir/section.sh" <<'SCRIPT'
d=$1
case ${DLOCK_SLOT-none} in 0 | 1 | 2) ;; *) echo "DLOCK_SLOT=${DLOCK_SLOT-unset}" >>"$d/bad_slots" ;; esac
mkdir "$d/slot.${DLOCK_SLOT-none}" 2>/dev/null || echo "slot ${DLOCK_SLOT-none} twice at once" >>"$d/bad_slots"
flock "$d/count.lock" sh -c 'read n <"$1/inside"; n=$((n + 1)); echo $n >"$1/inside"
read m <"$1/max"; [ "$n" -gt "$m" ] && echo $n >"$1/max"; echo "$DLOCK_FENCE" >>"$1/fences"' sh "$d"
sleep 0.3
flock "$d/count.lock" sh -c 'read n <"$1/inside"; echo $((n - 1)) >"$1/inside"' sh "$d"
rmdir "$d/slot.${DLOCK_SLOT-none}"
SCRIPT
echo 0 >"$tmpdir/inside"
echo 0 >"$tmpdir/max"
: >"$tmpdir/fences"
: >"$tmpdir/failures"
: >"$tmpdir/stderr"
: >"$tmpdir/bad_slots"
pids=()
for i in $(seq 1 12); do
  (
    "${DL[@]}" run --limit 3 --wait 20s sem -- sh "$tmpdir/section.sh" "$tmpdir" </dev/null 2>>"$tmpdir/stderr"
    status=$?
    [ "$status" = 0 ] || echo "contender $i: dlock exited $status" >>"$tmpdir/failures"
  ) &
  pids+=($!)
done
track "${pids[@]}"
for pid in "${pids[@]}"; do
  wait_exit "$pid" 40
done
[ ! -s "$tmpdir/failures" ] || fail "$(head -3 "$tmpdir/failures"); stderr: $(head -3 "$tmpdir/stderr")"
[ ! -s "$tmpdir/stderr" ] || fail "dlock printed on stderr: $(head -3 "$tmpdir/stderr")"
max=$(cat "$tmpdir/max")
[ "$max" -le 3 ] || fail "$max jobs were in the section of a semaphore of 3 at once"
[ "$max" = 3 ] || fail "at most $max jobs were in the section at once: the semaphore of 3 let fewer in"
[ ! -s "$tmpdir/bad_slots" ] || fail "slots: $(sort -u "$tmpdir/bad_slots" | head -3 | tr '\n' ';')"
[ "$(wc -l <"$tmpdir/fences")" = 12 ] || fail "$(wc -l <"$tmpdir/fences") of the 12 jobs ran"
[ "$(sort -u "$tmpdir/fences" | wc -l)" = 12 ] || fail "two slots got the same fence: $(sort "$tmpdir/fences" | uniq -d)"
for part in sem sem-info sem-free; do
  [ "$("$RCLI" EXISTS "$(redis_key sem "$part")")" = 0 ] || fail "$(redis_key sem "$part") is left after the last run"
done
listening=$("$RCLI" PUBSUB CHANNELS "$(redis_key sem queue):*")
[ -z "$listening" ] || fail "waiters still listen after the last run: $listening"
[ "$("$RCLI" EXISTS "$(redis_key sem queue)")" = 0 ] || fail "$(redis_key sem queue) is left after the last run"
echo "12 runs, at most $max at once"

# Three holders fill the semaphore, one after the other (slots 0, 1, 2);
# the first has a 4 s lease (at least 2.6 s of it left at any kill: room
# for a status call on a loaded machine, which 1 s did not always leave).
start_holder k k --limit 3 --ttl 4s
killed_pid=$HOLDER_PID
start_holder h2 k --limit 3
start_holder h3 k --limit 3
capture "${DL[@]}" status k --json
[ "$rc" = 0 ] || fail "status k exited $rc; stderr: $err"
[ "$(printf '%s' "$out" | json '[d["mode"], d["limit"], sorted(h["slot"] for h in d["holders"])]')" = \
  '["semaphore", 3, [0, 1, 2]]' ] || fail "status k --json does not show a semaphore of 3 with slots 0, 1, 2: $out"
case $out in *sem-*) fail "status shows a semaphore token: $out" ;; esac
capture "${DL[@]}" run k -- true
[ "$rc" = 78 ] || fail "an exclusive run on a semaphore of 3 exited $rc, expected 78; stderr: $err"
assert_one_line_message "an exclusive run on a semaphore" "$err"
case $err in *"semaphore of 3"*) ;; *) fail "the refusal does not name the semaphore of 3: $err" ;; esac
capture "${DL[@]}" run --limit 4 k -- true
[ "$rc" = 78 ] || fail "run --limit 4 on a semaphore of 3 exited $rc, expected 78; stderr: $err"
capture "${DL[@]}" run --limit 3 k -- true
[ "$rc" = 75 ] || fail "a fourth run --limit 3 on a full semaphore exited $rc, expected 75; stderr: $err"

# A slot's token, rebuilt in another process: renew works, a forged one is
# not the owner.
capture "${DL[@]}" renew k "$(cat "$tmpdir/h2.token")" --ttl 20s
[ "$rc" = 0 ] || fail "renew of a slot with its DLOCK_TOKEN exited $rc; stderr: $err"
capture "${DL[@]}" release k "sem-00000000000000000000000000000000"
[ "$rc" = 3 ] || fail "release with a forged semaphore token exited $rc, expected 3; stderr: $err"

# SIGKILL of the first holder's dlock: its slot stays taken until its 4 s
# lease runs out, then a waiter gets it, slot 0.
kill -KILL "$killed_pid"
killed=$(now_ms)
[ "$("${DL[@]}" status k --json | json 'len(d["holders"])')" = 3 ] ||
  fail "the killed holder's slot was freed before its lease ran out"
# shellcheck disable=SC2016 # expanded by the job's shell
capture "${DL[@]}" run --limit 3 --wait 20s k -- sh -c 'echo "$DLOCK_SLOT"'
waited=$(($(now_ms) - killed))
[ "$rc" = 0 ] || fail "a waiter for the killed holder's slot exited $rc; stderr: $err"
[ "$out" = 0 ] || fail "the waiter got DLOCK_SLOT=$out, not the killed holder's slot 0"
[ "$waited" -lt 7000 ] || fail "the killed holder's 4 s slot was free only after ${waited} ms"
echo "the killed holder's slot was taken again ${waited} ms after kill -9"
release_holder h2
release_holder h3
wait_until is_free k || fail "k is still held after its holders ended"
pass
