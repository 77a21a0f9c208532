# Shared set-up of the Redis Sentinel failover tests, sourced after lib.sh
# (SCENARIO set): checks that the test runs under scripts/with-redis
# --replica --sentinels 3, talks to the sentinels' URL, and defines for lock
# NAME (x): lock_key, replicated (the key reached the replica) and
# names_replica (sentinel 1 names the replica as master).
if [ "${DLOCK_TEST_SENTINELS:-0}" -lt 3 ] || [ -z "${DLOCK_TEST_REPLICA_CLI:-}" ]; then
  fail "run this test under scripts/with-redis --replica --sentinels 3"
fi
use_redis "$DLOCK_TEST_SENTINEL_URL"

name=x
lock_key=$(redis_key "$name" lock)
replicated() { [ "$("$DLOCK_TEST_REPLICA_CLI" EXISTS "$lock_key")" = 1 ]; }
names_replica() {
  [ "$("$DLOCK_TEST_SENTINEL_CLI_1" SENTINEL get-master-addr-by-name dlockmaster | tail -1)" = "$DLOCK_TEST_REPLICA_PORT" ]
}
