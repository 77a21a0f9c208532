#!/usr/bin/env bash
# What acquire and renew print about an etcd lease is true: a lock granted
# after a wait of ~2-3 s with --ttl 2s, and never renewed, must not be given
# to another client before the expires_at that acquire printed, and ttl_ms
# is what was left of the lease then (it began with the lease's last
# keep-alive during the wait, not when acquire printed). The same for renew.
SCENARIO="etcd: acquire and renew print an expiry no later than the lease's"
. "$(dirname "$0")/lib.sh"
use_etcd

iso_ms() {
  python3 -c 'import datetime, sys
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
print(int(t.timestamp() * 1000 + 0.5))' "$1"
}

# check_expiry WHAT JSON: another client waits for the lock; it must not get
# it before JSON's expires_at.
check_expiry() {
  local what=$1 doc=$2 expires ttl_left got
  expires=$(iso_ms "$(printf '%s' "$doc" | json 'd["expires_at"]')")
  ttl_left=$(printf '%s' "$doc" | json 'd["ttl_ms"]')
  capture "${DL[@]}" acquire x --ttl 10s --wait 10s
  got=$(now_ms)
  [ "$rc" = 0 ] || fail "the waiter after $what exited $rc; stderr: $err"
  echo "$what: printed ttl_ms $ttl_left, expires_at $((expires - got)) ms from when the waiter got the lock"
  [ "$expires" -le "$got" ] ||
    fail "$what printed expires_at $((expires - got)) ms after another client got the lock"
  "${DL[@]}" release x "$out" || fail "the waiter's release failed"
}

# A holder that lets its lease lapse in 3 s, and a waiter that gets the lock
# after about 3 s of waiting.
"${DL[@]}" acquire x --ttl 3s >/dev/null || fail "the first acquire failed"
started=$(now_ms)
capture "${DL[@]}" acquire x --ttl 2s --wait 10s --json
[ "$rc" = 0 ] || fail "acquire after a wait exited $rc; stderr: $err"
echo "acquire --ttl 2s got the lock after $(($(now_ms) - started)) ms of waiting"
waited=$out
[ "$(printf '%s' "$waited" | json 'd["ttl_ms"] <= 2000')" = true ] || fail "acquire --ttl 2s printed ttl_ms above 2000: $waited"
check_expiry "acquire after a wait" "$waited"

# The same with the grant placed between two of the waiter's keep-alives
# (every T/3 = 2 s from when it started), long after the last one: its
# lease then ends about 1.8 s before T from when acquire printed.
"${DL[@]}" acquire z --ttl 30s >"$tmpdir/z.token" || fail "acquire z failed"
started=$(now_ms)
"${DL[@]}" acquire z --ttl 6s --wait 20s --json >"$tmpdir/z.json" 2>"$tmpdir/z.err" </dev/null &
z_waiter=$!
track "$z_waiter"
until [ $(($(now_ms) - started)) -ge 3800 ]; do sleep 0.05; done # the schedule of keep-alives is what is tested
"${DL[@]}" release z "$(cat "$tmpdir/z.token")" || fail "release of the first holder of z failed"
wait_exit "$z_waiter" 5
[ "$rc" = 0 ] || fail "acquire z --ttl 6s --wait exited $rc; stderr: $(cat "$tmpdir/z.err")"
z_doc=$(cat "$tmpdir/z.json")
expires=$(iso_ms "$(printf '%s' "$z_doc" | json 'd["expires_at"]')")
capture "${DL[@]}" acquire z --ttl 10s --wait 20s
got=$(now_ms)
[ "$rc" = 0 ] || fail "the waiter on z exited $rc; stderr: $err"
echo "acquire granted between keep-alives: printed $z_doc, expires_at $((expires - got)) ms from when the next waiter got the lock"
[ "$expires" -le "$got" ] ||
  fail "acquire granted between keep-alives printed expires_at $((expires - got)) ms after another client got the lock"

# renew --json: from the renewal's own send time.
"${DL[@]}" acquire y --ttl 2s >"$tmpdir/y.token" || fail "acquire y failed"
capture "${DL[@]}" renew y "$(cat "$tmpdir/y.token")" --ttl 2s --json
[ "$rc" = 0 ] || fail "renew y --json exited $rc; stderr: $err"
renewed=$out
[ "$(printf '%s' "$renewed" | json 'd["ttl_ms"] <= 2000')" = true ] || fail "renew --ttl 2s printed ttl_ms above 2000: $renewed"
y_expires=$(iso_ms "$(printf '%s' "$renewed" | json 'd["expires_at"]')")
capture "${DL[@]}" acquire y --ttl 10s --wait 10s
got=$(now_ms)
[ "$rc" = 0 ] || fail "the waiter on y exited $rc; stderr: $err"
echo "renew: expires_at $((y_expires - got)) ms from when the waiter got the lock"
[ "$y_expires" -le "$got" ] || fail "renew printed expires_at $((y_expires - got)) ms after another client got the lock"
pass
