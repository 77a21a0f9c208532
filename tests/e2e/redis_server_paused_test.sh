#!/usr/bin/env bash
# The Redis server is frozen (SIGSTOP) for longer than the lease while
# `dlock run --ttl 2s` runs a job: connections stay open but nothing answers,
# so dlock must have the job gone and exit 76 before the lease it last renewed
# could have lapsed, i.e. within the ttl of the freeze. Once the server thaws,
# the lease has lapsed there and the lock is free for the next holder.
SCENARIO="redis server paused under a running job"
. "$(dirname "$0")/lib.sh"
use_redis

ttl_ms=2000
# dlock runs below a subshell that stamps the moment it exits.
(
  "${DL[@]}" run paused.server --ttl 2s -- sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' sh "$tmpdir/child.pid" \
    </dev/null >/dev/null 2>"$tmpdir/err" &
  echo $! >"$tmpdir/dlock.pid"
  wait $!
  echo $? >"$tmpdir/dlock.rc.tmp"
  now_ms >"$tmpdir/dlock.exit_ms"
  mv "$tmpdir/dlock.rc.tmp" "$tmpdir/dlock.rc"
) &
wrapper=$!
track "$wrapper"
wait_until test -s "$tmpdir/dlock.pid" || fail "dlock did not start"
dlock_pid=$(cat "$tmpdir/dlock.pid")
track "$dlock_pid"
wait_until test -s "$tmpdir/child.pid" || fail "the job did not start; stderr: $(cat "$tmpdir/err")"
child=$(cat "$tmpdir/child.pid")
track "$child"
wait_until grep -qx sleep "/proc/$child/comm" || fail "the job never became 'sleep'"
[ "$("$RCLI" EXISTS "$(redis_key paused.server lock)")" = 1 ] || fail "the lock key is not on the server while the job runs"

# Let at least one renewal happen (the PTTL jumps up between two readings),
# so that the freeze lands on a heartbeat in full swing.
last_pttl=$("$RCLI" PTTL "$(redis_key paused.server lock)")
renewed() {
  local p
  p=$("$RCLI" PTTL "$(redis_key paused.server lock)")
  [ "$p" -gt "$last_pttl" ] 2>/dev/null && return 0
  last_pttl=$p
  return 1
}
wait_until -t 3 renewed || fail "the lease was never renewed (PTTL now $last_pttl)"

fence=$("${DL[@]}" status paused.server --json | json 'd["fence"]')
server=$(cat "$DLOCK_TEST_REDIS_PIDFILE")
thaw() { kill -CONT "$server" 2>/dev/null; }
killed=$(now_ms)
kill -STOP "$server"
# The freeze lasts until the job is gone and dlock has given up, and at least
# half a second longer than the lease: the pause itself is under test.
wait_until -t 5 is_gone "$child" || {
  thaw
  fail "the job was still running 5 s after the server froze (ttl 2 s)"
}
child_gone=$(($(now_ms) - killed))
wait_until -t 10 test -e "$tmpdir/dlock.rc" || {
  thaw
  fail "dlock did not exit within 10 s of the server's freeze (ttl 2 s; job gone after ${child_gone} ms)"
}
remaining=$((killed + ttl_ms + 500 - $(now_ms)))
[ "$remaining" -gt 0 ] && sleep "$((remaining / 1000)).$(printf '%03d' $((remaining % 1000)))"
thaw
rc=$(cat "$tmpdir/dlock.rc")
exited=$(($(cat "$tmpdir/dlock.exit_ms") - killed))
echo "job gone ${child_gone} ms, dlock exited ${exited} ms after the server froze (ttl ${ttl_ms} ms)"
[ "$rc" = 76 ] || fail "dlock exited $rc after the server froze, expected 76; stderr: $(cat "$tmpdir/err")"
[ "$child_gone" -lt "$ttl_ms" ] ||
  fail "the job was gone only ${child_gone} ms after the server froze: the ${ttl_ms} ms lease could have lapsed while it ran"
[ "$exited" -lt "$ttl_ms" ] ||
  fail "dlock exited ${exited} ms after the server froze (job gone after ${child_gone} ms): later than the ${ttl_ms} ms lease"
assert_one_line_message "stderr after the server froze" "$(cat "$tmpdir/err")"

# Thawed after the lease ran out, the server finds the lock free (requests
# dlock queued while it was frozen must not revive it), with a greater fence
# for the next holder.
wait_until -t 1 is_free paused.server || fail "the lock is still held after the server thawed past its lease"
capture "${DL[@]}" run paused.server -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run after the thaw exited $rc; stderr: $err"
python3 -c 'import sys; sys.exit(0 if int(sys.argv[2]) > int(sys.argv[1]) else 1)' "$fence" "$out" ||
  fail "the fence after the thaw ($out) is not greater than the lost holder's ($fence)"
pass
