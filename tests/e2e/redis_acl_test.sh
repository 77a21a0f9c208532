#!/usr/bin/env bash
# ACL user authentication: redis://alice@host with DLOCK_PASSWORD or
# --password-file works; the password never shows in any output, in ps or in
# the job's DLOCK_BACKEND; a wrong or missing password exits 77 with one line.
# Run under scripts/with-redis --acl alice:Tr0ub4dor-s3cret (default user off).
SCENARIO="redis ACL user authentication"
. "$(dirname "$0")/lib.sh"
use_redis

secret=Tr0ub4dor-s3cret
[ "${DLOCK_TEST_REDIS_USER:-}" = alice ] && [ "${DLOCK_TEST_REDIS_PASSWORD:-}" = "$secret" ] ||
  fail "run this test under scripts/with-redis --acl alice:$secret"
port=$DLOCK_TEST_REDIS_PORT
alice=redis://alice@127.0.0.1:$port
all_output=$tmpdir/all-output
: >"$all_output"

# keep: remember what the last capture printed, for the final password check.
keep() { printf '%s\n%s\n' "$out" "$err" >>"$all_output"; }

# The job records what ps shows of dlock (its parent) and of itself, and its
# environment. (Not all of ps: the test's own runner has the password on its
# command line.)
job=(sh -c 'ps -ww -o args= -p "$PPID" -p "$$" >"$1/ps.txt"; env >"$1/env.txt"; echo "$DLOCK_FENCE"' job "$tmpdir")

# DLOCK_PASSWORD.
capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$alice" run acl.lock -- "${job[@]}"
keep
[ "$rc" = 0 ] || fail "run as alice with DLOCK_PASSWORD exited $rc, expected 0; stderr: $err"
[[ $out =~ ^[0-9]+$ ]] || fail "the job saw DLOCK_FENCE='$out'"
grep -q 'alice@' "$tmpdir/ps.txt" || fail "the job's ps listing does not show dlock's URL (is ps working?): $(cat "$tmpdir/ps.txt")"
grep -F -- "$secret" "$tmpdir/ps.txt" && fail "the password shows in ps while dlock runs (DLOCK_PASSWORD)"
grep '^DLOCK_BACKEND=' "$tmpdir/env.txt" | grep -qF -- "$secret" && fail "the job's DLOCK_BACKEND holds the password"

# --password-file, with and without a trailing newline.
printf '%s\n' "$secret" >"$tmpdir/pw-newline"
printf '%s' "$secret" >"$tmpdir/pw-bare"
chmod 0600 "$tmpdir/pw-newline" "$tmpdir/pw-bare"
for f in pw-newline pw-bare; do
  rm -f "$tmpdir/ps.txt"
  capture "$DLOCK_BIN" -b "$alice" --password-file "$tmpdir/$f" run acl.lock -- "${job[@]}"
  keep
  [ "$rc" = 0 ] || fail "run as alice with --password-file ($f) exited $rc, expected 0; stderr: $err"
  grep -F -- "$secret" "$tmpdir/ps.txt" && fail "the password shows in ps while dlock runs (--password-file $f)"
done

# acquire, status, list and release as alice.
capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$alice" acquire acl.acq --ttl 30s
keep
[ "$rc" = 0 ] || fail "acquire as alice exited $rc; stderr: $err"
token=$out
[ "$("$RCLI" EXISTS "$(redis_key acl.acq lock)")" = 1 ] || fail "acquire as alice did not create the lock key"
for cmd in "status acl.acq" "status acl.acq --json" "list" "list --json" "ping" "ping --json"; do
  # shellcheck disable=SC2086 # cmd is split on purpose
  capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$alice" $cmd
  keep
  [ "$rc" = 0 ] || fail "$cmd as alice exited $rc; stderr: $err"
done
capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$alice" release acl.acq "$token"
keep
[ "$rc" = 0 ] || fail "release as alice exited $rc; stderr: $err"

