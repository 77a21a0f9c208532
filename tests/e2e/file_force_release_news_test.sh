#!/usr/bin/env bash
# File backend: `release --force` (or a lock file removed by hand) reaches
# the holder at once, not at its next renewal. Locks are taken for an hour
# (-t 1h: renewals every 20 minutes), so only the backend's news (an
# inotify watch on the held lock file, event_fd) can stop them in time:
# Times are counted from the moment release --force returns, and bounded
# by 2 s: at once on a loaded machine, whose looks at the processes cost
# tens of ms each, and far from the next renewal, 20 minutes away.
#   - a `dlock run` job is stopped within 2 s, dlock exits 76 with one
#     line naming the cause;
#   - the keeper of `dlock acquire` is gone within 2 s;
#   - so are every reader of --shared and every slot of --limit N, and
#     release --force says how many it broke, the first and their fence;
#   - a lock file removed by hand stops its holder the same way, and so
#     does a semaphore's slot file; a taker waiting for a slot through
#     release --force starts over on the new files and keeps its lock;
#   - the news is quiet while nothing happens: a held lock stays held and
#     its job runs (renewals write the record; others read it).
SCENARIO="file: release --force stops the holder at once"
. "$(dirname "$0")/lib.sh"

# dlock run -t 1h: stopped within 2 s of release --force.
start_job forced --ttl 1h
fence=$("${DL[@]}" status forced --json | json 'd["fence"]')
# Others looking at the lock are no news.
for _ in 1 2 3; do "${DL[@]}" status forced >/dev/null; "${DL[@]}" run forced -- true >/dev/null 2>&1; done
"${DL[@]}" list >/dev/null
is_alive "$JOB_PID" || fail "the job of a lock nobody broke ended: $(cat "$tmpdir/job.err")"
started=$(now_ms)
capture "${DL[@]}" release forced --force
forced=$(now_ms) # the lock is broken by the time release --force returns
echo "release --force took $((forced - started)) ms"
[ "$rc" = 0 ] || fail "release --force exited $rc; stderr: $err"
case $out$err in *"$JOB_DLOCK_PID"*) ;; *) fail "release --force does not say who held the lock (pid $JOB_DLOCK_PID): $out $err" ;; esac
check_job_stopped "$forced" 2000 "release --force"
grep -qiE 'replaced|removed|force' "$tmpdir/job.err" || fail "the holder's message does not name the cause: $(cat "$tmpdir/job.err")"
capture "${DL[@]}" run forced -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] && [ "$out" -gt "$fence" ] || fail "the next run exited $rc with fence '$out', not above $fence"

# The keeper of acquire -t 1h: gone within 2 s.
acquire_bg kept -t 1h
capture "${DL[@]}" release kept --force
forced=$(now_ms)
[ "$rc" = 0 ] || fail "release --force of the acquired lock exited $rc; stderr: $err"
wait_until -t 5 is_gone "$keeper" || fail "the keeper $keeper was still running 5 s after release --force (-t 1h)"
gone=$(($(now_ms) - forced))
echo "keeper gone ${gone} ms after release --force"
[ "$gone" -lt 2000 ] || fail "the keeper was gone only ${gone} ms after release --force, not within 2 s"
capture "${DL[@]}" renew kept "$token"
[ "$rc" = 3 ] || fail "renew with the broken lock's token exited $rc, expected 3"

# A name with several holders (the readers of --shared, the slots of
# --limit N): release --force breaks them all and says how many, the
# longest-standing one and the highest fence it broke.
for mode in shared limit; do
  opts=(--shared) what="2 readers"
  [ $mode = limit ] && opts=(--limit 3) what="2 holders of 3 slots"
  start_holder "$mode.1" "$mode" "${opts[@]}" --ttl 1h
  first=$HOLDER_PID
  start_holder "$mode.2" "$mode" "${opts[@]}" --ttl 1h
  doc=$("${DL[@]}" status "$mode" --json)
  host=$(json 'd["holders"][0]["host"]' <<<"$doc")
  highest=$(json 'max(h["fence"] for h in d["holders"])' <<<"$doc")
  capture "${DL[@]}" release "$mode" --force
  [ "$rc" = 0 ] || fail "release --force of a name with $what exited $rc; stderr: $err"
  expected="broke lock '$mode' held by $what, the first pid $first on $host, the highest fence $highest"
  [ "$out" = "$expected" ] || fail "release --force of a name with $what printed '$out', expected '$expected'"
  wait_until -t 5 is_gone "$first" || fail "the first of $what was still running 5 s after release --force"
  wait_until -t 5 is_gone "$HOLDER_PID" || fail "the second of $what was still running 5 s after release --force"
  is_free "$mode" || fail "$mode is still held after release --force"
done

# A lock file removed by hand: the same.
start_job removed --ttl 1h
removed=$(now_ms)
rm "$LOCKDIR/dlock/removed.lock"
check_job_stopped "$removed" 2000 "rm of the lock file"

# A semaphore's slot file removed by hand: its holder is stopped the same
# way (issue 34 point 4: it ran on beside a second holder of that slot,
# who made and locked a new slot file), and the slot is taken again.
start_job slotted --ttl 1h --limit 1
removed=$(now_ms)
rm "$LOCKDIR/dlock/slotted.slot0"
check_job_stopped "$removed" 2000 "rm of the slot file"
capture "${DL[@]}" run --limit 1 slotted -- true
[ "$rc" = 0 ] || fail "the slot was not taken again after its holder stopped: exit $rc; stderr: $err"

# release --force under a waiting semaphore taker: the taker starts over on
# the new files and keeps its lock (it started its job on the replaced
# file and was then stopped with 76).
start_holder first sem --limit 1 --ttl 1h
first=$HOLDER_PID
"${DL[@]}" run --limit 1 sem --ttl 1h --wait 60s -- sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' \
  sh "$tmpdir/second.pid" </dev/null >/dev/null 2>"$tmpdir/second.err" &
second=$!
track "$second"
wait_until has_waiter sem || fail "the second taker of sem never waited: $("${DL[@]}" status sem --json)"
capture "${DL[@]}" release sem --force
[ "$rc" = 0 ] || fail "release --force of sem exited $rc; stderr: $err"
wait_until -t 5 is_gone "$first" || fail "the first holder of sem was still running 5 s after release --force"
wait_until test -s "$tmpdir/second.pid" || fail "the waiting taker of sem never started its job: $(cat "$tmpdir/second.err")"
slurp second_job "$tmpdir/second.pid"
track "$second_job"
# Its lock is real: it stays, and status names it.
wait_until -t 3 is_gone "$second" && fail "the taker that waited through release --force ended: $(cat "$tmpdir/second.err")"
[ "$("${DL[@]}" status sem --json | json 'd["holders"][0]["pid"]')" = "$second" ] ||
  fail "status sem does not name the taker that waited: $("${DL[@]}" status sem --json)"
kill "$second"
pass
