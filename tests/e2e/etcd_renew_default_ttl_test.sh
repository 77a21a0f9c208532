#!/usr/bin/env bash
# etcd: `renew` without --ttl is a keep-alive of the lock's own lease: the
# key stays on the same lease, whose TTL is the length given to acquire
# (or to the last renew --ttl, which moves the key to a new lease). The
# shared scenario is in renew_default_ttl_lib.sh.
SCENARIO="etcd: renew without --ttl keeps the lock's lease and its length"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/renew_default_ttl_lib.sh"
use_etcd

name=app/renewed
lease_of_lock() { etcd_keys "dlock/$name/" | json 'd[0]["lease"] if d else "none"'; }
on_renewed() {
  local lease
  lease=$(lease_of_lock)
  echo "$1: the key is on lease $lease"
  case $1 in
  acquire | renew_ttl) held_lease=$lease ;;
  *) [ "$lease" = "$held_lease" ] || fail "renew without --ttl moved the key from lease $held_lease to $lease" ;;
  esac
}
check_renew_keeps_length $name
pass
