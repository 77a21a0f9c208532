#!/usr/bin/env bash
# PostgreSQL: ALTER DATABASE dlock SET statement_timeout = '500ms' must not cancel a
# statement of dlock's: a wait longer than it goes on.
# See pg_session_settings_lib.sh for what is checked.
SCENARIO="postgres: the database's statement_timeout does not cancel dlock's statements"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_session_settings_lib.sh"
use_postgres
check_session_setting DATABASE statement_timeout 500ms
pass
