#!/usr/bin/env bash
# PostgreSQL scram-sha-256 authentication of the role dlock: the password
# works from DLOCK_PASSWORD, --password-file, the URL, PGPASSWORD and a
# .pgpass file (PGPASSFILE); DLOCK_PASSWORD and --password-file override the
# URL's. A wrong or missing password, an unknown role and a role without
# CONNECT on the database exit 77 with one "dlock:" line. The password never
# shows in dlock's output, in ps while a job runs, in the job's DLOCK_BACKEND
# or in the acquire keeper's command line.
SCENARIO="postgres: scram-sha-256 password authentication"
. "$(dirname "$0")/lib.sh"
use_postgres

secret=$DLOCK_TEST_PG_PASSWORD
port=$DLOCK_TEST_PG_PORT
plain=$DLOCK_TEST_PG_URL
with_pw=postgresql://dlock:$secret@127.0.0.1:$port/dlock
# No password from the environment unless a case gives one; the helpers
# (start_holder, is_held, the cleanup) use the URL with the password.
unset DLOCK_PASSWORD
DL=("$DLOCK_BIN" -b "$with_pw")
_cleanup_backends+=("$with_pw")
all_output=$tmpdir/all-output
: >"$all_output"

printf '%s\n' "$secret" >"$tmpdir/pw"
chmod 0600 "$tmpdir/pw"
printf '%s\n' "Wr0ng-Passw0rd" >"$tmpdir/wrong-pw"
chmod 0600 "$tmpdir/wrong-pw"

auth_works "DLOCK_PASSWORD" env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$plain"
auth_works "--password-file" "$DLOCK_BIN" -b "$plain" --password-file "$tmpdir/pw"
auth_works "the password in the URL" "$DLOCK_BIN" -b "$with_pw"
auth_works "DLOCK_PASSWORD over a wrong one in the URL" \
  env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "postgresql://dlock:Wr0ng-Passw0rd@127.0.0.1:$port/dlock"
auth_works "--password-file over a wrong one in the URL" \
  "$DLOCK_BIN" -b "postgres://dlock:Wr0ng-Passw0rd@127.0.0.1:$port/dlock" --password-file "$tmpdir/pw"
auth_works "PGPASSWORD (libpq's own variable)" env PGPASSWORD="$secret" "$DLOCK_BIN" -b "$plain"
printf '127.0.0.1:%s:dlock:dlock:%s\n' "$port" "$secret" >"$tmpdir/pgpass"
chmod 0600 "$tmpdir/pgpass"
auth_works "a .pgpass file (PGPASSFILE)" env PGPASSFILE="$tmpdir/pgpass" "$DLOCK_BIN" -b "$plain"

auth_refused "a wrong DLOCK_PASSWORD" env DLOCK_PASSWORD=Wr0ng-Passw0rd "$DLOCK_BIN" -b "$plain"
case $err in *Wr0ng-Passw0rd*) fail "the message shows the wrong password: $err" ;; esac
auth_refused "a wrong --password-file" "$DLOCK_BIN" -b "$plain" --password-file "$tmpdir/wrong-pw"
auth_refused "a wrong password in the URL" "$DLOCK_BIN" -b "postgresql://dlock:Wr0ng-Passw0rd@127.0.0.1:$port/dlock"
case $err in *Wr0ng-Passw0rd*) fail "the message shows the URL's password: $err" ;; esac
auth_refused "a wrong DLOCK_PASSWORD over the right one in the URL" env DLOCK_PASSWORD=Wr0ng-Passw0rd "$DLOCK_BIN" -b "$with_pw"
auth_refused "no password at all" env PGPASSFILE="$tmpdir/no-pgpass" "$DLOCK_BIN" -b "$plain"
auth_refused "a role that does not exist" env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "postgresql://nosuchrole@127.0.0.1:$port/dlock"

