#!/usr/bin/env bash
# redis+unix:///path.sock reaches the server through its unix socket; ?db=N
# selects a database.
SCENARIO="redis over a unix socket"
. "$(dirname "$0")/lib.sh"
use_redis "redis+unix://$DLOCK_TEST_REDIS_SOCKET"

capture "${DL[@]}" run sock -- sh -c 'echo "$DLOCK_FENCE"; echo "$DLOCK_BACKEND"'
[ "$rc" = 0 ] || fail "run over redis+unix:// exited $rc; stderr: $err"
fence=$(printf '%s\n' "$out" | sed -n 1p)
[[ $fence =~ ^[0-9]+$ ]] || fail "the job saw DLOCK_FENCE='$fence'"
case $(printf '%s\n' "$out" | sed -n 2p) in *"$DLOCK_TEST_REDIS_SOCKET"*) ;; *) fail "the job's DLOCK_BACKEND does not name the socket: $out" ;; esac
[ "$("$RCLI" GET "$(redis_key sock fence)")" = "$fence" ] || fail "the fence counter on the server is not the job's fence $fence"

capture "${DL[@]}" acquire sock --ttl 30s
[ "$rc" = 0 ] || fail "acquire over redis+unix:// exited $rc; stderr: $err"
token=$out
[ "$("$RCLI" EXISTS "$(redis_key sock lock)")" = 1 ] || fail "acquire over the socket did not create the lock key in db 0"
capture "${DL[@]}" status sock
[ "$rc" = 0 ] || fail "status over redis+unix:// exited $rc; stderr: $err"
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping over redis+unix:// exited $rc; stdout: $out; stderr: $err"
capture "${DL[@]}" release sock "$token"
[ "$rc" = 0 ] || fail "release over redis+unix:// exited $rc; stderr: $err"

# Database 3 is another world.
capture "$DLOCK_BIN" -b "redis+unix://$DLOCK_TEST_REDIS_SOCKET?db=3" acquire sock --ttl 30s
[ "$rc" = 0 ] || fail "acquire over redis+unix://...?db=3 exited $rc; stderr: $err"
[ "$("$RCLI" -n 3 EXISTS "$(redis_key sock lock)")" = 1 ] || fail "?db=3 did not put the lock key in database 3"
[ "$("$RCLI" -n 0 EXISTS "$(redis_key sock lock)")" = 0 ] || fail "?db=3 put the lock key in database 0"
is_free sock || fail "a lock held in database 3 shows as held in database 0"
capture "$DLOCK_BIN" -b "redis://127.0.0.1:$DLOCK_TEST_REDIS_PORT/3" status sock
[ "$rc" = 0 ] || fail "redis://host:port/3 does not see the lock held in database 3 (exit $rc; $err)"

# A socket that does not exist: unavailable.
capture "$DLOCK_BIN" -b "redis+unix://$tmpdir/none.sock" run sock -- touch "$tmpdir/ran"
[ "$rc" = 69 ] || fail "a missing socket: run exited $rc, expected 69; stderr: $err"
assert_one_line_message "a missing socket" "$err"
[ ! -e "$tmpdir/ran" ] || fail "a missing socket: the job ran"
pass
