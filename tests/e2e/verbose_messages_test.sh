#!/usr/bin/env bash
# What dlock says, as an operator reads it (file backend):
#   -v while waiting: whom it waits for (host, pid, command);
#   -v at release: the job's exit status, and "1 renewal", not "1 renewals";
#   -v when the job has exited but processes it started keep the lock held:
#     which ones, and that dlock waits for them;
#   --max-runtime hit by what a job left running after it exited at once:
#     the message says so, and names them.
SCENARIO="messages: whom a wait is for, the job's status, leftover processes"
. "$(dirname "$0")/lib.sh"

# Waiting for a holder.
start_holder h m
capture "${DL[@]}" -v run m --wait 300ms -- true
[ "$rc" = 75 ] || fail "run --wait 300ms on a held lock exited $rc: $err"
case $err in *"waiting for 'm' (up to 300ms) (held by pid $HOLDER_PID on "*) ;; *)
  fail "-v does not say whom the wait is for (dlock pid $HOLDER_PID): $err" ;; esac
release_holder h

# The job's exit status at release, and one renewal.
capture "${DL[@]}" -v run x -- sh -c 'exit 3'
[ "$rc" = 3 ] || fail "run of 'exit 3' exited $rc"
case $err in *"released 'x' after "*"(0 renewals); the job exited 3"*) ;; *) fail "-v at release: $err" ;; esac
# (Renewals at 2 s and 4 s, the job ends at 3 s: a second of room either
# way for a loaded machine's start-up and reaping.)
capture "${DL[@]}" -v run r --ttl 6s -- sleep 3
[ "$rc" = 0 ] || fail "run of sleep 3 exited $rc: $err"
case $err in *"(1 renewal); the job exited 0"*) ;; *) fail "-v after one renewal: $err" ;; esac

# A job that exits at once and leaves a process holding the lock. The
# leftover lives until dlock has named it (a leftover that ended on a timer
# could end, under load, between dlock listing it and reading its command
# line, and be named by its pid alone).
mkfifo "$tmpdir/leftover"
"${DL[@]}" -v run y -- sh -c '(read -r _ <"$1") & exit 0' sh "$tmpdir/leftover" 2>"$tmpdir/y.err" &
runner=$!
track "$runner"
wait_until grep -q "waiting for them" "$tmpdir/y.err" || fail "-v never said it waits for a leftover: $(cat "$tmpdir/y.err")"
echo >"$tmpdir/leftover"
wait_exit "$runner" 10
err=$(cat "$tmpdir/y.err")
[ "$rc" = 0 ] || fail "run of a job leaving a child exited $rc: $err"
case $err in *"the job exited 0, but processes it started still run and keep lock 'y' held: pid "[0-9]*" (sh -c "*"); waiting for them"*) ;; *)
  fail "-v does not name the leftover process: $err" ;; esac

# --max-runtime reached by what the job left running.
capture "${DL[@]}" run z --max-runtime 500ms -- sh -c 'sleep 30 & exit 0'
[ "$rc" = 124 ] || fail "max-runtime with a leftover child exited $rc: $err"
case $err in *"job under lock 'z' exited 0, but processes it left ran past --max-runtime 500ms (pid "[0-9]*" ("*")); they were stopped"*) ;; *)
  fail "the max-runtime message does not say it was a leftover process: $err" ;; esac
assert_one_line_message "max-runtime with a leftover child" "$err"
pass
