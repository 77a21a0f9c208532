#!/usr/bin/env bash
# PostgreSQL: ALTER ROLE dlock SET idle_session_timeout = '500ms' must not
# end a holder's session between two renewals (it did: the server ended the
# lock's session and a waiter ran beside the job). See
# pg_session_settings_lib.sh for what is checked.
SCENARIO="postgres: the role's idle_session_timeout does not end the lock's session"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_session_settings_lib.sh"
use_postgres
check_session_setting ROLE idle_session_timeout 500ms
pass
