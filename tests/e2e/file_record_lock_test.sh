#!/usr/bin/env bash
# A POSIX lock that is not dlock's on a lock file makes no wait of dlock's
# endless or deaf to signals (issue 34 point 5: another user's lockf(3)
# read lock on root's 0644 lock file made root's --shared and --limit runs
# block with no deadline, ignoring --wait and SIGTERM, also at release).
# Shared holders update the record under an OFD lock, which a POSIX lock on
# the file blocks. Here a lockf read lock stays on the file:
#   - a --shared run and a --limit run fail (69) after the record's
#     patience (5 s), naming the cause, without running the job;
#   - SIGTERM ends a --shared run blocked on it at once (143);
#   - a holder whose job ends while the lock is on the record still exits.
SCENARIO="file: a foreign lock on the record makes no wait endless or deaf"
. "$(dirname "$0")/lib.sh"

"${DL[@]}" run r -- true || fail "run r -- true failed"
file=$LOCKDIR/dlock/r.lock
mkfifo "$tmpdir/lockf.ready"
# lockf_on FILE: a process (pid in $locker) holds a lockf(3) read lock
# on FILE until killed.
lockf_on() {
  /usr/bin/python3 -c '
import fcntl, sys, time
f = open(sys.argv[1])
fcntl.lockf(f, fcntl.LOCK_SH)
open(sys.argv[2], "w").write("locked\n")
time.sleep(120)' "$1" "$tmpdir/lockf.ready" &
  locker=$!
  track "$locker"
  read -r _ <"$tmpdir/lockf.ready"
}
lockf_on "$file"

for mode in "--shared" "--limit 2"; do
  started=$(now_ms)
  # shellcheck disable=SC2086 # two words for --limit 2
  capture timeout 30 "${DL[@]}" run $mode r -- touch "$tmpdir/ran"
  took=$(($(now_ms) - started))
  [ "$rc" = 69 ] || fail "run $mode beside a lockf lock exited $rc after ${took} ms, expected 69; stderr: $err"
  assert_one_line_message "run $mode beside a lockf lock" "$err"
  case $err in *"POSIX or OFD lock"*) ;; *) fail "run $mode: the message does not name the cause: $err" ;; esac
  [ ! -e "$tmpdir/ran" ] || fail "run $mode ran its job without the lock"
  [ "$took" -lt 15000 ] || fail "run $mode took ${took} ms to give up (patience 5 s)"
done

# SIGTERM while blocked: the run ends at once.
"${DL[@]}" run --shared r --wait 60s -- touch "$tmpdir/ran" 2>"$tmpdir/term.err" &
waiter=$!
track "$waiter"
blocked() { grep -q ' -> OFDLCK ' /proc/locks; }
wait_until blocked || fail "the run never waited for the record: $(cat /proc/locks)"
kill -TERM "$waiter"
signalled=$(now_ms)
wait_exit "$waiter" 10
gone=$(($(now_ms) - signalled))
[ "$rc" = 143 ] || fail "a run blocked on the record exited $rc after SIGTERM, expected 143: $(cat "$tmpdir/term.err")"
[ "$gone" -lt 2000 ] || fail "a run blocked on the record ended ${gone} ms after SIGTERM, not at once"
[ ! -e "$tmpdir/ran" ] || fail "the signalled run ran its job"

# A holder whose job ends while the record is locked still exits (its
# release gives up on the record after the patience; the kernel lock ends
# with it).
kill "$locker"
wait_exit "$locker" 5
start_holder h r --shared
lockf_on "$file"
released=$(now_ms)
release_holder h
wait_exit "$HOLDER_PID" 20
took=$(($(now_ms) - released))
[ "$took" -lt 15000 ] || fail "the holder took ${took} ms to exit after its job ended"
kill "$locker"
pass
