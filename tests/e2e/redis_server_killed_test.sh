#!/usr/bin/env bash
# The Redis server is killed (SIGKILL) while `dlock run --ttl 2s` runs a job:
# renewals get no answer, so dlock must have the job gone and exit 76 before
# the lease it last renewed could have lapsed, i.e. within the ttl of the kill.
SCENARIO="redis server killed under a running job"
. "$(dirname "$0")/lib.sh"
use_redis

ttl_ms=2000
# dlock runs below a subshell that stamps the moment it exits.
(
  "${DL[@]}" run killed.server --ttl 2s -- sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' sh "$tmpdir/child.pid" \
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
[ "$("$RCLI" EXISTS "$(redis_key killed.server lock)")" = 1 ] || fail "the lock key is not on the server while the job runs"

# Let at least one renewal happen (the PTTL jumps up between two readings),
# so that the kill lands on a heartbeat in full swing.
last_pttl=$("$RCLI" PTTL "$(redis_key killed.server lock)")
renewed() {
  local p
  p=$("$RCLI" PTTL "$(redis_key killed.server lock)")
  [ "$p" -gt "$last_pttl" ] 2>/dev/null && return 0
  last_pttl=$p
  return 1
}
wait_until -t 3 renewed || fail "the lease was never renewed (PTTL now $last_pttl)"

killed=$(now_ms)
kill -KILL "$(cat "$DLOCK_TEST_REDIS_PIDFILE")"
wait_until -t 5 is_gone "$child" || fail "the job was still running 5 s after the server died (ttl 2 s)"
child_gone=$(($(now_ms) - killed))
wait_until -t 10 test -e "$tmpdir/dlock.rc" || fail "dlock did not exit within 10 s of the server's death (ttl 2 s)"
rc=$(cat "$tmpdir/dlock.rc")
exited=$(($(cat "$tmpdir/dlock.exit_ms") - killed))
echo "job gone ${child_gone} ms, dlock exited ${exited} ms after the server died (ttl ${ttl_ms} ms)"
[ "$rc" = 76 ] || fail "dlock exited $rc after the server died, expected 76; stderr: $(cat "$tmpdir/err")"
[ "$child_gone" -lt "$ttl_ms" ] ||
  fail "the job was gone only ${child_gone} ms after the server died: the ${ttl_ms} ms lease could have lapsed while it ran"
[ "$exited" -lt "$ttl_ms" ] ||
  fail "dlock exited ${exited} ms after the server died (job gone after ${child_gone} ms): later than the ${ttl_ms} ms lease"
assert_one_line_message "stderr after the server died" "$(cat "$tmpdir/err")"
pass
