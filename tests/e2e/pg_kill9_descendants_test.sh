#!/usr/bin/env bash
# PostgreSQL: the job inherits the socket of the lock's session. kill -9 of
# dlock kills the job (PR_SET_PDEATHSIG) but not the processes it started;
# they still hold the socket, so the server sees no end of the connection
# and keeps the session, and with it the advisory lock, until they have
# ended too. A normal release (pg_advisory_unlock, then Terminate) ends the
# lock and the session although a copy of the socket escaped elsewhere.
SCENARIO="postgres: kill -9 leaves the lock to the descendants of the job"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/descendants_lib.sh"
use_postgres

check_kill9_leaves_lock_to_descendants d
check_release_with_escaped_copy e "^socket:"
no_session() { [ "$(pg_sessions e)" = 0 ]; }
wait_until -t 2 no_session || fail "sessions 'dlock:e' are left after the release: $(pg_sessions e)"
pass
