#!/usr/bin/env bash
# An unreachable etcd is 69 with one line, never a hang: nothing listening
# fails at once, a listener that never answers after --connect-timeout, for
# every command. An endpoint list fails over: with member 1 of three stopped,
# the full URL (member 1 first) still takes, hands over and releases locks.
# A malformed URL is a configuration error (78). The checks all server
# backends share are in lib.sh (check_unavailable and what follows it).
# Run under scripts/with-etcd --cluster 3.
SCENARIO="etcd: unreachable server"
. "$(dirname "$0")/lib.sh"
use_etcd

[ "${DLOCK_TEST_ETCD_CLUSTER:-1}" = 3 ] || fail "run this test under scripts/with-etcd --cluster 3"

closed=$(free_port)
closed2=$(free_port)
nothing=etcd://127.0.0.1:$closed
check_unavailable_commands "nothing listening" 1900 "$nothing"
check_unavailable "renew, nothing listening" 1900 "$DLOCK_BIN" -b "$nothing" renew u 1234abcd
check_unavailable "run, two addresses, nothing listening on either" 1900 \
  "$DLOCK_BIN" -b "etcd://127.0.0.1:$closed,127.0.0.1:$closed2" run u -- touch "$tmpdir/ran"
case $err in *"$closed"*"$closed2"* | *"$closed2"*"$closed"*) ;; *) fail "the message does not name both endpoints tried: $err" ;; esac

# A listener that accepts and never writes a byte: --connect-timeout bounds
# every round trip.
start_silent_listener
check_silent_server "etcd://127.0.0.1:$SILENT_PORT" 2000 4500

# Fail-over: member 1, the first endpoint of the URL, stopped.
etcd_stop 1
capture "${DL[@]}" run fo -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run with member 1 (the first endpoint) stopped exited $rc; stderr: $err"
[[ $out =~ ^[0-9]+$ ]] || fail "the job saw DLOCK_FENCE='$out'"
first_fence=$out
capture "${DL[@]}" acquire fo.acq --ttl 30s
[ "$rc" = 0 ] || fail "acquire with member 1 stopped exited $rc; stderr: $err"
token=$out
is_held fo.acq || fail "status with member 1 stopped does not see fo.acq held"
capture "${DL[@]}" renew fo.acq "$token" --ttl 30s
[ "$rc" = 0 ] || fail "renew with member 1 stopped exited $rc; stderr: $err"
# A waiter's watch goes through a live member too.
"${DL[@]}" run fo.acq --wait 10s -- sh -c 'echo "$DLOCK_FENCE" >"$1"' sh "$tmpdir/got" </dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter fo.acq || fail "the waiter never queued with member 1 stopped; stderr: $(cat "$tmpdir/waiter.err")"
capture "${DL[@]}" release fo.acq "$token"
[ "$rc" = 0 ] || fail "release with member 1 stopped exited $rc; stderr: $err"
wait_exit "$waiter" 5
[ "$rc" = 0 ] || fail "the waiter exited $rc with member 1 stopped; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(cat "$tmpdir/got")" -gt "$first_fence" ] || fail "the waiter's fence $(cat "$tmpdir/got") is not greater than $first_fence"
is_free fo.acq || fail "fo.acq is still held after the waiter's run"
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping with one of three members stopped exited $rc; stdout: $out; stderr: $err"

# A malformed URL is a configuration error, not "unavailable".
check_malformed_urls "etcd://127.0.0.1:notaport" "etcd://" "etcd://127.0.0.1:$closed/some/path" \
  "etcd://127.0.0.1:$closed?cacert=/x" "etcds://127.0.0.1:$closed?cert=$tmpdir/c.pem"
pass
