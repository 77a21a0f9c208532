#!/usr/bin/env bash
# dlock frozen (SIGSTOP, like a VM pause or a starved machine) past its
# lease while its job ends on its own: on resuming, dlock sees the end only
# after the lease was in doubt. Nobody can say the job finished under the
# lock, so dlock must not report the job's status as a clean run: it exits 76
# with a message naming the cause (and the job's own status).
SCENARIO="a job that ended while dlock was paused past its lease is not reported as a clean run"
. "$(dirname "$0")/lib.sh"

mkfifo "$tmpdir/go"
"${DL[@]}" run p --ttl 1s -- sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; read -r _ <"$2"; exit 3' \
  sh "$tmpdir/child.pid" "$tmpdir/go" </dev/null >/dev/null 2>"$tmpdir/err" &
dlock_pid=$!
track "$dlock_pid"
wait_until test -s "$tmpdir/child.pid" || fail "the job did not start; stderr: $(cat "$tmpdir/err")"
child=$(cat "$tmpdir/child.pid")
track "$child"

kill -STOP "$dlock_pid"
# The pause itself is what is under test: it has to outlast the 1 s lease.
sleep 1.3
echo go >"$tmpdir/go"
# The job's parent is frozen, so it stays a zombie: is_gone counts that.
wait_until -t 5 is_gone "$child" || fail "the job did not end"
kill -CONT "$dlock_pid"
wait_exit "$dlock_pid" 3
[ "$rc" = 76 ] || fail "dlock exited $rc for a job that ended after its lease could lapse, expected 76; stderr: $(cat "$tmpdir/err")"
assert_one_line_message "stderr after the pause" "$(cat "$tmpdir/err")"
grep -q "lease" "$tmpdir/err" || fail "the message does not name the cause: $(cat "$tmpdir/err")"
grep -q "status 3" "$tmpdir/err" || fail "the message does not give the job's status: $(cat "$tmpdir/err")"
# dlock's exit ended the file lock: the next run gets it at once.
"${DL[@]}" run p --ttl 1s -- true 2>"$tmpdir/err2" || fail "the lock was not free after the run: $(cat "$tmpdir/err2")"
pass
