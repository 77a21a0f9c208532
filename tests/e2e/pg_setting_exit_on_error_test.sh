#!/usr/bin/env bash
# PostgreSQL: ALTER ROLE dlock SET exit_on_error = 'on' must not turn the
# error that ends a bounded wait (lock_timeout) or a signalled one (a
# cancel) into the end of the session (it did: 69 instead of 75 or 128+N).
# See pg_session_settings_lib.sh for what is checked.
SCENARIO="postgres: the role's exit_on_error does not end a wait's session"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg_session_settings_lib.sh"
use_postgres
check_session_setting ROLE exit_on_error on
pass
