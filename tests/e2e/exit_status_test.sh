#!/usr/bin/env bash
# run passes the child's exit status through; 126/127 when it cannot start.
SCENARIO="exit status passthrough"
. "$(dirname "$0")/lib.sh"

capture "${DL[@]}" run x -- true
[ "$rc" = 0 ] || fail "run x -- true exited $rc, expected 0; stderr: $err"
[ -z "$err" ] || fail "run x -- true printed on stderr: $err"

capture "${DL[@]}" run x -- false
[ "$rc" = 1 ] || fail "run x -- false exited $rc, expected 1"

capture "${DL[@]}" run x -c 'exit 7'
[ "$rc" = 7 ] || fail "run x -c 'exit 7' exited $rc, expected 7; stderr: $err"

capture "${DL[@]}" run x -- sh -c 'exit 255'
[ "$rc" = 255 ] || fail "child exit 255 gave $rc"

capture "${DL[@]}" run x -- sh -c 'kill -KILL $$'
[ "$rc" = 137 ] || fail "child killed by SIGKILL: dlock exited $rc, expected 137; stderr: $err"

capture "${DL[@]}" run x -- sh -c 'kill -TERM $$'
[ "$rc" = 143 ] || fail "child killed by SIGTERM: dlock exited $rc, expected 143; stderr: $err"

capture "${DL[@]}" run x -- /nonexistent/cmd arg
[ "$rc" = 127 ] || fail "run x -- /nonexistent/cmd exited $rc, expected 127; stderr: $err"
assert_one_line_message "command not found" "$err"
case $err in *nonexistent*) ;; *) fail "the 127 message does not name the command: $err" ;; esac

capture "${DL[@]}" run x -- no-such-command-dlock-e2e
[ "$rc" = 127 ] || fail "run x -- no-such-command (PATH lookup) exited $rc, expected 127; stderr: $err"
assert_one_line_message "command not found in PATH" "$err"

printf 'echo should-not-run\n' >"$tmpdir/not-executable"
chmod 0644 "$tmpdir/not-executable"
capture "${DL[@]}" run x -- "$tmpdir/not-executable"
[ "$rc" = 126 ] || fail "run x -- <non-executable file> exited $rc, expected 126; stderr: $err"
assert_one_line_message "cannot execute" "$err"
case $out in *should-not-run*) fail "the non-executable file was run anyway" ;; esac

capture "${DL[@]}" run x -- "$tmpdir"
[ "$rc" = 126 ] || fail "run x -- <a directory> exited $rc, expected 126; stderr: $err"
assert_one_line_message "cannot execute a directory" "$err"

# A command that could not start leaves the lock free.
capture "${DL[@]}" status x
[ "$rc" = 3 ] || fail "after the failed starts, status x exited $rc (expected 3: free); output: $out"

pass
