#!/usr/bin/env bash
# Every command against a hostile Redis (tests/hostile/fake_server.py,
# loopback): garbage, a truncated reply, a close in the middle, a reply that
# belongs to another request, an oversized reply with a fast endless stream,
# a slow drip. run, acquire, renew, release, status, list and ping must each
# end with 69 and one `dlock:` line within --connect-timeout (1s) plus a
# margin, with a peak RSS under 32 MiB, never a crash or a hang; the job of
# run never starts. (etcd, Sentinel, Redlock, ZooKeeper and PostgreSQL:
# hostile_commands_*_test.sh.)
SCENARIO="hostile servers: every command"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"

# HOSTILE_CASES picks some of the cases (to try one on an old binary).
for mode in ${HOSTILE_CASES:-redis-garbage redis-truncated redis-close redis-other redis-huge-bulk redis-drip}; do
  start_fake "$mode"
  check_hostile_commands "$mode" "redis://127.0.0.1:$FAKE_PORT"
  stop_fake
done
pass
