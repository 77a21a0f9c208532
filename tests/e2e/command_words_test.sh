#!/usr/bin/env bash
# Command words, as in flock(1), env(1), timeout(1) and sudo(8): after NAME,
# the first word that is not an option of run (or a global option) starts
# COMMAND, and every word after it is COMMAND's. Options before NAME and
# between NAME and COMMAND are dlock's, with their values; "--" is allowed
# and never needed.
SCENARIO="command words"
. "$(dirname "$0")/lib.sh"

# runs WHAT EXPECTED_STDOUT CMD...: CMD exits 0, prints exactly EXPECTED_STDOUT
# and nothing on stderr.
runs() {
  local what=$1 expected=$2
  shift 2
  capture "$@"
  [ "$rc" = 0 ] || fail "$what: exit $rc, expected 0; stderr: $err"
  [ "$out" = "$expected" ] || fail "$what: printed '$out', expected '$expected'"
  [ -z "$err" ] || fail "$what: dlock printed on stderr (took an option of COMMAND?): $err"
}

# refused WHAT CMD...: CMD exits 64 with one "dlock: " line, runs nothing.
refused() {
  local what=$1
  shift
  capture "$@"
  [ "$rc" = 64 ] || fail "$what: exit $rc, expected 64; stdout: $out; stderr: $err"
  assert_one_line_message "$what" "$err"
  [ -z "$out" ] || fail "$what: printed on stdout: $out"
}

# Options after COMMAND are COMMAND's.
runs "run x echo -v hello" "-v hello" "${DL[@]}" run x echo -v hello
runs "run x echo -t 5 hello" "-t 5 hello" "${DL[@]}" run x echo -t 5 hello
runs "run x sh -c 'echo hi'" "hi" "${DL[@]}" run x sh -c 'echo hi'
runs "run x printf '%s\n' --help" "--help" "${DL[@]}" run x printf '%s\n' --help
capture "${DL[@]}" run x echo --help # GNU echo's own help, not dlock's
[ "$rc" = 0 ] || fail "run x echo --help: exit $rc; stderr: $err"
case $out in *dlock* | *NAME* | *"Lock name"*) fail "run x echo --help printed dlock's help: $out" ;; esac
# Words of COMMAND reach it as given, also past CLI11 (--quiet=true is
# left to it): it would read "[1]" as a list.
runs "run x echo '[1]' '[a,b]'" "[1] [a,b]" "${DL[@]}" run x echo '[1]' '[a,b]'
runs "run --quiet=true x echo '[1]' '[a,b]'" "[1] [a,b]" "${DL[@]}" run --quiet=true x echo '[1]' '[a,b]'
runs "run x echo -t 50ms (a lease too short for dlock)" "-t 50ms" "${DL[@]}" run x echo -t 50ms
runs "run x echo -q -b nowhere:// -E 300 --wiat" "-q -b nowhere:// -E 300 --wiat" \
  "${DL[@]}" run x echo -q -b nowhere:// -E 300 --wiat
runs "run x echo -- a" "-- a" "${DL[@]}" run x echo -- a
# The job and its holder record (as status shows it) get exactly COMMAND's words.
cat >"$tmpdir/self.sh" <<'SCRIPT'
"$DLOCK_BIN" -b "$DLOCK_BACKEND" status x --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["holder"]["command"])'
echo "$@"
SCRIPT
runs "a job with options after its command" "sh $tmpdir/self.sh -v --ttl 1 -b x
-v --ttl 1 -b x" "${DL[@]}" run x sh "$tmpdir/self.sh" -v --ttl 1 -b x
# "-" alone is no option: it is COMMAND (and no such command exists).
capture "${DL[@]}" run x -
[ "$rc" = 127 ] || fail "run x -: exit $rc, expected 127 (COMMAND '-' not found); stderr: $err"

