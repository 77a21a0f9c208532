#!/usr/bin/env bash
# PostgreSQL: ALTER DATABASE dlock SET idle_in_transaction_session_timeout = '200ms' must not
# end a holder's session (dlock never stays in a transaction; startup
# options turn it off all the same).
# See pg_session_settings_lib.sh for what is checked.
SCENARIO="postgres: the database's idle_in_transaction_session_timeout does not end the lock's session"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_session_settings_lib.sh"
use_postgres
check_session_setting DATABASE idle_in_transaction_session_timeout 200ms
pass
