#!/usr/bin/env bash
# --min-hold: a cron job started on two "hosts" 2 s apart (their clocks
# differ) runs once under --min-hold 5s: the first run keeps the lock (and
# renews it: the lease is 1 s) for 5 s after taking it, though its job
# ended at once, so the second finds it busy; without --min-hold the job
# runs twice. The exit status is the job's; SIGTERM ends the hold at once;
# bad values are usage errors. Run per backend (argument: file, redis, ...).
SCENARIO="--min-hold: two hosts 2 s apart run the job once"
. "$(dirname "$0")/lib.sh"
use_backend "${1:-file}"
SCENARIO="$SCENARIO ($SERVER_KIND)"

job='echo "$DLOCK_FENCE" >>"$1"; exit 3'
started=$(now_ms)
"${DL[@]}" run --ttl 1s --min-hold 5s daily -- sh -c "$job" sh "$tmpdir/runs" 2>"$tmpdir/a.err" &
host_a=$!
track "$host_a"
wait_until test -s "$tmpdir/runs" || fail "host A's job did not run"
# The second host's cron fires 2 s later by the first host's clock.
sleep 2
capture "${DL[@]}" run --ttl 1s --min-hold 5s daily -- sh -c "$job" sh "$tmpdir/runs"
[ "$rc" = 75 ] || fail "host B, 2 s later: exit $rc, expected 75 (busy); stderr: $err"
[ "$(line_count "$(cat "$tmpdir/runs")")" = 1 ] || fail "the job ran $(line_count "$(cat "$tmpdir/runs")") times"
is_held daily || fail "the lock is not held during --min-hold"
wait_exit "$host_a" 10
elapsed=$(($(now_ms) - started))
[ "$rc" = 3 ] || fail "host A exited $rc after --min-hold, expected the job's 3; stderr: $(cat "$tmpdir/a.err")"
[ "$elapsed" -ge 4900 ] || fail "host A released after ${elapsed} ms, before --min-hold 5s"
[ "$elapsed" -lt 7000 ] || fail "host A held on for ${elapsed} ms, well past --min-hold 5s"
[ -s "$tmpdir/a.err" ] && fail "host A said something: $(cat "$tmpdir/a.err")"
is_free daily || fail "the lock is still held after --min-hold"

# Without --min-hold the second host runs the job again: the check above
# can fail.
capture "${DL[@]}" run --ttl 1s daily -- sh -c "$job" sh "$tmpdir/runs2"
capture "${DL[@]}" run --ttl 1s daily -- sh -c "$job" sh "$tmpdir/runs2"
[ "$(line_count "$(cat "$tmpdir/runs2")")" = 2 ] || fail "without --min-hold the job did not run twice"

# A job that runs longer than --min-hold is not held on for.
started=$(now_ms)
capture "${DL[@]}" run --min-hold 200ms daily -- sleep 0.5
elapsed=$(($(now_ms) - started))
[ "$rc" = 0 ] && [ "$elapsed" -lt 3000 ] || fail "a job longer than --min-hold: exit $rc after ${elapsed} ms"

# SIGTERM during the hold ends it at once, with the job's status.
"${DL[@]}" run --min-hold 30s daily -- sh -c 'touch "$1"' sh "$tmpdir/ran" &
pid=$!
track "$pid"
wait_until test -e "$tmpdir/ran" || fail "the job to hold on after did not run"
wait_until is_held daily || fail "the lock is not held after the job"
started=$(now_ms)
kill -TERM "$pid"
wait_exit "$pid" 5
elapsed=$(($(now_ms) - started))
[ "$rc" = 0 ] || fail "SIGTERM during --min-hold: exit $rc, expected the job's 0"
[ "$elapsed" -lt 3000 ] || fail "SIGTERM during --min-hold took ${elapsed} ms"
is_free daily || fail "the lock is still held after SIGTERM ended --min-hold"

# A lock broken during the hold: said, and the job's status stands.
rm -f "$tmpdir/ran"
"${DL[@]}" run --ttl 2s --min-hold 30s daily -- sh -c 'touch "$1"; exit 2' sh "$tmpdir/ran" 2>"$tmpdir/broken.err" &
pid=$!
track "$pid"
wait_until test -e "$tmpdir/ran" || fail "the job whose hold is broken did not run"
wait_until is_held daily || fail "the lock is not held after the job"
"${DL[@]}" release daily --force >/dev/null 2>&1
wait_exit "$pid" 15
[ "$rc" = 2 ] || fail "a lock broken during --min-hold: exit $rc, expected the job's 2"
case $(cat "$tmpdir/broken.err") in *"lost during --min-hold"*) ;;
*) fail "no word of the lock lost during --min-hold: $(cat "$tmpdir/broken.err")" ;; esac

for bad in 0 -1s abc; do
  capture "${DL[@]}" run --min-hold "$bad" daily -- true
  [ "$rc" = 64 ] || fail "--min-hold $bad exited $rc, expected 64"
  assert_one_line_message "--min-hold $bad" "$err"
done
pass
