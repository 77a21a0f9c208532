# shellcheck shell=bash
# shellcheck disable=SC2154 # tmpdir, rc and err come from lib.sh
# Helpers for the scenarios of a session-bound backend (file, PostgreSQL)
# whose lock descriptor the job inherits: after kill -9 of dlock the lock
# lasts until the job's descendants have ended too, and a normal release
# ends it even while a copy of the descriptor escaped elsewhere. Source it
# after lib.sh (and use_postgres):
#
#   SCENARIO="..."
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/descendants_lib.sh"
#
#   check_kill9_leaves_lock_to_descendants NAME
#       `dlock run NAME` over a job that starts a grandchild; kill -9 of
#       dlock kills the job (PR_SET_PDEATHSIG) but not the grandchild. While
#       the grandchild runs the lock must stay busy; once told to finish it
#       runs one more second, then writes grandchild.done and ends. A
#       `run --wait` blocked meanwhile must get the lock only after that,
#       and soon after.
#   check_release_with_escaped_copy NAME PATTERN
#       the job hands every descriptor it has besides 0-2 to a process
#       outside dlock's tree (SCM_RIGHTS) and exits 0; one of them must
#       match PATTERN (the lock file, a socket). dlock releases as usual, and
#       the lock must be free at once although that process still holds the
#       copy.

# The job: starts the grandchild, records both pids, then waits for ever.
# The grandchild waits for $1/finish, runs one more second and records when
# it ended.
# shellcheck disable=SC2016 # expanded by the job's shell
_orphaning_job='d=$1
(
  while [ ! -e "$d/finish" ]; do sleep 0.01; done
  sleep 1
  date +%s%3N >"$d/grandchild.tmp" && mv "$d/grandchild.tmp" "$d/grandchild.done"
) </dev/null >/dev/null 2>&1 &
echo $! >"$d/grandchild.pid.tmp" && mv "$d/grandchild.pid.tmp" "$d/grandchild.pid"
echo $$ >"$d/job.pid.tmp" && mv "$d/job.pid.tmp" "$d/job.pid"
exec sleep 1000'

# The second holder: whether the grandchild had ended when it got the lock,
# and when that was.
# shellcheck disable=SC2016
_second_holder='d=$1
if [ -e "$d/grandchild.done" ]; then saw=after; else saw=before; fi
printf "%s %s\n" "$saw" "$(date +%s%3N)" >"$d/waiter.tmp" && mv "$d/waiter.tmp" "$d/waiter.saw"'

check_kill9_leaves_lock_to_descendants() {
  local name=$1 wrapper dlock_pid job grandchild waiter saw got done_ms
  rm -f "$tmpdir/finish" "$tmpdir/grandchild.done" "$tmpdir/grandchild.pid" "$tmpdir/waiter.saw"
  start_run "$name" "$_orphaning_job"
  wrapper=$JOB_WRAPPER dlock_pid=$JOB_DLOCK_PID job=$JOB_PID
  grandchild=$(cat "$tmpdir/grandchild.pid")
  track "$grandchild"

  # The lock passes to the job's processes: no guard process is needed to
  # kill them before a lease lapses, and none is started (it costs a fork).
  [ -z "$(pgrep -P "$dlock_pid" -x dlock-guard)" ] ||
    fail "dlock run $name started a dlock-guard although its lock passes to the job"
  kill -KILL "$dlock_pid"
  wait_exit "$wrapper" 5
  [ "$(cat "$tmpdir/dlock.rc")" = 137 ] || fail "kill -9 of dlock: its status was $(cat "$tmpdir/dlock.rc"), expected 137"
  wait_until -t 5 is_gone "$job" || fail "the job (pid $job) survived kill -9 of dlock"
  is_alive "$grandchild" || fail "test set-up: the grandchild (pid $grandchild) ended with the job"

  capture "${DL[@]}" run "$name" -- true
  [ "$rc" = 75 ] ||
    fail "with dlock killed but the job's grandchild still running, run $name -- true exited $rc, expected 75 (busy): the lock was freed while a process of the job still ran; stderr: $err"

  "${DL[@]}" run "$name" --wait 20s -- sh -c "$_second_holder" sh "$tmpdir" </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
  waiter=$!
  track "$waiter"
  wait_until has_waiter "$name" || fail "the second run never waited for $name; stderr: $(cat "$tmpdir/waiter.err")"
  [ ! -e "$tmpdir/waiter.saw" ] ||
    fail "the second run got the lock while the job's grandchild still ran: $(cat "$tmpdir/waiter.saw")"

  : >"$tmpdir/finish"
  wait_exit "$waiter" 15
  [ "$rc" = 0 ] || fail "the second run exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
  read -r saw got <"$tmpdir/waiter.saw"
  [ "$saw" = after ] || fail "the second run got the lock before the job's grandchild had ended"
  done_ms=$(cat "$tmpdir/grandchild.done")
  echo "the second run got the lock $((got - done_ms)) ms after the job's grandchild ended"
  [ $((got - done_ms)) -lt 2000 ] ||
    fail "the second run got the lock only $((got - done_ms)) ms after the job's grandchild ended"
}

