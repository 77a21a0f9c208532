#!/usr/bin/env bash
# 8 workers x 20 `dlock run --wait` of one critical section on one Redlock
# lock over 5 nodes: exactly 160 entries, never two at once, fences strictly
# increasing; afterwards no lock key and no waiter is left on any node.
SCENARIO="redlock mutual exclusion"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

check_mutual_exclusion 8 20 c --wait 40s
[ "$(nodes_with_key "$(redis_key c lock)")" = 0 ] || fail "the lock key is left on $(nodes_with_key "$(redis_key c lock)") nodes after the last run"
left=$(subscribers c)
[ "$left" = 0 ] || fail "$left waiters are still subscribed to $(redis_key c released) after the last run"
pass
