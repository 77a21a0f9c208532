#!/usr/bin/env bash
# PostgreSQL: a URL naming a database that does not exist. run, acquire,
# status, list and ping fail with 78 (configuration) or 69 (unavailable) and
# one "dlock:" line that carries libpq's reason ("does not exist"), never the
# password; the job does not run. The server's own database still works.
SCENARIO="postgres: a database that does not exist"
. "$(dirname "$0")/lib.sh"
use_postgres

url=postgresql://dlock@127.0.0.1:$DLOCK_TEST_PG_PORT/nosuchdb

# missing WHAT ARGS...: dlock -b URL ARGS... fails as described above.
missing() {
  local what=$1
  shift
  capture "$DLOCK_BIN" -b "$url" "$@"
  case $rc in 78 | 69) ;; *) fail "$what on a missing database exited $rc, expected 78 or 69; stdout: $out; stderr: $err" ;; esac
  assert_one_line_message "$what on a missing database" "$err"
  printf '%s\n' "$err" | grep -q 'does not exist' || fail "$what: the message does not carry libpq's reason ('does not exist'): $err"
  printf '%s\n' "$err" | grep -q 'nosuchdb' || fail "$what: the message does not name the database: $err"
  case $err in *"$DLOCK_PASSWORD"*) fail "$what: the message shows the password: $err" ;; esac
}

missing "run" run x -- touch "$tmpdir/ran"
[ ! -e "$tmpdir/ran" ] || fail "the job ran although the database does not exist"
first=$rc
missing "run --wait" run x --wait 5s -- touch "$tmpdir/ran"
[ "$rc" = "$first" ] || fail "run --wait exited $rc, run without --wait $first: one failure, two exit codes"
[ ! -e "$tmpdir/ran" ] || fail "the job ran although the database does not exist"
missing "acquire" acquire x --ttl 5s
[ -z "$out" ] || fail "acquire on a missing database printed a token: $out"
missing "status" status x
missing "list" list
# ping reports the failure as the state of the server, on stdout.
capture "$DLOCK_BIN" -b "$url" ping
case $rc in 78 | 69) ;; *) fail "ping on a missing database exited $rc, expected 78 or 69; stdout: $out; stderr: $err" ;; esac
printf '%s\n' "$out$err" | grep -q 'does not exist' || fail "ping on a missing database does not carry libpq's reason: $out $err"

# The same with the password in the URL: still not shown.
capture env -u DLOCK_PASSWORD "$DLOCK_BIN" -b "postgresql://dlock:$DLOCK_PASSWORD@127.0.0.1:$DLOCK_TEST_PG_PORT/nosuchdb" run x -- true
case $rc in 78 | 69) ;; *) fail "run on a missing database with the password in the URL exited $rc; stderr: $err" ;; esac
assert_one_line_message "run on a missing database (password in the URL)" "$err"
case $err in *"$DLOCK_PASSWORD"*) fail "the message shows the URL's password: $err" ;; esac

capture "${DL[@]}" run x -- true
[ "$rc" = 0 ] || fail "run on the server's database dlock exited $rc; stderr: $err"
pass
