#!/usr/bin/env bash
# ZooKeeper: `renew` without --ttl makes the acquire keeper wait for the
# length given to acquire (or to the last renew --ttl), on the session it
# negotiated. The shared scenario is in renew_default_ttl_lib.sh.
SCENARIO="zookeeper: renew without --ttl keeps the lock's own length"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/renew_default_ttl_lib.sh"
use_zookeeper

check_renew_keeps_length app/renewed
pass
