#!/usr/bin/env bash
# Redis: `renew` without --ttl renews the lock for its own length, which the
# server records in the info hash's ttl field (acquire's, then the last
# renew --ttl's), so a renewal from another process keeps it; a lock
# without the field (taken by an older dlock) is renewed for the longer of
# 30 s and what is left of it, never shortened. The shared scenario is in
# renew_default_ttl_lib.sh.
SCENARIO="redis: renew without --ttl keeps the lock's own length"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/renew_default_ttl_lib.sh"
use_redis

name=app/renewed
on_renewed() {
  local recorded pttl
  [ "$1" = acquire ] && return 0 # looked at after the first renewal's own checks
  recorded=$("$RCLI" HGET "$(redis_key $name info)" ttl)
  pttl=$("$RCLI" PTTL "$(redis_key $name lock)")
  echo "$1: info ttl '$recorded', lock PTTL $pttl"
  case $1 in
  renew1) [ "$recorded" = 5000 ] || fail "after $1 the info hash records ttl '$recorded', not 5000" ;;
  renew_ttl | renew2) [ "$recorded" = 8000 ] || fail "after $1 the info hash records ttl '$recorded', not 8000" ;;
  esac
  [ "$pttl" -le "$recorded" ] || fail "after $1 the lock key's PTTL is $pttl ms, more than its length $recorded"
}
check_renew_keeps_length $name
unset -f on_renewed

# A lock as an older dlock left it: no ttl field in the info hash.
token=$("${DL[@]}" acquire old/short -t 5s) || fail "acquire old/short failed"
"$RCLI" HDEL "$(redis_key old/short info)" ttl >/dev/null
capture "${DL[@]}" renew old/short "$token" --json
[ "$rc" = 0 ] || fail "renew of a lock without a recorded length exited $rc; stderr: $err"
length=$(renew_length "$out")
echo "a lock without a recorded length, 5 s left: renewed for $length ms"
[ "$length" -gt 29000 ] && [ "$length" -le 30000 ] ||
  fail "a lock without a recorded length and 5 s left was renewed for $length ms, not 30 s: $out"
"${DL[@]}" release old/short "$token" || fail "release old/short failed"

token=$("${DL[@]}" acquire old/long -t 2m) || fail "acquire old/long failed"
"$RCLI" HDEL "$(redis_key old/long info)" ttl >/dev/null
capture "${DL[@]}" renew old/long "$token" --json
[ "$rc" = 0 ] || fail "renew of a long lock without a recorded length exited $rc; stderr: $err"
length=$(renew_length "$out")
echo "a lock without a recorded length, 2 min left: renewed for $length ms"
[ "$length" -gt 110000 ] && [ "$length" -le 120000 ] ||
  fail "a lock without a recorded length and 2 min left was renewed for $length ms, not kept at what it had: $out"
"${DL[@]}" release old/long "$token" || fail "release old/long failed"
pass
