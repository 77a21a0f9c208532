#!/usr/bin/env bash
# A lease taken by acquire --ttl 2s lapses on the server; the next holder's
# lock is then safe from the old token: release and renew with it exit 3 and
# leave the new holder's lock, lease and fence alone.
SCENARIO="redis: a stale token leaves the new holder's lock alone"
. "$(dirname "$0")/lib.sh"
use_redis

lock_key=$(redis_key stale lock)
# (2 s, timed from before acquire was called: a loaded machine's process
# starts between acquire and the first look must not use the lease up.)
started=$(now_ms)
capture "${DL[@]}" acquire stale --ttl 2s
[ "$rc" = 0 ] || fail "acquire stale --ttl 2s exited $rc; stderr: $err"
old=$out
[ -n "$old" ] || fail "acquire printed no token"
is_held stale || fail "lock stale is not held right after acquire"
wait_until -t 6 is_free stale || fail "a 2 s lease was still held after 6 s"
elapsed=$(($(now_ms) - started))
[ "$elapsed" -ge 1980 ] || fail "the 2 s lease ended after only ${elapsed} ms"
[ "$("$RCLI" EXISTS "$lock_key")" = 0 ] || fail "status says free but $lock_key is still on the server"

capture "${DL[@]}" acquire stale --ttl 30s --json
[ "$rc" = 0 ] || fail "the second acquire exited $rc; stderr: $err"
new=$(printf '%s' "$out" | json 'd["token"]')
new_fence=$(printf '%s' "$out" | json 'd["fence"]')
[ "$new" != "$old" ] || fail "the second acquire got the same token as the first"
held_value=$("$RCLI" GET "$lock_key")
[ -n "$held_value" ] || fail "the second acquire left no $lock_key"

capture "${DL[@]}" release stale "$old"
[ "$rc" = 3 ] || fail "release with the stale token exited $rc, expected 3; stderr: $err"
assert_one_line_message "release with a stale token" "$err"
capture "${DL[@]}" renew stale "$old" --ttl 1s
[ "$rc" = 3 ] || fail "renew with the stale token exited $rc, expected 3; stderr: $err"
assert_one_line_message "renew with a stale token" "$err"

is_held stale || fail "the new holder lost its lock to a release with the old token"
[ "$("$RCLI" GET "$lock_key")" = "$held_value" ] || fail "the stale release/renew changed $lock_key"
pttl=$("$RCLI" PTTL "$lock_key")
[ "$pttl" -gt 25000 ] || fail "the stale renew --ttl 1s shortened the new holder's lease (PTTL $pttl ms)"
[ "$("${DL[@]}" status stale --json | json 'd["fence"]')" = "$new_fence" ] || fail "the new holder's fence changed"
capture "${DL[@]}" run stale -- true
[ "$rc" = 75 ] || fail "run on the new holder's lock exited $rc, expected 75 (busy)"

capture "${DL[@]}" release stale "$new"
[ "$rc" = 0 ] || fail "release with the new token exited $rc; stderr: $err"
is_free stale || fail "the lock is still held after its holder released it"
pass
