#!/usr/bin/env bash
# etcd with authentication on (the user dlock, readwrite on every key): the
# user in the URL (etcd://dlock@host) with its password in DLOCK_PASSWORD,
# in --password-file or in the URL works for run, a waiter's watch, acquire,
# renew, release, status and list. A wrong password, a user without a
# password, no user at all and an unknown user exit 77 with one "dlock:"
# line; so does a user whose role may only read the locks' keys. The
# password never shows in dlock's output, in ps while a job runs or in the
# job's DLOCK_BACKEND. Run under scripts/with-etcd --auth.
SCENARIO="etcd: authentication"
. "$(dirname "$0")/lib.sh"
use_etcd

[ -n "${DLOCK_TEST_ETCD_PASSWORD:-}" ] || fail "run this test under scripts/with-etcd --auth"
secret=$DLOCK_TEST_ETCD_PASSWORD
port=$DLOCK_TEST_ETCD_PORT
plain=etcd://127.0.0.1:$port
user_url=etcd://dlock@127.0.0.1:$port
[ "$BACKEND" = "$user_url" ] || fail "use_etcd under --auth gave the URL $BACKEND, expected $user_url"
wrong=Wr0ngPassw0rd
all_output=$tmpdir/all-output
: >"$all_output"

AUTH_MESSAGE_RE='auth|password|permi|user'

printf '%s\n' "$secret" >"$tmpdir/pw"
printf '%s\n' "$wrong" >"$tmpdir/wrong-pw"
chmod 0600 "$tmpdir/pw" "$tmpdir/wrong-pw"

auth_works "DLOCK_PASSWORD" env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$user_url"
auth_works "--password-file" env -u DLOCK_PASSWORD "$DLOCK_BIN" -b "$user_url" --password-file "$tmpdir/pw"
auth_works "the password in the URL" env -u DLOCK_PASSWORD "$DLOCK_BIN" -b "etcd://dlock:$secret@127.0.0.1:$port"
auth_works "DLOCK_PASSWORD over a wrong one in the URL" env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "etcd://dlock:$wrong@127.0.0.1:$port"

auth_refused "a wrong DLOCK_PASSWORD" env DLOCK_PASSWORD="$wrong" "$DLOCK_BIN" -b "$user_url"
case $err in *"$wrong"*) fail "the message shows the wrong password: $err" ;; esac
auth_refused "a wrong --password-file" env -u DLOCK_PASSWORD "$DLOCK_BIN" -b "$user_url" --password-file "$tmpdir/wrong-pw"
auth_refused "a wrong password in the URL" env -u DLOCK_PASSWORD "$DLOCK_BIN" -b "etcd://dlock:$wrong@127.0.0.1:$port"
case $err in *"$wrong"*) fail "the message shows the URL's password: $err" ;; esac
auth_refused "a user and no password" env -u DLOCK_PASSWORD "$DLOCK_BIN" -b "$user_url"
auth_refused "no user at all" env -u DLOCK_PASSWORD "$DLOCK_BIN" -b "$plain"
auth_refused "a user that does not exist" env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "etcd://nosuchuser@127.0.0.1:$port"
for sub in "status auth.run" "list" "acquire auth.run" "release auth.run --force"; do
  # shellcheck disable=SC2086 # the subcommand and its arguments
  capture env DLOCK_PASSWORD="$wrong" "$DLOCK_BIN" -b "$user_url" $sub
  auth_keep
  [ "$rc" = 77 ] || fail "$sub with a wrong password exited $rc, expected 77; stdout: $out; stderr: $err"
  assert_one_line_message "$sub with a wrong password" "$err"
done

# A user that may only read the locks' keys: permission denied.
"$ETCDCTL" user add reader --new-user-password=Read3r-pw >/dev/null &&
  "$ETCDCTL" role add reader-role >/dev/null &&
  "$ETCDCTL" role grant-permission reader-role read --prefix=true dlock/ >/dev/null &&
  "$ETCDCTL" user grant-role reader reader-role >/dev/null || fail "could not add the user reader"
auth_refused "a user who may only read" env DLOCK_PASSWORD=Read3r-pw "$DLOCK_BIN" -b "etcd://reader@127.0.0.1:$port"
capture env DLOCK_PASSWORD=Read3r-pw "$DLOCK_BIN" -b "etcd://reader@127.0.0.1:$port" status auth.run
auth_keep
[ "$rc" = 3 ] || fail "status by the reader exited $rc, expected 3 (free); stderr: $err"

# With credentials: a holder, a waiter handed the lock by its watch,
# acquire, renew and release, status and list; nothing prints the password.
start_holder h auth.held --ttl 10s
holder_fence=$(cat "$tmpdir/h.fence")
"${DL[@]}" run auth.held --wait 10s -- sh -c 'echo "$DLOCK_FENCE" >"$1"' sh "$tmpdir/got" </dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter auth.held || fail "the waiter never queued; stderr: $(cat "$tmpdir/waiter.err")"
for sub in "status auth.held" "status auth.held --json" "list" "list --json" "ping" "ping --json"; do
  # shellcheck disable=SC2086 # the subcommand and its arguments
  capture "${DL[@]}" $sub
  auth_keep
  [ "$rc" = 0 ] || fail "$sub with credentials exited $rc; stderr: $err"
done
release_holder h
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the holder exited $rc; stderr: $(cat "$tmpdir/h.err")"
wait_exit "$waiter" 5
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(cat "$tmpdir/got")" -gt "$holder_fence" ] || fail "the waiter's fence $(cat "$tmpdir/got") is not greater than the holder's $holder_fence"
cat "$tmpdir/h.err" "$tmpdir/waiter.err" >>"$all_output"

capture "$DLOCK_BIN" -b "etcd://dlock:$secret@127.0.0.1:$port" -v -v acquire auth.acq --ttl 10s
auth_keep
[ "$rc" = 0 ] || fail "acquire -v -v with the password in the URL exited $rc; stderr: $err"
token=$out
capture "${DL[@]}" renew auth.acq "$token" --ttl 10s
auth_keep
[ "$rc" = 0 ] || fail "renew with credentials exited $rc; stderr: $err"
capture "${DL[@]}" release auth.acq "$token"
auth_keep
[ "$rc" = 0 ] || fail "release with credentials exited $rc; stderr: $err"
is_free auth.acq || fail "auth.acq is still held after its release"

# An unreadable password file is a configuration error.
capture "$DLOCK_BIN" -b "$user_url" --password-file "$tmpdir/no-such-file" run auth.run -- touch "$tmpdir/ran"
auth_keep
[ "$rc" = 78 ] || fail "--password-file of a missing file: exit $rc, expected 78; stderr: $err"
assert_one_line_message "--password-file of a missing file" "$err"

if grep -nF -e "$secret" -e "$wrong" "$all_output" >"$tmpdir/leaks"; then
  fail "a password appears in dlock's output: $(head -3 "$tmpdir/leaks")"
fi
pass
