#!/usr/bin/env bash
# dlock doctor on Redlock: three independent masters with persistence are
# all ok (their clocks, one machine's, agree); a node made the replica of
# another is found (redlock.independent-nodes unsafe, exit 78); a node
# that is gone leaves a majority (redlock.quorum warning).
# Run under scripts/with-redis --nodes 3.
SCENARIO="doctor: Redlock nodes that replicate each other"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/doctor_lib.sh"
[ "${DLOCK_TEST_NODES:-}" = 3 ] || fail "run this test under scripts/with-redis --nodes 3"
use_redlock
for i in 1 2 3; do
  cli=DLOCK_TEST_NODE_CLI_$i
  "${!cli}" CONFIG SET appendonly yes >/dev/null
done

doctor
expect_all_ok
expect_check redlock.independent-nodes ok
expect_check redlock.clocks ok "agree"

"$DLOCK_TEST_NODE_CLI_3" REPLICAOF 127.0.0.1 "${NODE_PORTS[0]}" >/dev/null
doctor
expect_rc 78 "node 3 a replica of node 1"
expect_check redlock.independent-nodes unsafe "127.0.0.1:${NODE_PORTS[2]} is a replica of node 127.0.0.1:${NODE_PORTS[0]}"
expect_text_line redlock.independent-nodes unsafe
"$DLOCK_TEST_NODE_CLI_3" REPLICAOF NO ONE >/dev/null

redlock_server_kill 2
doctor
expect_rc 0 "one node of three gone"
expect_check redlock.quorum warning "2 of 3 nodes answer"
pass