# "--" is allowed and changes nothing, before NAME too.
runs "run x -- echo -v" "-v" "${DL[@]}" run x -- echo -v
runs "run -- x echo hi" "hi" "${DL[@]}" run -- x echo hi
# A COMMAND that starts with "-" after "--" is run as such (and not found).
capture "${DL[@]}" run x -- -no-such-command
[ "$rc" = 127 ] || fail "run x -- -no-such-command: exit $rc, expected 127 (not found); stderr: $err"

# dlock's own -c stays.
runs "run x -c 'echo hi'" "hi" "${DL[@]}" run x -c 'echo hi'
runs "run -c 'echo hi' x" "hi" "${DL[@]}" run -c 'echo hi' x

# Options before NAME and between NAME and COMMAND are dlock's, with values.
refused "run x -t 50ms echo (dlock's -t, too short)" "${DL[@]}" run x -t 50ms echo hi
case $err in *--ttl*50ms*) ;; *) fail "run x -t 50ms echo: the message does not name --ttl 50ms: $err" ;; esac
refused "run -t 50ms x echo" "${DL[@]}" run -t 50ms x echo hi
refused "run x -t50ms echo" "${DL[@]}" run x -t50ms echo hi
refused "run x --ttl=50ms echo" "${DL[@]}" run x --ttl=50ms echo hi
refused "run x --wait=soon echo" "${DL[@]}" run x --wait=soon echo hi
# A value is never NAME or COMMAND: "5s" and "0" below are values.
runs "run -t 5s x --wait=0 -E 0 echo hi" "hi" "${DL[@]}" run -t 5s x --wait=0 -E 0 echo hi
runs "run -t 5s -- x echo hi" "hi" "${DL[@]}" run -t 5s -- x echo hi
# -v between NAME and COMMAND is dlock's: its messages go to stderr.
capture "${DL[@]}" run x -v echo hi
[ "$rc" = 0 ] && [ "$out" = hi ] || fail "run x -v echo hi: exit $rc, stdout '$out'"
case $err in *acquired*) ;; *) fail "run x -v echo hi: -v before COMMAND was not dlock's (no acquired message): $err" ;; esac

start_holder h x
# Busy: -E 0 -q between NAME and COMMAND make it a silent success; nothing runs.
capture "${DL[@]}" run x -E 0 -q touch "$tmpdir/ran"
[ "$rc" = 0 ] && [ -z "$err" ] || fail "run x -E 0 -q CMD on a held lock: exit $rc, stderr '$err' (expected 0, silent)"
[ ! -e "$tmpdir/ran" ] || fail "run x -E 0 -q CMD ran CMD although x was held"
capture "${DL[@]}" run -E 0 x -q touch "$tmpdir/ran"
[ "$rc" = 0 ] && [ -z "$err" ] || fail "run -E 0 x -q CMD on a held lock: exit $rc, stderr '$err'"
# ... and after COMMAND they are COMMAND's: dlock says busy, exits 75.
capture "${DL[@]}" run x touch "$tmpdir/ran" -E 0 -q
[ "$rc" = 75 ] && [ -n "$err" ] || fail "run x CMD -E 0 -q on a held lock: exit $rc, stderr '$err' (expected 75 and a message)"
release_holder h
wait_exit "$HOLDER_PID"

# Edge cases: no COMMAND, an unknown option where COMMAND could start, -c
# with COMMAND words.
refused "run x (no command)" "${DL[@]}" run x
case $err in *"no command"*) ;; *) fail "run x: the message does not say that COMMAND is missing: $err" ;; esac
refused "run x -- (no command)" "${DL[@]}" run x --
refused "run x -foo" "${DL[@]}" run x -foo
case $err in *"unknown option -foo for run"*"dlock run NAME -- -foo"*) ;;
*) fail "run x -foo: the message does not name -foo and say how to run it as a command: $err" ;; esac
refused "run x -c 'echo hi' extra" "${DL[@]}" run x -c 'echo hi' extra
case $err in *-c*"'extra'"*) ;; *) fail "run x -c 'echo hi' extra: the message does not name -c and 'extra': $err" ;; esac
refused "run x -c 'echo hi' -- extra" "${DL[@]}" run x -c 'echo hi' -- extra

pass
