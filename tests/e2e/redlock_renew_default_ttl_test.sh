#!/usr/bin/env bash
# Redlock: `renew` without --ttl renews every node's copy for the length
# recorded with it (acquire's, then the last renew --ttl's), and reports
# the validity for that length. The shared scenario is in
# renew_default_ttl_lib.sh.
SCENARIO="redlock: renew without --ttl keeps the lock's own length"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
. "$(dirname "$0")/renew_default_ttl_lib.sh"
use_redlock

name=app/renewed
on_renewed() {
  local i recorded pttl want=5000
  [ "$1" = acquire ] && return 0 # looked at after the first renewal's own checks
  case $1 in renew_ttl | renew2) want=8000 ;; esac
  for ((i = 1; i <= NODES; i++)); do
    recorded=$(node_cli "$i" HGET "$(redis_key $name info)" ttl)
    pttl=$(node_cli "$i" PTTL "$(redis_key $name lock)")
    [ "$recorded" = "$want" ] || fail "after $1 node $i records ttl '$recorded', not $want"
    [ "$pttl" -le "$want" ] || fail "after $1 node $i's lock key has PTTL $pttl ms, more than $want"
  done
}
check_renew_keeps_length $name
pass
