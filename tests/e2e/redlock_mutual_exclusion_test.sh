#!/usr/bin/env bash
# 8 workers x 20 `dlock run --wait` of one critical section on one Redlock
# lock over 5 nodes: exactly 160 entries, never two at once, fences strictly
# increasing; afterwards no lock key and no waiter is left on any node.
SCENARIO="redlock mutual exclusion"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

workers=8
rounds=20
echo 0 >"$tmpdir/counter"
: >"$tmpdir/fences"
: >"$tmpdir/overlaps"
: >"$tmpdir/failures"

# The critical section: $1 = scratch dir, $2 = sleep seconds.
cat >"$tmpdir/critical.sh" <<'SCRIPT'
d=$1
if ! mkdir "$d/inside" 2>/dev/null; then
  echo "overlap fence=$DLOCK_FENCE" >>"$d/overlaps"
fi
read n <"$d/counter"
sleep "$2"
echo $((n + 1)) >"$d/counter"
echo "$DLOCK_FENCE" >>"$d/fences"
rmdir "$d/inside" 2>/dev/null
exit 0
SCRIPT

worker() {
  local i rc
  for ((i = 0; i < rounds; i++)); do
    "${DL[@]}" run c --wait 40s -- sh "$tmpdir/critical.sh" "$tmpdir" "0.00$((RANDOM % 6))" </dev/null
    rc=$?
    [ "$rc" = 0 ] || echo "worker $1 round $i: dlock exited $rc" >>"$tmpdir/failures"
  done
}

started=$(now_ms)
pids=()
for ((w = 0; w < workers; w++)); do
  worker "$w" 2>>"$tmpdir/stderr" &
  pids+=($!)
done
track "${pids[@]}"
for pid in "${pids[@]}"; do
  wait_until -t 45 is_gone "$pid" || fail "worker $pid did not finish in time (count so far $(cat "$tmpdir/counter"))"
  wait "$pid"
done
elapsed=$(($(now_ms) - started))

[ ! -s "$tmpdir/failures" ] || fail "some runs failed: $(head -5 "$tmpdir/failures"); stderr: $(head -3 "$tmpdir/stderr")"
[ ! -s "$tmpdir/overlaps" ] || fail "$(wc -l <"$tmpdir/overlaps") critical sections overlapped: $(head -3 "$tmpdir/overlaps")"
count=$(cat "$tmpdir/counter")
[ "$count" = $((workers * rounds)) ] || fail "counter is $count, expected $((workers * rounds)) (lost updates)"
[ ! -s "$tmpdir/stderr" ] || fail "dlock printed on stderr: $(head -3 "$tmpdir/stderr")"
python3 - "$tmpdir/fences" $((workers * rounds)) <<'PY' || fail "fences are not strictly increasing in lock order"
import sys
fences = [int(line) for line in open(sys.argv[1])]
assert len(fences) == int(sys.argv[2]), len(fences)
assert all(b > a for a, b in zip(fences, fences[1:]))
PY
[ "$(nodes_with_key "$(redis_key c lock)")" = 0 ] || fail "the lock key is left on $(nodes_with_key "$(redis_key c lock)") nodes after the last run"
left=$(subscribers c)
[ "$left" = 0 ] || fail "$left waiters are still subscribed to $(redis_key c released) after the last run"
echo "$((workers * rounds)) locked increments in ${elapsed} ms"
pass
