#!/usr/bin/env bash
# Redis: kill -9 of dlock leaves its lease to run out, T later. The job's
# process group, a grandchild included, must be gone well before that (the
# guard kills it), so that no process of the job runs once another host can
# take the lock. The guard escapes a kill of dlock's whole process group, and
# ends with a run that ends normally, finds no command or finds the lock busy.
SCENARIO="redis: kill -9 of dlock kills the job's process group before the lease lapses"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/guard_lib.sh"
use_redis

# A 4 s lease, at least 2.6 s of it left at the kill: a run right after the
# kill finds the lock busy, however slow a loaded machine starts it. The
# job must be gone within T of the kill and before the lease lapsed.
start_group_job x "x-$$" --ttl 4s
check_guard_shape x
killed=$(now_ms)
kill -KILL "$GROUP_DLOCK_PID"
capture "${DL[@]}" run x -- true
[ "$rc" = 75 ] || fail "run x -- true right after kill -9 of the holder exited $rc, expected 75: its lease runs for 4 s"
check_group_killed "kill -9 of dlock (ttl 4 s)" "$killed" 4000
wait_until -t 8 is_free x || fail "the lease of the killed holder did not lapse within 8 s"
lapsed=$(($(now_ms) - killed))
echo "the lease lapsed ${lapsed} ms after kill -9 of dlock"
capture "${DL[@]}" run x -- true
[ "$rc" = 0 ] || fail "run x -- true after the lease lapsed exited $rc; stderr: $err"
[ "$GONE_MS" -lt "$lapsed" ] || fail "the job's grandchild was gone only after the lease had lapsed"

# dlock alone in its process group, and that whole group killed: the guard,
# in a process group of its own, is not.
GROUP_SETSID=1 start_group_job s "s-$$"
[ "$(ps -o pgid= -p "$GROUP_DLOCK_PID" | tr -d ' ')" = "$GROUP_DLOCK_PID" ] ||
  fail "test set-up: dlock $GROUP_DLOCK_PID does not lead a process group of its own"
check_guard_shape s
killed=$(now_ms)
kill -KILL -- "-$GROUP_DLOCK_PID"
check_group_killed "kill -9 of dlock's process group" "$killed" 1000

check_no_guard_left n
pass
