#!/usr/bin/env bash
# --max-runtime stops the job (TERM, then KILL after --kill-after) and exits 124.
SCENARIO="max-runtime"
. "$(dirname "$0")/lib.sh"

started=$(now_ms)
capture "${DL[@]}" run m --max-runtime 300ms -- sh -c 'echo $$ >"$1"; exec sleep 30' sh "$tmpdir/m1.pid"
elapsed=$(($(now_ms) - started))
[ "$rc" = 124 ] || fail "run --max-runtime 300ms -- sleep 30 exited $rc, expected 124; stderr: $err"
[ "$elapsed" -ge 250 ] || fail "--max-runtime 300ms stopped the job after only ${elapsed} ms"
[ "$elapsed" -lt 2000 ] || fail "--max-runtime 300ms took ${elapsed} ms"
assert_one_line_message "max-runtime" "$err"
is_gone "$(cat "$tmpdir/m1.pid")" || fail "the job is still alive after dlock exited 124"
is_free m || fail "lock m is still held after --max-runtime"

# A job that ignores TERM is killed after --kill-after.
started=$(now_ms)
capture "${DL[@]}" run m --max-runtime 300ms --kill-after 200ms -- \
  sh -c 'trap "" TERM; echo $$ >"$1"; exec sleep 30' sh "$tmpdir/m2.pid"
elapsed=$(($(now_ms) - started))
[ "$rc" = 124 ] || fail "TERM-ignoring job: exit $rc, expected 124; stderr: $err"
[ "$elapsed" -ge 450 ] || fail "TERM-ignoring job: dlock exited after ${elapsed} ms, before --max-runtime + --kill-after"
[ "$elapsed" -lt 3000 ] || fail "TERM-ignoring job: dlock took ${elapsed} ms (expected about 500 ms)"
is_gone "$(cat "$tmpdir/m2.pid")" || fail "the TERM-ignoring job survived"

# A job that ends before --max-runtime keeps its own status.
capture "${DL[@]}" run m --max-runtime 5s -c 'exit 3'
[ "$rc" = 3 ] || fail "a job ending before --max-runtime: exit $rc, expected 3"
# A job that handles TERM and exits 0 still counts as stopped: 124.
capture "${DL[@]}" run m --max-runtime 300ms -- sh -c 'trap "exit 0" TERM; while :; do sleep 0.05; done'
[ "$rc" = 124 ] || fail "a job that exits 0 on TERM at --max-runtime: exit $rc, expected 124"
pass
