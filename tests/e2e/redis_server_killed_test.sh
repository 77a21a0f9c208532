#!/usr/bin/env bash
# The Redis server is killed (SIGKILL) while `dlock run --ttl 2s` runs a job:
# renewals get no answer, so dlock must have the job gone and exit 76 before
# the lease it last renewed could have lapsed, i.e. within the ttl of the kill.
SCENARIO="redis server killed under a running job"
. "$(dirname "$0")/lib.sh"
use_redis

ttl_ms=2000
start_job killed.server --ttl 2s
[ "$("$RCLI" EXISTS "$(redis_key killed.server lock)")" = 1 ] || fail "the lock key is not on the server while the job runs"
# Let at least one renewal happen, so that the kill lands on a heartbeat in
# full swing.
wait_renewed "$(redis_key killed.server lock)"

killed=$(now_ms)
kill -KILL "$(cat "$DLOCK_TEST_REDIS_PIDFILE")"
check_job_stopped "$killed" "$ttl_ms" "the server died"
pass
