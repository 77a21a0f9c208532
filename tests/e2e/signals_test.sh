#!/usr/bin/env bash
# SIGTERM / SIGINT / SIGHUP to dlock reach the child's process group; dlock
# exits with the child's status (128+N when the child dies of signal N).
SCENARIO="signals are forwarded"
. "$(dirname "$0")/lib.sh"

# start_job ID NAME SCRIPT: dlock run NAME -- sh -c SCRIPT, where SCRIPT may
# use $1 as a file prefix; waits for "$1.ready" (written by SCRIPT).
start_job() {
  local id=$1 name=$2 script=$3
  "${DL[@]}" run "$name" -- sh -c "$script" sh "$tmpdir/$id" </dev/null >"$tmpdir/$id.out" 2>"$tmpdir/$id.err" &
  JOB_PID=$!
  track "$JOB_PID"
  wait_until test -e "$tmpdir/$id.ready" || fail "$id: the child did not start; stderr: $(cat "$tmpdir/$id.err")"
  JOB_CHILD=$(cat "$tmpdir/$id.pid")
  track "$JOB_CHILD"
}

plain='echo $$ >"$1.pid"; touch "$1.ready"; exec sleep 1000'

# SIGTERM: the child (a plain sleep) dies of it, dlock exits 143.
start_job term t1 "$plain"
wait_until grep -qx sleep "/proc/$JOB_CHILD/comm" || fail "term: the child never became 'sleep'"
kill -TERM "$JOB_PID"
wait_exit "$JOB_PID" 5
[ "$rc" = 143 ] || fail "SIGTERM to dlock: exit $rc, expected 143; stderr: $(cat "$tmpdir/term.err")"
is_gone "$JOB_CHILD" || fail "SIGTERM to dlock: the child is still alive after dlock exited"
is_free t1 || fail "lock t1 is still held after dlock exited on SIGTERM"

# A child that traps TERM and exits 0: dlock exits 0 (the child's status).
start_job trap t2 'trap "echo trapped >\"\$1.trapped\"; exit 0" TERM; echo $$ >"$1.pid"; touch "$1.ready"
while :; do sleep 0.05; done'
kill -TERM "$JOB_PID"
wait_exit "$JOB_PID" 5
[ "$rc" = 0 ] || fail "SIGTERM to dlock whose child traps TERM and exits 0: exit $rc, expected 0; stderr: $(cat "$tmpdir/trap.err")"
[ -e "$tmpdir/trap.trapped" ] || fail "the child's TERM trap did not run (signal not forwarded?)"
is_gone "$JOB_CHILD" || fail "the trapping child is still alive"

# SIGINT: 130. (Background jobs of a non-interactive shell start with SIGINT
# ignored; dlock must still catch it and the child must get the default.)
start_job int t3 "$plain"
wait_until grep -qx sleep "/proc/$JOB_CHILD/comm" || fail "int: the child never became 'sleep'"
kill -INT "$JOB_PID"
wait_exit "$JOB_PID" 5
[ "$rc" = 130 ] || fail "SIGINT to dlock: exit $rc, expected 130; stderr: $(cat "$tmpdir/int.err")"
is_gone "$JOB_CHILD" || fail "SIGINT to dlock: the child is still alive"

# SIGHUP: 129.
start_job hup t4 "$plain"
wait_until grep -qx sleep "/proc/$JOB_CHILD/comm" || fail "hup: the child never became 'sleep'"
kill -HUP "$JOB_PID"
wait_exit "$JOB_PID" 5
[ "$rc" = 129 ] || fail "SIGHUP to dlock: exit $rc, expected 129; stderr: $(cat "$tmpdir/hup.err")"

# SIGUSR1 is forwarded too and does not end dlock by itself.
start_job usr t5 'trap "echo usr1 >>\"\$1.got\"" USR1; trap "exit 0" TERM; echo $$ >"$1.pid"; touch "$1.ready"
while :; do sleep 0.05; done'
kill -USR1 "$JOB_PID"
wait_until test -s "$tmpdir/usr.got" || fail "SIGUSR1 to dlock did not reach the child"
is_alive "$JOB_PID" || fail "dlock ended on SIGUSR1"
is_held t5 || fail "lock t5 not held after SIGUSR1"
kill -TERM "$JOB_PID"
wait_exit "$JOB_PID" 5
[ "$rc" = 0 ] || fail "after USR1 then TERM: exit $rc, expected 0"

pass
