#!/usr/bin/env bash
# A lock granted after a wait longer than the waiter's --ttl runs the job
# (found by scripts/chaos: the lease was dated by the start of the wait,
# so the job was stopped, exit 76, as soon as it started).
SCENARIO="long wait: a grant after a wait longer than the ttl"
. "$(dirname "$0")/lib.sh"

check_long_wait lw
pass
