#!/usr/bin/env bash
# An unreachable PostgreSQL is 69 with one line, never a hang: nothing
# listening fails at once or at the latest after --connect-timeout, for
# every command. A malformed URL is a configuration error (78). The checks
# all server backends share are in lib.sh (check_unavailable and what
# follows it).
SCENARIO="postgres: unreachable server"
. "$(dirname "$0")/lib.sh"
use_postgres

nothing=postgresql://dlock@127.0.0.1:$(free_port)/dlock
check_unavailable_commands "nothing listening" 2000 "$nothing" --connect-timeout 500ms
check_unavailable "run with the default connect timeout, nothing listening" 4500 "$DLOCK_BIN" -b "$nothing" run u -- touch "$tmpdir/ran"
check_unavailable "a unix socket directory without a server" 2000 \
  "$DLOCK_BIN" -b "postgresql://dlock@/dlock?host=$tmpdir" --connect-timeout 500ms run u -- touch "$tmpdir/ran"

# The server's unix socket works (libpq's host= query parameter).
capture "$DLOCK_BIN" -b "postgresql://dlock@/dlock?host=$DLOCK_TEST_PG_DIR&port=$DLOCK_TEST_PG_PORT" run u -- true
[ "$rc" = 0 ] || fail "run over the server's unix socket exited $rc; stderr: $err"

check_malformed_urls "postgresql://dlock@127.0.0.1:notaport/dlock"
pass
