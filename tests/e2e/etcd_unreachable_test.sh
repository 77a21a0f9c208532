#!/usr/bin/env bash
# An unreachable etcd is 69 with one line, never a hang: nothing listening
# fails at once, a listener that never answers after --connect-timeout, for
# every command. An endpoint list fails over: with member 1 of three stopped,
# the full URL (member 1 first) still takes, hands over and releases locks.
# A malformed URL is a configuration error (78).
# Run under scripts/with-etcd --cluster 3.
SCENARIO="etcd: unreachable server"
. "$(dirname "$0")/lib.sh"
use_etcd

[ "${DLOCK_TEST_ETCD_CLUSTER:-1}" = 3 ] || fail "run this test under scripts/with-etcd --cluster 3"

# A port nothing listens on: bound once by the kernel's choice, then closed.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
closed=$(free_port)
closed2=$(free_port)

# unavailable WHAT LIMIT_MS CMD...: CMD exits 69 with one line within
# LIMIT_MS and never runs the job.
unavailable() {
  local what=$1 limit=$2 started elapsed
  shift 2
  rm -f "$tmpdir/ran"
  started=$(now_ms)
  capture "$@"
  elapsed=$(($(now_ms) - started))
  [ "$rc" = 69 ] || fail "$what: exit $rc, expected 69; stderr: $err"
  assert_one_line_message "$what" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran"
  [ "$elapsed" -lt "$limit" ] || fail "$what: took ${elapsed} ms (limit $limit ms)"
  echo "$what: 69 after ${elapsed} ms"
}

nothing=etcd://127.0.0.1:$closed
unavailable "run, nothing listening" 1000 "$DLOCK_BIN" -b "$nothing" run u -- touch "$tmpdir/ran"
unavailable "run --wait 10s, nothing listening" 1000 "$DLOCK_BIN" -b "$nothing" run u --wait 10s -- touch "$tmpdir/ran"
unavailable "acquire, nothing listening" 1000 "$DLOCK_BIN" -b "$nothing" acquire u
unavailable "status, nothing listening" 1000 "$DLOCK_BIN" -b "$nothing" status u
unavailable "list, nothing listening" 1000 "$DLOCK_BIN" -b "$nothing" list
unavailable "release --force, nothing listening" 1000 "$DLOCK_BIN" -b "$nothing" release u --force
unavailable "renew, nothing listening" 1000 "$DLOCK_BIN" -b "$nothing" renew u 1234abcd
unavailable "run, two addresses, nothing listening on either" 1000 \
  "$DLOCK_BIN" -b "etcd://127.0.0.1:$closed,127.0.0.1:$closed2" run u -- touch "$tmpdir/ran"
case $err in *"$closed"*"$closed2"* | *"$closed2"*"$closed"*) ;; *) fail "the message does not name both endpoints tried: $err" ;; esac
started=$(now_ms)
capture "$DLOCK_BIN" -b "$nothing" ping
elapsed=$(($(now_ms) - started))
[ "$rc" = 69 ] || fail "ping, nothing listening: exit $rc, expected 69; stdout: $out; stderr: $err"
printf '%s\n' "$out" | grep -qi unreachable || fail "ping, nothing listening: does not report the endpoint unreachable: $out"
[ "$elapsed" -lt 1000 ] || fail "ping, nothing listening: took ${elapsed} ms"

# A listener that accepts and never writes a byte: --connect-timeout bounds
# every round trip.
python3 - "$tmpdir/silent.port" <<'PY' &
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    conn, _ = s.accept()
    held.append(conn)  # kept open, never answered
PY
track $!
wait_until test -s "$tmpdir/silent.port" || fail "the silent listener did not start"
silent=etcd://127.0.0.1:$(cat "$tmpdir/silent.port")
unavailable "run --connect-timeout 500ms, silent listener" 1500 \
  "$DLOCK_BIN" -b "$silent" --connect-timeout 500ms run u -- touch "$tmpdir/ran"
unavailable "status --connect-timeout 500ms, silent listener" 1500 \
  "$DLOCK_BIN" -b "$silent" --connect-timeout 500ms status u
unavailable "run with the default connect timeout, silent listener" 3500 \
  "$DLOCK_BIN" -b "$silent" run u -- touch "$tmpdir/ran"

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
for url in "etcd://127.0.0.1:notaport" "etcd://" "etcd://127.0.0.1:$closed/some/path" \
  "etcd://127.0.0.1:$closed?cacert=/x" "etcds://127.0.0.1:$closed?cert=$tmpdir/c.pem"; do
  capture "$DLOCK_BIN" -b "$url" run u -- touch "$tmpdir/ran"
  [ "$rc" = 78 ] || fail "the malformed URL $url: exit $rc, expected 78; stderr: $err"
  assert_one_line_message "the malformed URL $url" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "the malformed URL $url: the job ran"
done
pass
