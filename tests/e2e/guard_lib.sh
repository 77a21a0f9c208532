# shellcheck shell=bash
# shellcheck disable=SC2154 # tmpdir and rc come from lib.sh
# Helpers for the scenarios of `dlock run`'s guard, the process that kills
# the job's process group if dlock dies (kill -9, the OOM killer) while the
# job may still run. Source it after lib.sh (and use_redis or the like):
#
#   SCENARIO="..."
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/guard_lib.sh"
#
# Guards are told apart from those of other tests running at the same time
# by a variable in dlock's environment, which the guard keeps:
# DLOCK_E2E_GUARD=TAG.
#
#   guards_tagged TAG       pids of the live dlock-guard processes of TAG
#   no_guard_tagged TAG     true if there is none
#   start_group_job NAME TAG [OPTS]
#                           background `dlock run NAME [OPTS]` over a job
#                           whose grandchild (sleep 30) stays in the job's
#                           process group; sets GROUP_DLOCK_PID, GROUP_JOB_PID,
#                           GROUP_GRANDCHILD_PID and GUARD_PID (its guard;
#                           empty if it has none).
#                           With GROUP_SETSID=1 dlock runs in a session and
#                           process group of its own.
#   check_guard_shape NAME  the guard is a child of dlock in a process group
#                           of its own, has descriptor 0 (a pipe) only, reads
#                           "dlock-guard" in /proc/PID/cmdline and comm, and
#                           `pgrep -f "... run NAME"` finds dlock alone
#   check_group_killed WHAT KILLED_MS LIMIT_MS
#                           the job and its grandchild are gone within
#                           LIMIT_MS of KILLED_MS (now_ms when dlock was
#                           killed, WHAT says how); so is the guard. Sets
#                           GONE_MS, when the grandchild was (after KILLED_MS)
#   check_no_guard_left NAME
#                           a run that ends normally, one whose command is
#                           not found (127) and a busy run (75, after a
#                           --wait during which its guard exists) leave no
#                           guard behind

guards_tagged() {
  local tag=$1 dir comm
  for dir in /proc/[0-9]*; do
    comm=
    read -r comm 2>/dev/null <"$dir/comm" || continue
    [ "$comm" = dlock-guard ] || continue
    is_alive "${dir#/proc/}" || continue
    tr '\0' '\n' 2>/dev/null <"$dir/environ" | grep -qxF "DLOCK_E2E_GUARD=$tag" && echo "${dir#/proc/}"
  done
  return 0
}

no_guard_tagged() { [ -z "$(guards_tagged "$1")" ]; }

one_guard_tagged() { [ "$(guards_tagged "$1" | wc -l)" = 1 ]; }

# The job: a grandchild in the job's own process group, then waits for ever.
# shellcheck disable=SC2016 # expanded by the job's shell
_group_job='d=$1
sleep 30 &
echo $! >"$d/gc.tmp" && mv "$d/gc.tmp" "$d/gc.pid"
echo $$ >"$d/job.tmp" && mv "$d/job.tmp" "$d/job.pid"
exec sleep 1000'

start_group_job() {
  local name=$1 tag=$2
  local RUN_PREFIX=(env "DLOCK_E2E_GUARD=$tag")
  shift 2
  # setsid(1) execs in place here (a background child is no group leader):
  # $! is dlock either way.
  [ "${GROUP_SETSID:-0}" = 1 ] && RUN_PREFIX+=(setsid)
  rm -f "$tmpdir/gc.pid"
  start_run "$name" "$_group_job" "$@"
  GROUP_DLOCK_PID=$JOB_DLOCK_PID GROUP_JOB_PID=$JOB_PID
  GROUP_GRANDCHILD_PID=$(cat "$tmpdir/gc.pid")
  track "$GROUP_GRANDCHILD_PID"
  [ "$(ps -o pgid= -p "$GROUP_GRANDCHILD_PID" | tr -d ' ')" = "$GROUP_JOB_PID" ] ||
    fail "test set-up: the grandchild $GROUP_GRANDCHILD_PID is not in the job's process group $GROUP_JOB_PID"
  # The guard exists before the lock is taken, so before the job starts.
  GUARD_PID=$(guards_tagged "$tag" | tr '\n' ' ')
  GUARD_PID=${GUARD_PID% }
  case $GUARD_PID in *' '*) fail "dlock run $name (pid $GROUP_DLOCK_PID) has several guards: $GUARD_PID" ;; esac
  [ -z "$GUARD_PID" ] || track "$GUARD_PID"
}

