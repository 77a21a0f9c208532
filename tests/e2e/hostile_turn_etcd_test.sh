#!/usr/bin/env bash
# As hostile_turn_redis_test.sh, for etcd: a proxy (tests/hostile/
# fake_server.py turn-etcd-MODE) in front of the real etcd turns hostile
# (garbage, a drip, a huge Content-Length with an endless stream, a
# truncated reply and a close, JSON of another request) once a lease
# keep-alive went through. The `dlock run --ttl 2s` through it must stop
# its job and exit 76 with one line within the 2 s lease, under 32 MiB,
# and a `dlock run --wait` against etcd itself must not start its job
# while the first one still runs. Run under scripts/with-etcd.
SCENARIO="hostile servers: a running job outlives no etcd lease behind a proxy turned hostile"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
use_etcd

wait_renewal() { etcd_wait_renewed; }

for mode in ${HOSTILE_CASES:-garbage drip huge truncated other}; do
  start_turn_proxy etcd "$mode" "$DLOCK_TEST_ETCD_PORT" 0
  check_turn "etcd, turned $mode" 2000 "etcd://127.0.0.1:$PROXY_PORT" "$BACKEND" "turn-$mode"
  kill "$PROXY_PID" 2>/dev/null
done
pass
