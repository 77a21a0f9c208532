#!/usr/bin/env bash
# A wall clock stepped back (NTP, an operator) changes no duration and no
# time left (issue 34 point 9): a 30 s lock showed 3,630 s left after a
# step of -1 h, and a 2 s job lasted -3,598 s in --log and the metrics
# file. dlock and status run under libfaketime, whose wall clock follows a
# file (the monotonic and boot clocks stay real):
#   - status of a held 30 s lock shows at most 30 s left after a -1 h step;
#   - the released record's duration_ms and the metrics file's
#     dlock_last_duration_seconds are the job's real length (>= 0, below the
#     test's own bound), although the job ended an hour "before" it began.
SCENARIO="file: a wall clock step changes no duration and no time left"
. "$(dirname "$0")/lib.sh"

lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
[ -n "$lib" ] || fail "libfaketime.so.1 not found (Debian: faketime, see scripts/install-deps)"
printf '+0\n' >"$tmpdir/offset"
step() { printf '%s\n' "$1" >"$tmpdir/offset.tmp" && mv "$tmpdir/offset.tmp" "$tmpdir/offset"; }
faked=(env LD_PRELOAD="$lib" FAKETIME_TIMESTAMP_FILE="$tmpdir/offset" FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1)
# Under ASan the preloaded libfaketime comes before ASan's runtime.
[ -n "${DLOCK_SANITIZED:-}" ] && faked+=(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")

mkfifo "$tmpdir/go"
started=$(now_ms)
"${faked[@]}" "${DL[@]}" run --ttl 30s --log "$tmpdir/events.log" --metrics-file "$tmpdir/metrics.prom" x -- \
  sh -c 'echo $$ >"$1/job.pid.tmp"; mv "$1/job.pid.tmp" "$1/job.pid"; read x <"$1/go"' sh "$tmpdir" \
  </dev/null >/dev/null 2>"$tmpdir/run.err" &
dlock_pid=$!
track "$dlock_pid"
wait_until test -s "$tmpdir/job.pid" || fail "the job did not start: $(cat "$tmpdir/run.err")"
grep -q libfaketime "/proc/$dlock_pid/maps" || fail "dlock does not run under libfaketime"

step -3600
doc=$("${faked[@]}" "${DL[@]}" status x --json) || fail "status x exited $?"
left=$(json 'd["ttl_left_ms"]' <<<"$doc")
[ "$left" -le 30000 ] 2>/dev/null || fail "after a -1 h step status shows ${left} ms left of a 30 s lock: $doc"
text=$("${faked[@]}" "${DL[@]}" status x)
case $text in *"lease:"*"left"*) ;; *) fail "status x shows no lease left: $text" ;; esac

timeout 5 sh -c 'echo go >"$1"' release "$tmpdir/go" || fail "the job does not read its fifo"
wait_exit "$dlock_pid" 10
[ "$rc" = 0 ] || fail "dlock run exited $rc; stderr: $(cat "$tmpdir/run.err")"
bound=$(($(now_ms) - started))
duration=$(grep '"released"' "$tmpdir/events.log" | json 'd["duration_ms"]') ||
  fail "no released record: $(cat "$tmpdir/events.log")"
[ "$duration" -ge 0 ] && [ "$duration" -le "$bound" ] ||
  fail "the released record says the job ran ${duration} ms (it ran less than ${bound} ms)"
seconds=$(sed -n 's/^dlock_last_duration_seconds{.*} //p' "$tmpdir/metrics.prom")
[[ $seconds =~ ^[0-9]+\.[0-9]+$ ]] || fail "the metrics file has no dlock_last_duration_seconds: $(cat "$tmpdir/metrics.prom")"
pass