check_guard_shape() {
  local name=$1 pgid fds matches
  [ -n "$GUARD_PID" ] || fail "dlock run $name (pid $GROUP_DLOCK_PID) has no dlock-guard process"
  [ "$(ps -o ppid= -p "$GUARD_PID" | tr -d ' ')" = "$GROUP_DLOCK_PID" ] ||
    fail "the guard $GUARD_PID is not a child of dlock $GROUP_DLOCK_PID"
  pgid=$(ps -o pgid= -p "$GUARD_PID" | tr -d ' ')
  [ "$pgid" = "$GUARD_PID" ] || fail "the guard $GUARD_PID is not in a process group of its own (process group $pgid)"
  fds=$(cd "/proc/$GUARD_PID/fd" && echo *)
  [ "$fds" = 0 ] || fail "the guard $GUARD_PID has descriptors '$fds', expected 0 alone"
  case $(readlink "/proc/$GUARD_PID/fd/0") in pipe:*) ;; *) fail "the guard's descriptor 0 is not a pipe" ;; esac
  [ "$(tr '\0' '\n' <"/proc/$GUARD_PID/cmdline")" = dlock-guard ] ||
    fail "the guard's command line is '$(tr '\0' ' ' <"/proc/$GUARD_PID/cmdline")', expected dlock-guard"
  matches=$(pgrep -f -- "$BACKEND run $name " | tr '\n' ' ')
  [ "$matches" = "$GROUP_DLOCK_PID " ] ||
    fail "pgrep -f '$BACKEND run $name ' finds '$matches', expected dlock ($GROUP_DLOCK_PID) alone"
}

check_group_killed() {
  local what=$1 killed=$2 limit=$3
  wait_until -t 5 is_gone "$GROUP_GRANDCHILD_PID" ||
    fail "the job's grandchild $GROUP_GRANDCHILD_PID (in the job's process group) still runs 5 s after $what"
  GONE_MS=$(($(now_ms) - killed))
  echo "the job's grandchild was gone ${GONE_MS} ms after $what"
  [ "$GONE_MS" -lt "$limit" ] ||
    fail "the job's grandchild was gone only ${GONE_MS} ms after $what (limit ${limit} ms)"
  wait_until -t 1 is_gone "$GROUP_JOB_PID" || fail "the job $GROUP_JOB_PID still runs after $what"
  [ -z "$GUARD_PID" ] || wait_until -t 1 is_gone "$GUARD_PID" ||
    fail "the guard $GUARD_PID still runs after it killed the job"
}

check_no_guard_left() {
  local name=$1 tag=normal-$$-$RANDOM waiter
  # As a caller would: the command substitution ends when every holder of
  # dlock's stdout has closed it, the guard included if it kept it.
  out=$(DLOCK_E2E_GUARD=$tag timeout 10 "${DL[@]}" run "$name" -- echo ran 2>"$tmpdir/normal.err" </dev/null)
  rc=$?
  if [ "$rc" != 0 ] || [ "$out" != ran ]; then
    fail "out=\$(dlock run $name -- echo ran): exit $rc, output '$out'; stderr: $(cat "$tmpdir/normal.err")"
  fi
  wait_until -t 5 no_guard_tagged "$tag" ||
    fail "a dlock-guard is left after a run that ended: $(guards_tagged "$tag" | tr '\n' ' ')"

  tag=missing-$$-$RANDOM
  capture env DLOCK_E2E_GUARD="$tag" "${DL[@]}" run "$name" -- "$tmpdir/no-such-command"
  [ "$rc" = 127 ] || fail "run $name over a command that does not exist exited $rc, expected 127; stderr: $err"
  wait_until -t 5 no_guard_tagged "$tag" ||
    fail "a dlock-guard is left after a run whose command was not found: $(guards_tagged "$tag" | tr '\n' ' ')"

  start_holder h "$name"
  tag=busy-$$-$RANDOM
  DLOCK_E2E_GUARD=$tag "${DL[@]}" run "$name" --wait 1500ms -- true </dev/null >/dev/null 2>"$tmpdir/busy.err" &
  waiter=$!
  track "$waiter"
  wait_until -t 1 one_guard_tagged "$tag" || fail "a run waiting for a busy lock has no dlock-guard"
  wait_exit "$waiter" 5
  [ "$rc" = 75 ] || fail "run $name --wait 1500ms on a busy lock exited $rc, expected 75; stderr: $(cat "$tmpdir/busy.err")"
  wait_until -t 5 no_guard_tagged "$tag" ||
    fail "a dlock-guard is left after a busy run (75): $(guards_tagged "$tag" | tr '\n' ' ')"
  release_holder h
  wait_exit "$HOLDER_PID"
  [ "$rc" = 0 ] || fail "the holder of $name exited $rc"
}
