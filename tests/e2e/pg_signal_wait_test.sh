#!/usr/bin/env bash
# PostgreSQL: a waiting run blocks server-side in pg_advisory_lock (an
# ungranted request in pg_locks). A signal ends the wait at once (128+N, as
# on every backend) and leaves nothing behind: no ungranted request, no
# session of the waiter's, the holder's lock untouched. A bounded --wait
# that runs out exits 75 after about its duration, also leaving nothing.
SCENARIO="postgres: a signal ends a server-side wait"
. "$(dirname "$0")/lib.sh"
use_postgres

name=w
key=$(pg_key "$name")
start_holder h "$name" --ttl 30s
holder_backend=$(pg_holder_pid "$key")
[ -n "$holder_backend" ] || fail "pg_locks shows no holder of $key while dlock holds $name"

one_waiting() { [ "$(pg_waiting "$key")" = 1 ]; }
none_waiting() { [ "$(pg_waiting "$key")" = 0 ]; }
only_holder_session() { [ "$(pg_sessions "$name")" = 1 ] && [ "$(pg_client_sessions)" = 1 ]; }

# interrupted SIGNAL STATUS WAIT: a run with --wait WAIT blocked on the lock
# gets SIGNAL: it exits STATUS within 1 s without running its job, and
# leaves nothing behind.
interrupted() {
  local signal=$1 status=$2 wait=$3 waiter started elapsed
  rm -f "$tmpdir/ran"
  "${DL[@]}" run "$name" --wait "$wait" -- touch "$tmpdir/ran" </dev/null >"$tmpdir/waiter.out" 2>"$tmpdir/waiter.err" &
  waiter=$!
  track "$waiter"
  wait_until one_waiting || fail "run --wait $wait never blocked in pg_advisory_lock (no ungranted request for $key); stderr: $(cat "$tmpdir/waiter.err")"
  wait_until has_waiter "$name" || fail "status never counted the run --wait $wait as a waiter"
  started=$(now_ms)
  kill "-$signal" "$waiter"
  wait_exit "$waiter" 5
  elapsed=$(($(now_ms) - started))
  [ "$rc" = "$status" ] || fail "SIG$signal to a waiting dlock: exit $rc, expected $status; stderr: $(cat "$tmpdir/waiter.err")"
  [ "$elapsed" -lt 1000 ] || fail "the waiting dlock took ${elapsed} ms to end on SIG$signal"
  [ ! -e "$tmpdir/ran" ] || fail "the run interrupted by SIG$signal ran its command"
  wait_until -t 1 none_waiting || fail "the run interrupted by SIG$signal left an ungranted request for $key in pg_locks"
  wait_until -t 2 only_holder_session ||
    fail "after SIG$signal to the waiter, $(pg_client_sessions) sessions are left ($(pg_sessions "$name") named 'dlock:$name'), expected the holder's alone"
  [ "$(lock_waiters "$name")" = 0 ] || fail "the run interrupted by SIG$signal is still counted as waiting"
  [ "$(pg_holder_pid "$key")" = "$holder_backend" ] || fail "after SIG$signal to the waiter, the lock is not held by the holder's session any more"
  holder=$("${DL[@]}" status "$name" --json | json 'd["holder"]["pid"]')
  [ "$holder" = "$HOLDER_PID" ] || fail "after SIG$signal to the waiter, status names holder pid $holder, expected $HOLDER_PID"
  is_alive "$CHILD_PID" || fail "the holder's child died"
}

interrupted TERM 143 forever
interrupted INT 130 20s
interrupted HUP 129 20s

# A bounded wait runs out: 75 after about --wait, nothing left behind.
started=$(now_ms)
capture "${DL[@]}" run "$name" --wait 1s -- touch "$tmpdir/ran"
elapsed=$(($(now_ms) - started))
[ "$rc" = 75 ] || fail "run --wait 1s on a held lock exited $rc, expected 75; stderr: $err"
[ "$elapsed" -ge 900 ] && [ "$elapsed" -lt 2500 ] || fail "run --wait 1s on a held lock gave up after ${elapsed} ms"
[ ! -e "$tmpdir/ran" ] || fail "run --wait 1s ran its command on a held lock"
none_waiting || fail "run --wait 1s left an ungranted request for $key in pg_locks"
wait_until -t 2 only_holder_session || fail "run --wait 1s left its session behind"

# The holder still holds the lock until it ends; then it is free.
is_held "$name" || fail "lock $name is not held any more although its holder still runs"
release_holder h
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the holder exited $rc; stderr: $(cat "$tmpdir/h.err")"
capture "${DL[@]}" status "$name"
[ "$rc" = 3 ] || fail "after the holder ended, status $name exited $rc, expected 3 (free): $out"
capture "${DL[@]}" run "$name" -- true
[ "$rc" = 0 ] || fail "after the holder ended, run $name -- true exited $rc; stderr: $err"
pass
