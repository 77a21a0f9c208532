#!/usr/bin/env bash
# As hostile_turn_redis_test.sh, for ZooKeeper: a proxy (tests/hostile/
# fake_server.py turn-zk-MODE) in front of the real server turns hostile
# (garbage, a drip, a huge length with an endless stream, a truncated
# reply and a close, a reply header whose xid answers no request) once the
# session's pings went through; new connections (the C client reconnects)
# get the same. The session's 2 s timeout then runs out on the server. The
# `dlock run --ttl 2s` through the proxy must stop its job and exit 76 with
# one line within those 2 s, under 32 MiB, and a `dlock run --wait`
# against the server itself must not start its job while the first one
# still runs. Run under scripts/with-zookeeper.
#
# huge: the ZooKeeper C client allocates the length a frame announces and
# fills it as bytes come (465-904 MB within the second before dlock bounded
# it); its reads now pass dlock's frame check (backend/zookeeper/
# frame_limit.cpp), which cuts a connection whose frame is over 8 MiB. (The
# handshake: hostile_commands_zk_test.sh.)
SCENARIO="hostile servers: a running job outlives no ZooKeeper session behind a proxy turned hostile"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
use_zookeeper

wait_renewal() { zk_wait_pinged; }

for mode in ${HOSTILE_CASES:-garbage drip huge truncated other}; do
  start_turn_proxy zk "$mode" "$DLOCK_TEST_ZK_PORT" 0
  check_turn "zookeeper, turned $mode" 2000 "zk://127.0.0.1:$PROXY_PORT" "$DLOCK_TEST_ZK_URL" "turn-$mode"
  kill "$PROXY_PID" 2>/dev/null
done
pass
