#!/usr/bin/env bash
# dlock doctor on a single Redis server set up wrong on purpose: an evicting
# maxmemory-policy, no persistence, a replica, a master with a replica; and
# set up right (appendonly yes, noeviction, no replica): all ok, exit 0.
# Run under scripts/with-redis --nodes 2 (node 2 becomes node 1's replica).
SCENARIO="doctor: Redis set up wrong on purpose"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/doctor_lib.sh"
[ "${DLOCK_TEST_NODES:-}" = 2 ] || fail "run this test under scripts/with-redis --nodes 2"
read -r port1 port2 <<<"$DLOCK_TEST_NODE_PORTS"
use_redis "redis://127.0.0.1:$port1"
cli1=$DLOCK_TEST_NODE_CLI_1 cli2=$DLOCK_TEST_NODE_CLI_2

"$cli1" CONFIG SET appendonly yes >/dev/null
doctor --ttl 2s
expect_all_ok
expect_check redis.role ok
expect_check redis.persistence ok "appendonly yes"

"$cli1" CONFIG SET maxmemory 100mb >/dev/null
"$cli1" CONFIG SET maxmemory-policy allkeys-lru >/dev/null
doctor
expect_rc 78 "an evicting maxmemory-policy"
expect_check redis.maxmemory-policy unsafe "allkeys-lru"
expect_text_line redis.maxmemory-policy unsafe
"$cli1" CONFIG SET maxmemory-policy volatile-ttl >/dev/null
doctor
expect_rc 78 "maxmemory-policy volatile-ttl"
expect_check redis.maxmemory-policy unsafe "volatile-ttl"
"$cli1" CONFIG SET maxmemory-policy noeviction >/dev/null

"$cli1" CONFIG SET appendonly no >/dev/null
"$cli1" CONFIG SET save "" >/dev/null
doctor
expect_rc 78 "no persistence"
expect_check redis.persistence unsafe "no persistence"
"$cli1" CONFIG SET save "3600 1" >/dev/null
doctor
expect_rc 0 "snapshots only (a warning)"
expect_check redis.persistence warning "snapshots only"
"$cli1" CONFIG SET appendonly yes >/dev/null

"$cli2" REPLICAOF 127.0.0.1 "$port1" >/dev/null
is_linked() { "$cli2" INFO replication | tr -d '\r' | grep -qx 'master_link_status:up'; }
wait_until is_linked || fail "node 2 did not become node 1's replica"
doctor
expect_rc 0 "a master with a replica (a warning)"
expect_check redis.replicas warning "replica"
capture "$DLOCK_BIN" -b "redis://127.0.0.1:$port2" doctor --json
expect_rc 78 "a replica"
printf '%s' "$out" | json '[c["severity"] for c in d["checks"] if c["id"] == "redis.role"]' | grep -qx '\["unsafe"\]' ||
  fail "doctor on a replica does not find redis.role unsafe: $out"
"$cli2" REPLICAOF NO ONE >/dev/null

# Nobody there: 69, one line.
capture "$DLOCK_BIN" -b "redis://127.0.0.1:1" --connect-timeout 1s doctor
[ "$rc" = 69 ] || fail "doctor with no server exited $rc, expected 69; stderr: $err"
assert_one_line_message "doctor with no server" "$err"
pass
