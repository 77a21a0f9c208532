#!/usr/bin/env bash
# Redis Sentinel: a clean failover (SENTINEL FAILOVER) must never leave two
# holders. Holder A runs a job under redis-sentinel://S1,S2,S3/dlockmaster
# with --ttl 3s; the replica is promoted. The old master goes on answering
# as a master for about 10 s (until the sentinels turn it into a replica),
# and A's renewals went to it and counted, while the new master lacked them
# and let waiter B take the lock about 3 s later: both jobs ran (issue 16,
# point 10). A renewal counts now only if the sentinels still name its
# server as master and report no failover in progress. Either A keeps the
# lock on the new master (its key was replicated and the renewals that
# follow the failover go there) and B gets it only after A's job ends, or A
# stops its job and exits 76 before B's job starts; never both at once.
# Waiter C starts before the failover and waits on the old master: a lock
# it takes there after the failover (A's key runs out on it) must not
# count, and the READONLY of the old master once it is turned into a
# replica must send C to the sentinels again, so that it gets the lock on
# the new master when A's job ends. No two of the three jobs overlap, and
# the fences grow in the order the jobs ran.
# Run under scripts/with-redis --replica --sentinels 3.
SCENARIO="redis: a Sentinel failover never leaves two holders"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sentinel_lib.sh"
# waiter ID WAIT: a background run whose job writes its start, fence and
# end (after 300 ms) to $tmpdir/ID.*; sets WAITER.
# shellcheck disable=SC2016 # expanded by the job's shell
waiter() {
  "${DL[@]}" run "$name" --wait "$2" -- sh -c 'date +%s%3N >"$1.start"; echo "$DLOCK_FENCE" >"$1.fence"; sleep 0.3; date +%s%3N >"$1.end"' sh "$tmpdir/$1" \
    </dev/null >/dev/null 2>"$tmpdir/$1.err" &
  WAITER=$!
  track "$WAITER"
}

# A's job holds a fifo open: a reader notes the moment it ends (EOF), with
# a builtin clock, a millisecond or so after the fact.
mkfifo "$tmpdir/a.fifo"
bash -c 'exec 3<"$1"; while read -r -u 3 _; do :; done; t=${EPOCHREALTIME/./}; echo "${t:0:13}" >"$1.end"' sh "$tmpdir/a.fifo" &
track $!
# shellcheck disable=SC2016 # expanded by the job's shell
start_run "$name" 'echo "$DLOCK_FENCE" >"$1/job.pid.fence"; exec 3>"$1/a.fifo"; echo $$ >"$1/job.pid.tmp"; mv "$1/job.pid.tmp" "$1/job.pid"; exec sleep 1000' --ttl 3s
a_start=$(now_ms)
fence_a=$(cat "$tmpdir/job.pid.fence")
wait_until -t 3 replicated || fail "the lock key never reached the replica"
waiter c 30s
c=$WAITER
wait_until has_waiter "$name" || fail "C never waited for the lock"

[ "$("$DLOCK_TEST_SENTINEL_CLI_1" SENTINEL FAILOVER dlockmaster)" = OK ] || fail "SENTINEL FAILOVER was refused"
failover_at=$(now_ms)
wait_until -t 10 names_replica || fail "sentinel 1 did not name the replica as master within 10 s of SENTINEL FAILOVER"
echo "sentinel 1 names the new master $(($(now_ms) - failover_at)) ms after SENTINEL FAILOVER"

waiter b 12s
b=$WAITER
wait_exit "$b" 20
b_rc=$rc
if [ -e "$tmpdir/dlock.rc" ]; then
  [ "$(cat "$tmpdir/dlock.rc")" = 76 ] || fail "A's dlock exited $(cat "$tmpdir/dlock.rc"), expected 76; stderr: $(cat "$tmpdir/job.err")"
  echo "A stopped its job and exited 76 $(($(cat "$tmpdir/dlock.exit_ms") - failover_at)) ms after the failover"
else
  # A kept the lock across the failover: B gave up.
  [ "$b_rc" = 75 ] || fail "B exited $b_rc while A's dlock still runs and its job $(is_alive "$JOB_PID" && echo runs || echo ended), expected 75 (busy): two holders; B's stderr: $(cat "$tmpdir/b.err")"
  is_alive "$JOB_PID" || fail "A's job ended but its dlock did not exit"
  echo "A kept the lock across the failover; B found it busy for 12 s"
  [ ! -e "$tmpdir/c.start" ] || fail "C's job started $(($(cat "$tmpdir/c.start") - failover_at)) ms after the failover while A's job ran: two holders"
  kill -TERM "$JOB_PID"
  wait_until test -e "$tmpdir/dlock.rc" || fail "A's dlock did not exit after its job ended"
fi
wait_exit "$c" 30
[ "$rc" = 0 ] || fail "C, which waited on the old master, exited $rc, expected 0 (the lock on the new master once A let it go); stderr: $(cat "$tmpdir/c.err")"

# No two jobs overlapped; fences grow in the order they ran.
wait_until -t 2 test -s "$tmpdir/a.fifo.end" || fail "no end time of A's job"
a_end=$(cat "$tmpdir/a.fifo.end")
{
  echo "A $a_start $a_end $fence_a"
  for id in b c; do
    [ -e "$tmpdir/$id.start" ] && echo "${id^^} $(cat "$tmpdir/$id.start") $(cat "$tmpdir/$id.end" 2>/dev/null || echo 0) $(cat "$tmpdir/$id.fence")"
  done
} | sort -n -k2 >"$tmpdir/jobs"
python3 - "$tmpdir/jobs" <<'PY' || fail "jobs overlapped or fences went backwards (job start end fence, ms): $(tr '\n' ';' <"$tmpdir/jobs")"
import sys
jobs = [line.split() for line in open(sys.argv[1])]
for (a, _, a_end, a_fence), (b, b_start, _, b_fence) in zip(jobs, jobs[1:]):
    assert int(a_end) != 0 and int(a_end) <= int(b_start), (a, b)
    assert int(b_fence) > int(a_fence), (a, b)
PY
echo "jobs (start, end, fence): $(tr '\n' ';' <"$tmpdir/jobs")"
pass
