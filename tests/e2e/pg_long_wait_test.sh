#!/usr/bin/env bash
# On PostgreSQL the waiter blocks in pg_advisory_lock: a grant after a wait
# longer than its --ttl must still run its job (found by scripts/chaos).
SCENARIO="postgres: a grant after a wait longer than the ttl"
. "$(dirname "$0")/lib.sh"
use_postgres

check_long_wait lw
pass