# A role with a good password but no CONNECT on the database: permission.
pg_sql "CREATE ROLE outsider LOGIN PASSWORD 'Outs1der-pw'; REVOKE CONNECT ON DATABASE dlock FROM PUBLIC;" >/dev/null
auth_refused "a role without CONNECT on the database" \
  env DLOCK_PASSWORD=Outs1der-pw "$DLOCK_BIN" -b "postgresql://outsider@127.0.0.1:$port/dlock"
auth_works "the owner after REVOKE CONNECT FROM PUBLIC" env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$plain"

# status and list refuse a wrong password the same way; ping reports the
# failure as the state of the server (on stdout, like an unreachable one)
# and exits non-zero.
for sub in "status auth.run" "list"; do
  # shellcheck disable=SC2086 # the subcommand and its arguments
  capture env DLOCK_PASSWORD=Wr0ng-Passw0rd "$DLOCK_BIN" -b "$plain" $sub
  auth_keep
  [ "$rc" = 77 ] || fail "$sub with a wrong password exited $rc, expected 77; stdout: $out; stderr: $err"
  assert_one_line_message "$sub with a wrong password" "$err"
done
capture env DLOCK_PASSWORD=Wr0ng-Passw0rd "$DLOCK_BIN" -b "$plain" ping
auth_keep
case $rc in 77 | 69) ;; *) fail "ping with a wrong password exited $rc, expected 77 or 69; stdout: $out; stderr: $err" ;; esac
printf '%s\n' "$out$err" | grep -qi 'password authentication failed' || fail "ping with a wrong password does not say why: $out $err"

# The acquire keeper's command line holds no password, from DLOCK_PASSWORD
# or from the URL.
for how in env url; do
  if [ "$how" = env ]; then
    capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$plain" acquire "auth.lock.$how" --ttl 30s
  else
    capture "$DLOCK_BIN" -b "$with_pw" acquire "auth.lock.$how" --ttl 30s
  fi
  auth_keep
  [ "$rc" = 0 ] || fail "acquire ($how) exited $rc; stderr: $err"
  token=$out
  keeper=$(env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$plain" status "auth.lock.$how" --json | json 'd["holder"]["pid"]')
  [[ $keeper =~ ^[0-9]+$ ]] || fail "status shows no holder pid for the lock taken by acquire ($how)"
  track "$keeper"
  is_alive "$keeper" || fail "the keeper ($how, pid $keeper) is not running"
  tr '\0' ' ' <"/proc/$keeper/cmdline" | grep -qF -- "$secret" &&
    fail "the keeper's command line holds the password ($how): $(tr '\0' ' ' <"/proc/$keeper/cmdline")"
  capture env DLOCK_PASSWORD="$secret" "$DLOCK_BIN" -b "$plain" release "auth.lock.$how" "$token"
  auth_keep
  [ "$rc" = 0 ] || fail "release ($how) exited $rc; stderr: $err"
done

# -v output, status, list and ping are free of the password too.
capture "$DLOCK_BIN" -b "$with_pw" -v -v run auth.run -- true
auth_keep
[ "$rc" = 0 ] || fail "run -v -v exited $rc; stderr: $err"
start_holder h auth.held --ttl 30s
for sub in "status auth.held" "status auth.held --json" "list" "list --json" "ping" "ping --json"; do
  # shellcheck disable=SC2086 # the subcommand and its arguments
  capture "$DLOCK_BIN" -b "$with_pw" $sub
  auth_keep
  [ "$rc" = 0 ] || fail "$sub with the password in the URL exited $rc; stderr: $err"
done
release_holder h
wait_exit "$HOLDER_PID"
cat "$tmpdir/h.err" >>"$all_output"

# An unreadable password file is a configuration error.
capture "$DLOCK_BIN" -b "$plain" --password-file "$tmpdir/no-such-file" run auth.run -- touch "$tmpdir/ran"
auth_keep
[ "$rc" = 78 ] || fail "--password-file of a missing file: exit $rc, expected 78; stderr: $err"
assert_one_line_message "--password-file of a missing file" "$err"

if grep -nF -- "$secret" "$all_output" >"$tmpdir/leaks"; then
  fail "the password appears in dlock's output: $(head -3 "$tmpdir/leaks")"
fi
pass