# The process outside dlock's tree: takes the descriptors sent to
# $1/escape.sock, lists what they are in escape.fds, holds them until
# $1/escape.finish exists.
_escape_keeper='import os, socket, sys, time
d = sys.argv[1]
server = socket.socket(socket.AF_UNIX)
server.bind(d + "/escape.sock")
server.listen(1)
connection, _ = server.accept()
_, fds, _, _ = socket.recv_fds(connection, 16, 16)
with open(d + "/escape.tmp", "w") as out:
    out.write("\n".join(os.readlink("/proc/self/fd/%d" % fd) for fd in fds) + "\n")
os.rename(d + "/escape.tmp", d + "/escape.fds")
while not os.path.exists(d + "/escape.finish"):
    time.sleep(0.01)'

# The job: sends every descriptor it has besides 0-2 to the keeper.
_escaping_job='import os, socket, sys
fds = []
for entry in os.listdir("/proc/self/fd"):
    try:
        if int(entry) > 2:
            os.fstat(int(entry))
            fds.append(int(entry))
    except OSError:
        pass
client = socket.socket(socket.AF_UNIX)
client.connect(sys.argv[1] + "/escape.sock")
socket.send_fds(client, [b"x"], fds)'

check_release_with_escaped_copy() {
  local name=$1 pattern=$2 keeper
  rm -f "$tmpdir/escape.sock" "$tmpdir/escape.fds" "$tmpdir/escape.finish"
  python3 -c "$_escape_keeper" "$tmpdir" </dev/null >/dev/null 2>"$tmpdir/escape.err" &
  keeper=$!
  track "$keeper"
  wait_until test -S "$tmpdir/escape.sock" || fail "test set-up: the escape keeper did not listen; $(cat "$tmpdir/escape.err")"

  capture "${DL[@]}" run "$name" -- python3 -c "$_escaping_job" "$tmpdir"
  [ "$rc" = 0 ] || fail "run $name over a job that passes its descriptors on exited $rc; stderr: $err"
  wait_until test -s "$tmpdir/escape.fds" || fail "the escape keeper got no descriptor; $(cat "$tmpdir/escape.err")"
  grep -q "$pattern" "$tmpdir/escape.fds" ||
    fail "the job had no descriptor matching '$pattern' to pass on, only: $(tr '\n' ' ' <"$tmpdir/escape.fds")"
  is_alive "$keeper" || fail "test set-up: the escape keeper ended early; $(cat "$tmpdir/escape.err")"

  capture "${DL[@]}" run "$name" -- true
  [ "$rc" = 0 ] ||
    fail "after a normal release, run $name -- true exited $rc while a process outside dlock held a copy of the lock's descriptor ($(tr '\n' ' ' <"$tmpdir/escape.fds")): the release must end the lock for every copy; stderr: $err"
  : >"$tmpdir/escape.finish"
  wait_until -t 5 is_gone "$keeper" || fail "the escape keeper did not end"
}