# The password in the URL works; it is redacted wherever the URL is shown,
# and the job's DLOCK_BACKEND is without it.
with_pw=redis://alice:$secret@127.0.0.1:$port
capture "$DLOCK_BIN" -b "$with_pw" run acl.lock -- "${job[@]}"
keep
[ "$rc" = 0 ] || fail "run with the password in the URL exited $rc; stderr: $err"
backend_env=$(grep '^DLOCK_BACKEND=' "$tmpdir/env.txt")
case $backend_env in *"$secret"*) fail "the job's DLOCK_BACKEND holds the password: $backend_env" ;; esac
case $backend_env in *"127.0.0.1:$port"*) ;; *) fail "the job's DLOCK_BACKEND does not name the server: $backend_env" ;; esac
capture "$DLOCK_BIN" -b "$with_pw" -v ping
keep
[ "$rc" = 0 ] || fail "ping with the password in the URL exited $rc; stderr: $err"
capture "$DLOCK_BIN" -b "$with_pw" status acl.free
keep
capture "$DLOCK_BIN" -b "$with_pw" acquire acl.busy --ttl 30s
keep
capture "$DLOCK_BIN" -b "$with_pw" -v run acl.busy -- true
keep
[ "$rc" = 75 ] || fail "run on a lock held by acquire exited $rc, expected 75; stderr: $err"

# DLOCK_PASSWORD and --password-file override a password in the URL.
capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "redis://alice:not-this-one@127.0.0.1:$port" run acl.lock -- true
keep
[ "$rc" = 0 ] || fail "DLOCK_PASSWORD did not override the URL's password: exit $rc; stderr: $err"

# Wrong passwords: 77, one line, the attempted password not echoed either.
capture env DLOCK_PASSWORD=Wr0ng-Passw0rd "$DLOCK_BIN" -b "$alice" run acl.lock -- touch "$tmpdir/ran"
keep
[ "$rc" = 77 ] || fail "a wrong DLOCK_PASSWORD: run exited $rc, expected 77; stderr: $err"
assert_one_line_message "a wrong password" "$err"
case $err in *Wr0ng-Passw0rd*) fail "the message shows the wrong password: $err" ;; esac
[ ! -e "$tmpdir/ran" ] || fail "a wrong password: the job ran"
capture "$DLOCK_BIN" -b "redis://alice:Wr0ng-Passw0rd@127.0.0.1:$port" acquire acl.lock
keep
[ "$rc" = 77 ] || fail "a wrong password in the URL: acquire exited $rc, expected 77; stderr: $err"
assert_one_line_message "a wrong password in the URL" "$err"
case $err in *Wr0ng-Passw0rd*) fail "the message shows the URL's password: $err" ;; esac
capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "redis://bob@127.0.0.1:$port" status acl.lock
keep
[ "$rc" = 77 ] || fail "an unknown user: status exited $rc, expected 77; stderr: $err"
assert_one_line_message "an unknown user" "$err"

# No password at all: the default user is off, alice needs one.
capture "$DLOCK_BIN" -b "$alice" run acl.lock -- touch "$tmpdir/ran"
keep
[ "$rc" = 77 ] || fail "alice without a password: run exited $rc, expected 77; stderr: $err"
assert_one_line_message "alice without a password" "$err"
capture "$DLOCK_BIN" -b "redis://127.0.0.1:$port" run acl.lock -- touch "$tmpdir/ran"
keep
[ "$rc" = 77 ] || fail "no user, no password: run exited $rc, expected 77; stderr: $err"
assert_one_line_message "no user, no password" "$err"
[ ! -e "$tmpdir/ran" ] || fail "a run without a password ran its job"

# An unreadable password file is a configuration error.
capture "$DLOCK_BIN" -b "$alice" --password-file "$tmpdir/no-such-file" run acl.lock -- touch "$tmpdir/ran"
keep
[ "$rc" = 78 ] || fail "--password-file of a missing file: exit $rc, expected 78; stderr: $err"
assert_one_line_message "--password-file of a missing file" "$err"

if grep -nF -- "$secret" "$all_output" >"$tmpdir/leaks"; then
  fail "the password appears in dlock's output: $(head -3 "$tmpdir/leaks")"
fi
pass
