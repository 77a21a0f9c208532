#!/usr/bin/env bash
# What dlock prints about a lock that an acquire keeper holds on the file
# backend is true: the lock held with --ttl 8s and never renewed by the
# script ends when acquire's expires_at says, and status never shows more
# time left than that, also after the keeper's own renewals of the session
# (every T/3), which must not push the recorded expiry past the window.
# 8 s, so that a loaded machine (a status call can take 100+ ms, python
# more) still looks at the lock many times before it ends; the bounds
# checked are the lock's own end, whatever the lease.
SCENARIO="the acquire keeper's printed expiry and status' time left end with the lock"
. "$(dirname "$0")/lib.sh"

iso_ms() {
  python3 -c 'import datetime, sys
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
print(int(t.timestamp() * 1000 + 0.5))' "$1"
}

check_acquire_json x 8s
expires=$(iso_ms "$(printf '%s' "$out" | json 'd["expires_at"]')")
# The file lock has no lease of its own: the keeper's window is the lease.
[ "$(printf '%s' "$out" | json 'd.get("renew_by", d["expires_at"]) == d["expires_at"]')" = true ] ||
  fail "renew_by and expires_at differ on the file backend: $out"

# Poll status until the lock is free: the latest end it showed (the time of
# the call plus ttl_left_ms) must not be after the lock was free.
latest_end=0
polls=0
while :; do
  before=$(now_ms)
  capture "${DL[@]}" status x --json
  [ "$rc" = 3 ] && break
  [ "$rc" = 0 ] || fail "status x exited $rc; stderr: $err"
  # (Read by bash, not python: a look must cost little beside the lease.)
  [[ $out =~ \"ttl_left_ms\":\ ?([0-9]+) ]] || fail "status shows no time left for a lock with a lease: $out"
  left=${BASH_REMATCH[1]}
  [ $((before + left)) -gt "$latest_end" ] && latest_end=$((before + left))
  polls=$((polls + 1))
  [ $((before - expires)) -lt 5000 ] || fail "lock x is still held 5 s after its printed expires_at"
  sleep 0.05 # a sample of status every 50 ms, until the lock is free
done
free_at=$(now_ms)
echo "$polls status calls; the lock was free $((free_at - expires)) ms after the printed expires_at; status' latest end was $((latest_end - free_at)) ms from then"
[ "$polls" -ge 5 ] || fail "only $polls status calls saw the lock held"
[ "$latest_end" -le "$free_at" ] || fail "status showed time left until $((latest_end - free_at)) ms after the lock was free"
[ "$expires" -le "$free_at" ] || fail "acquire printed expires_at $((expires - free_at)) ms after the lock was free"
pass
