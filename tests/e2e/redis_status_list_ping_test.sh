#!/usr/bin/env bash
# status, list and ping on Redis: holder, fence, lease left and waiters,
# never the token; list finds every held lock by SCAN (not KEYS) and nothing
# else; ping shows the server version and role and warns about an eviction
# policy that could drop locks. The checks all server backends share are in
# lib.sh (start_status_holder and what follows it).
SCENARIO="redis status, list and ping"
. "$(dirname "$0")/lib.sh"
use_redis

start_status_holder
raw_token=$("$RCLI" GET "$(redis_key app/one lock)")
[[ $raw_token =~ ^[0-9a-f]{32}$ ]] || fail "the lock key holds '$raw_token', not a 32-hex token"
SECRET_TOKENS+=("$raw_token")
[ "$("$RCLI" HGET "$(redis_key app/one info)" fence)" = "$one_fence" ] || fail "the info hash's fence is not the job's DLOCK_FENCE $one_fence"

check_held_status_text app/one "$one_pid" "$one_fence"
printf '%s\n' "$out" | grep -qiE 'lease|left' || fail "status does not show the time left: $out"
check_held_status_json app/one "$one_pid" "$one_fence" 'isinstance(t, int) and 0 < t <= 20000'

# A waiter shows up in waiters (its place in the name's queue).
check_waiters app/one 1

# Free locks: exit 3, also one that was held before (its fence key remains).
check_free_status

# list: one row per held lock, whatever else lives in the database.
"$RCLI" SET unrelated:key value >/dev/null
"$RCLI" SET '{dlock:fake}:fence' 12 >/dev/null
# Enough locks that SCAN needs several round trips.
start_list_locks 40 other
[ "$("$RCLI" EXISTS "$(redis_key app/ns lock elsewhere)")" = 1 ] || fail "--namespace elsewhere did not use the key $(redis_key app/ns lock elsewhere)"

"$RCLI" CONFIG RESETSTAT >/dev/null
check_list_rows 40 "app/three fake unrelated app/ns" app/one app/two other
commandstats=$("$RCLI" INFO commandstats | tr -d '\r')
printf '%s\n' "$commandstats" | grep -q '^cmdstat_keys:' && fail "list used KEYS (it must SCAN)"
printf '%s\n' "$commandstats" | grep -q '^cmdstat_scan:' || fail "list did not SCAN: $commandstats"

check_list_prefix app/ "app/one:$one_pid" "app/two:$two_pid"
check_list_json 43

# ping: version and role (under the default eviction policy: no warning on
# stderr), round trip.
version=$("$RCLI" INFO server | tr -d '\r' | sed -n 's/^redis_version://p')
check_ping "$version" "$DLOCK_TEST_REDIS_PORT" master

"$RCLI" CONFIG SET maxmemory-policy allkeys-lru >/dev/null
capture "${DL[@]}" ping
printf '%s\n' "$err" | grep -qi 'allkeys-lru' && printf '%s\n' "$err" | grep -qiE 'warn|evict' ||
  fail "ping does not warn (on stderr) about maxmemory-policy allkeys-lru: stdout: $out; stderr: $err"
"$RCLI" CONFIG SET maxmemory-policy noeviction >/dev/null

check_holders_released h h2 h3
pass
