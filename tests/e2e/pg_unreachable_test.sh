#!/usr/bin/env bash
# An unreachable PostgreSQL is 69 with one line, never a hang: nothing
# listening fails at once or at the latest after --connect-timeout, for
# every command. A malformed URL is a configuration error (78).
SCENARIO="postgres: unreachable server"
. "$(dirname "$0")/lib.sh"
use_postgres

# A port nothing listens on: bound once by the kernel's choice, then closed.
closed=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
nothing=postgresql://dlock@127.0.0.1:$closed/dlock

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

unavailable "run, nothing listening" 2000 "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms run u -- touch "$tmpdir/ran"
unavailable "run --wait 10s, nothing listening" 2000 \
  "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms run u --wait 10s -- touch "$tmpdir/ran"
unavailable "acquire, nothing listening" 2000 "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms acquire u
unavailable "status, nothing listening" 2000 "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms status u
unavailable "list, nothing listening" 2000 "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms list
unavailable "release --force, nothing listening" 2000 "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms release u --force
# ping reports the server unreachable on stdout and exits 69.
started=$(now_ms)
capture "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms ping
elapsed=$(($(now_ms) - started))
[ "$rc" = 69 ] || fail "ping, nothing listening: exit $rc, expected 69; stdout: $out; stderr: $err"
printf '%s\n' "$out" | grep -qi unreachable || fail "ping, nothing listening: does not report the server unreachable: $out"
[ "$elapsed" -lt 2000 ] || fail "ping, nothing listening: took ${elapsed} ms"
unavailable "run with the default connect timeout, nothing listening" 4500 "$DLOCK_BIN" -b "$nothing" run u -- touch "$tmpdir/ran"
unavailable "a unix socket directory without a server" 2000 \
  "$DLOCK_BIN" -b "postgresql://dlock@/dlock?host=$tmpdir" --connect-timeout 500ms run u -- touch "$tmpdir/ran"

# The server's unix socket works (libpq's host= query parameter).
capture "$DLOCK_BIN" -b "postgresql://dlock@/dlock?host=$DLOCK_TEST_PG_DIR&port=$DLOCK_TEST_PG_PORT" run u -- true
[ "$rc" = 0 ] || fail "run over the server's unix socket exited $rc; stderr: $err"

# A malformed URL: configuration error.
capture "$DLOCK_BIN" -b "postgresql://dlock@127.0.0.1:notaport/dlock" run u -- touch "$tmpdir/ran"
[ "$rc" = 78 ] || fail "a URL with a bad port exited $rc, expected 78; stderr: $err"
assert_one_line_message "a URL with a bad port" "$err"
[ ! -e "$tmpdir/ran" ] || fail "the job ran with a malformed URL"
pass
