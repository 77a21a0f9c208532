#!/usr/bin/env bash
# redis-sentinel://S/dlockmaster asks the sentinels, in order, for the master
# and takes the lock there. Run under scripts/with-redis --sentinel.
SCENARIO="redis through sentinel"
. "$(dirname "$0")/lib.sh"
[ -n "${DLOCK_TEST_SENTINEL_URL:-}" ] || fail "run this test under scripts/with-redis --sentinel"
use_redis "$DLOCK_TEST_SENTINEL_URL"

capture "${DL[@]}" run via.sentinel -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run through the sentinel exited $rc; stderr: $err"
[[ $out =~ ^[0-9]+$ ]] || fail "the job saw DLOCK_FENCE='$out'"
[ "$("$RCLI" GET "$(redis_key via.sentinel fence)")" = "$out" ] || fail "the run through the sentinel did not lock on the master"

capture "${DL[@]}" acquire via.sentinel --ttl 30s
[ "$rc" = 0 ] || fail "acquire through the sentinel exited $rc; stderr: $err"
token=$out
[ "$("$RCLI" EXISTS "$(redis_key via.sentinel lock)")" = 1 ] || fail "acquire through the sentinel left no lock key on the master"
capture "${DL[@]}" status via.sentinel
[ "$rc" = 0 ] || fail "status through the sentinel exited $rc; stderr: $err"
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping through the sentinel exited $rc; stdout: $out; stderr: $err"
case $out in *":$DLOCK_TEST_REDIS_PORT"*) ;; *) fail "ping through the sentinel does not name the master's address (port $DLOCK_TEST_REDIS_PORT): $out" ;; esac
printf '%s\n' "$out" | grep -qi master || fail "ping through the sentinel does not show the role master: $out"
capture "${DL[@]}" release via.sentinel "$token"
[ "$rc" = 0 ] || fail "release through the sentinel exited $rc; stderr: $err"

# Sentinels are asked in order: a dead first one is skipped.
dead=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
capture "$DLOCK_BIN" -b "redis-sentinel://127.0.0.1:$dead,127.0.0.1:$DLOCK_TEST_SENTINEL_PORT/dlockmaster" run via.sentinel -- true
[ "$rc" = 0 ] || fail "a dead first sentinel followed by a live one: run exited $rc; stderr: $err"

# A master name the sentinel does not know: one line, the job not run.
capture "$DLOCK_BIN" -b "redis-sentinel://127.0.0.1:$DLOCK_TEST_SENTINEL_PORT/nosuchmaster" run via.sentinel -- touch "$tmpdir/ran"
case $rc in 69 | 78) ;; *) fail "an unknown master name: run exited $rc, expected 69 (or 78); stderr: $err" ;; esac
assert_one_line_message "an unknown master name" "$err"
case $err in *nosuchmaster*) ;; *) fail "the message does not name the unknown master: $err" ;; esac
[ ! -e "$tmpdir/ran" ] || fail "an unknown master name: the job ran"

# No sentinel reachable at all: unavailable.
capture "$DLOCK_BIN" -b "redis-sentinel://127.0.0.1:$dead/dlockmaster" run via.sentinel -- touch "$tmpdir/ran"
[ "$rc" = 69 ] || fail "no reachable sentinel: run exited $rc, expected 69; stderr: $err"
assert_one_line_message "no reachable sentinel" "$err"
pass
