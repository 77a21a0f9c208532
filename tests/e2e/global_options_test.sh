#!/usr/bin/env bash
# Global options work before and after the subcommand.
SCENARIO="global options after the subcommand"
. "$(dirname "$0")/lib.sh"

# No DLOCK_BACKEND in these calls: the -b option itself must take effect
# wherever it stands, or the lock would be looked for somewhere else.
raw=(env -u DLOCK_BACKEND "$DLOCK_BIN")

capture "${raw[@]}" run x -b "$BACKEND" -q -E 0 -- touch "$tmpdir/ran1"
[ "$rc" = 0 ] || fail "dlock run x -b URL -q -E 0 -- CMD on a free lock exited $rc; stderr: $err"
[ -e "$tmpdir/ran1" ] || fail "dlock run x -b URL -q -E 0 -- CMD did not run CMD"
[ -e "$LOCKDIR/dlock/x.lock" ] || fail "-b after the subcommand was not used (no x.lock in $LOCKDIR/dlock)"

start_holder h x

capture "${raw[@]}" run x -b "$BACKEND" -q -E 0 -- touch "$tmpdir/ran2"
[ "$rc" = 0 ] || fail "dlock run x -b URL -q -E 0 on a held lock exited $rc, expected 0"
[ -z "$err" ] || fail "dlock run x -q -E 0 on a held lock printed: $err"
[ ! -e "$tmpdir/ran2" ] || fail "dlock run x -b URL -q -E 0 ran its command although x was held (-b ignored?)"

capture "${raw[@]}" -q run x -b "$BACKEND" -- touch "$tmpdir/ran3"
[ "$rc" = 75 ] || fail "dlock -q run x on a held lock exited $rc, expected 75"
[ -z "$err" ] || fail "dlock -q run x on a held lock printed: $err"
[ ! -e "$tmpdir/ran3" ] || fail "dlock -q run x ran its command although x was held"

capture "${raw[@]}" -b "$BACKEND" -q run x -- true
[ "$rc" = 75 ] && [ -z "$err" ] || fail "dlock -b URL -q run x: exit $rc, stderr '$err' (expected 75, silent)"

capture "${raw[@]}" run x -q -b "$BACKEND" -- true
[ "$rc" = 75 ] && [ -z "$err" ] || fail "dlock run x -q -b URL: exit $rc, stderr '$err' (expected 75, silent)"

capture "${raw[@]}" run x --quiet --backend "$BACKEND" -- true
[ "$rc" = 75 ] && [ -z "$err" ] || fail "dlock run x --quiet --backend URL: exit $rc, stderr '$err' (expected 75, silent)"

# Without -q the busy message is there (so the checks above mean something).
capture "${raw[@]}" run x -b "$BACKEND" -- true
[ "$rc" = 75 ] && [ -n "$err" ] || fail "dlock run x -b URL without -q: exit $rc, stderr '$err' (expected 75 and a message)"

# Other subcommands too.
capture "${raw[@]}" status x -b "$BACKEND"
[ "$rc" = 0 ] || fail "dlock status x -b URL exited $rc, expected 0 (held)"
capture "${raw[@]}" list --namespace dlock -b "$BACKEND"
case $out in *x*) ;; *) fail "dlock list --namespace dlock -b URL does not list x: $out" ;; esac
capture "${raw[@]}" status x --namespace other -b "$BACKEND"
[ "$rc" = 3 ] || fail "dlock status x --namespace other -b URL exited $rc, expected 3"

# The command's own arguments after -- are not taken as dlock options.
release_holder h
wait_exit "$HOLDER_PID"
capture "${DL[@]}" run x -- sh -c 'echo "$@"' sh -q -b foo -v --ttl 1
[ "$rc" = 0 ] || fail "options after -- were parsed by dlock: exit $rc; stderr: $err"
[ "$out" = "-q -b foo -v --ttl 1" ] || fail "the command did not get its own arguments: '$out'"
# Without "--": global options between NAME and COMMAND are dlock's, those
# after COMMAND are COMMAND's (never dlock's, "--" or not).
capture "${raw[@]}" run x -b "$BACKEND" -q sh -c 'echo "$@"' sh -q -b foo -v --ttl 1
[ "$rc" = 0 ] || fail "dlock run x -b URL -q CMD -q -b foo -v --ttl 1: exit $rc; stderr: $err"
[ "$out" = "-q -b foo -v --ttl 1" ] || fail "options after COMMAND were not COMMAND's: '$out'"
[ -z "$err" ] || fail "dlock took -v after COMMAND: $err"
[ -e "$LOCKDIR/dlock/x.lock" ] || fail "-b between NAME and COMMAND was not used"
pass
