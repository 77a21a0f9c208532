#!/usr/bin/env bash
# PostgreSQL: ALTER ROLE dlock SET lock_timeout = '300ms' must not end
# a wait before its --wait.
# See pg_session_settings_lib.sh for what is checked.
SCENARIO="postgres: the role's lock_timeout does not end a wait early"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_session_settings_lib.sh"
use_postgres
check_session_setting ROLE lock_timeout 300ms
pass
