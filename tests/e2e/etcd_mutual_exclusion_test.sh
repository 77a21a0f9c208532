#!/usr/bin/env bash
# 6 workers x 20 `dlock run --wait` of one critical section on one etcd
# lock: exactly 120 entries, never two at once, fences (the create revisions
# of the lock keys) strictly increasing; afterwards no lock key and no lease
# is left behind (every run and every waiter revoked its lease).
SCENARIO="etcd: mutual exclusion"
. "$(dirname "$0")/lib.sh"
use_etcd

check_mutual_exclusion 6 20 c --wait 40s --ttl 2s
[ "$(etcd_key_count c)" = 0 ] || fail "keys are left under dlock/c/ after the last run: $(etcd_keys dlock/c/)"
no_leases() { [ "$(etcd_lease_count)" = 0 ]; }
wait_until -t 2 no_leases || fail "$(etcd_lease_count) leases are left after the last run: $("$ETCDCTL" lease list)"
pass
