#!/usr/bin/env bash
# 16 workers x 25 `dlock run --wait` of one critical section on one Redis
# lock: exactly 400 entries, never two at once, fences strictly increasing.
SCENARIO="redis mutual exclusion"
. "$(dirname "$0")/lib.sh"
use_redis

check_mutual_exclusion 16 25 c --wait 40s
[ "$("$RCLI" EXISTS "$(redis_key c lock)")" = 0 ] || fail "the lock key is left on the server after the last run"
listening=$("$RCLI" PUBSUB CHANNELS "$(redis_key c queue):*")
[ -z "$listening" ] || fail "waiters still listen after the last run: $listening"
for part in queue turns; do
  [ "$("$RCLI" EXISTS "$(redis_key c "$part")")" = 0 ] || fail "$(redis_key c "$part") is left after the last run"
done
pass
