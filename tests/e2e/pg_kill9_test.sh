#!/usr/bin/env bash
# PostgreSQL: kill -9 of dlock holding a lock. The kernel closes its
# connection, the server ends the session at once and with it the advisory
# lock: a `dlock run --wait` blocked in pg_advisory_lock gets the lock
# within about a second, although the holder's --ttl is 30s; the holder's
# job dies with it (PR_SET_PDEATHSIG). The same without a waiter: a plain
# run gets the lock within a second of the kill.
SCENARIO="postgres: kill -9 frees the lock at once"
. "$(dirname "$0")/lib.sh"
use_postgres

name=k9
key=$(pg_key "$name") || fail "could not compute the key of $name"

# start_killable ID: `dlock run NAME --ttl 30s` over a blocking job, below a
# subshell that reports its pid and status (so that this shell prints no
# "Killed" job notice). Sets dlock_pid, child, wrapper.
start_killable() {
  local id=$1
  (
    "${DL[@]}" run "$name" --ttl 30s -- sh -c 'echo "$DLOCK_FENCE" >"$1.fence"; echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' \
      sh "$tmpdir/$id.child" </dev/null >/dev/null 2>"$tmpdir/$id.err" &
    echo $! >"$tmpdir/$id.pid"
    wait $!
    echo $? >"$tmpdir/$id.rc"
  ) 2>/dev/null &
  wrapper=$!
  track "$wrapper"
  wait_until test -s "$tmpdir/$id.pid" || fail "dlock ($id) did not start"
  dlock_pid=$(cat "$tmpdir/$id.pid")
  track "$dlock_pid"
  wait_until test -s "$tmpdir/$id.child" || fail "the job ($id) did not start; stderr: $(cat "$tmpdir/$id.err")"
  child=$(cat "$tmpdir/$id.child")
  track "$child"
  wait_until grep -qx sleep "/proc/$child/comm" || fail "the job ($id) never became 'sleep'"
  [ -n "$(pg_holder_pid "$key")" ] || fail "pg_locks shows no holder of the key of $name while the job ($id) runs"
}

# kill9 ID: kill -9 of the dlock of start_killable; checks its status and
# that its job died with it. Sets killed (the time of the kill).
kill9() {
  local id=$1
  killed=$(now_ms)
  kill -KILL "$dlock_pid"
  wait_exit "$wrapper" 5
  [ "$(cat "$tmpdir/$id.rc")" = 137 ] || fail "kill -9 of dlock ($id): its status was $(cat "$tmpdir/$id.rc"), expected 137"
  wait_until -t 5 is_gone "$child" || fail "the job ($id, pid $child, state $(proc_state "$child")) survived kill -9 of dlock"
}

start_killable one
holder_fence=$(cat "$tmpdir/one.child.fence")

# A waiter, blocked server-side, writes the moment it got the lock.
"${DL[@]}" run "$name" --wait 30s -- sh -c 'date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1"; echo "$DLOCK_FENCE" >"$1.fence"' \
  sh "$tmpdir/got" </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
waiting() { [ "$(pg_waiting "$key")" = 1 ]; }
wait_until waiting || fail "the waiter never blocked in pg_advisory_lock (no ungranted request for $key); stderr: $(cat "$tmpdir/waiter.err")"

kill9 one
wait_until -t 5 test -s "$tmpdir/got" ||
  fail "the waiter did not get the lock within 5 s after kill -9 of the holder (--ttl 30s); stderr: $(cat "$tmpdir/waiter.err")"
elapsed=$(($(cat "$tmpdir/got") - killed))
echo "the waiter got the lock ${elapsed} ms after kill -9 of the holder (--ttl 30s)"
[ "$elapsed" -le 2000 ] || fail "the waiter got the lock only ${elapsed} ms after kill -9 of the holder (a blocked pg_advisory_lock is granted as the session ends; 2 s is room for a loaded machine, far below the 30 s lease)"
wait_exit "$waiter" 5
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(cat "$tmpdir/got.fence")" -gt "$holder_fence" ] ||
  fail "the waiter's fence $(cat "$tmpdir/got.fence") is not greater than the killed holder's, $holder_fence"

# No waiter: a run tried right after the kill gets the lock within a second.
start_killable two
kill9 two
wait_until -t 5 "${DL[@]}" run "$name" -- true 2>/dev/null </dev/null ||
  fail "run $name still did not get the lock 5 s after kill -9 of its holder (--ttl 30s); status: $("${DL[@]}" status "$name" 2>&1)"
echo "a run got the lock $(($(now_ms) - killed)) ms after the second kill -9"
no_session() { [ "$(pg_sessions "$name")" = 0 ]; }
wait_until -t 5 no_session || fail "sessions 'dlock:$name' are left after everything ended: $(pg_sessions "$name")"
is_free "$name" || fail "the lock is still held after every run ended"
pass
