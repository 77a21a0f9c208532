#!/usr/bin/env bash
# A job already running under the lock is stopped before its lease could
# lapse when the server turns hostile: a proxy (tests/hostile/
# fake_server.py turn-redis-MODE) forwards faithfully to the real
# redis-server until a renewal has gone through, then answers every
# request itself with garbage, a drip, a huge reply with an endless
# stream, a truncated reply and a close, or a reply of another request,
# and forwards nothing more. The `dlock run --ttl 2s` through it must stop
# its job and exit 76 with one line within the 2 s lease, under 32 MiB,
# and a `dlock run --wait` straight against the server, started at the
# turn, must not start its job while the first one still runs.
# Run under scripts/with-redis.
SCENARIO="hostile servers: a running job outlives no lease behind a proxy turned hostile"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
use_redis

wait_renewal() { wait_renewed "$(redis_key "$1" lock)"; }

for mode in ${HOSTILE_CASES:-garbage drip huge truncated other}; do
  start_turn_proxy redis "$mode" "$DLOCK_TEST_REDIS_PORT" 0
  check_turn "redis, turned $mode" 2000 "redis://127.0.0.1:$PROXY_PORT" "$DLOCK_TEST_REDIS_URL" "turn-$mode"
  kill "$PROXY_PID" 2>/dev/null
done
pass
