#!/usr/bin/env bash
# A second run on a held lock exits 75 (or -E N), -q silences it.
SCENARIO="busy lock"
. "$(dirname "$0")/lib.sh"

name=busy.lock-1
start_holder h "$name"

capture "${DL[@]}" run "$name" -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "run on a held lock exited $rc, expected 75; stderr: $err"
assert_one_line_message "busy" "$err"
case $err in *"$name"*) ;; *) fail "the busy message does not name the lock '$name': $err" ;; esac
[ ! -e "$tmpdir/ran" ] || fail "the second run started its command although the lock was held"

capture "${DL[@]}" run "$name" -q -E 0 -- touch "$tmpdir/ran"
[ "$rc" = 0 ] || fail "run -q -E 0 on a held lock exited $rc, expected 0"
[ -z "$err" ] || fail "run -q -E 0 printed on stderr: $err"
[ -z "$out" ] || fail "run -q -E 0 printed on stdout: $out"
[ ! -e "$tmpdir/ran" ] || fail "run -q -E 0 started its command although the lock was held"

capture "${DL[@]}" run "$name" -E 3 -- touch "$tmpdir/ran"
[ "$rc" = 3 ] || fail "run -E 3 on a held lock exited $rc, expected 3; stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "run -E 3 started its command although the lock was held"

capture "${DL[@]}" run "$name" --conflict-exit-code 0 -- touch "$tmpdir/ran"
[ "$rc" = 0 ] || fail "run --conflict-exit-code 0 exited $rc, expected 0"

# The holder is undisturbed by all this, and the lock is free once it ends.
is_alive "$CHILD_PID" || fail "the holder's child died during the busy attempts"
release_holder h
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "holder exited $rc, expected 0; stderr: $(cat "$tmpdir/h.err")"

capture "${DL[@]}" run "$name" -- touch "$tmpdir/ran"
[ "$rc" = 0 ] || fail "run after the holder ended exited $rc, expected 0; stderr: $err"
[ -e "$tmpdir/ran" ] || fail "run after the holder ended did not run its command"

pass
