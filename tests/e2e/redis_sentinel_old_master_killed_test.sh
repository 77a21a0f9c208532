#!/usr/bin/env bash
# Redis Sentinel: a waiter whose master is failed over and then dies follows
# the sentinels to the new master. Holder A and waiter C both use
# redis-sentinel://; after SENTINEL FAILOVER the old master is killed.
# C's subscription breaks; it must subscribe again on the master the
# sentinels name now, not on the dead server (0e9552c tried the old address
# for the rest of its --wait and exited 69), and get the lock when A, which
# renews on the new master, lets it go. Run under scripts/with-redis
# --replica --sentinels 3.
SCENARIO="redis: a waiter follows the sentinels when the old master dies after a failover"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sentinel_lib.sh"
# A's renewals land on the new master (the key's expiry moves there).
renewed_on_new_master() {
  local pttl
  pttl=$("$DLOCK_TEST_REPLICA_CLI" PTTL "$lock_key")
  [ "${pttl:-0}" -gt "$((last_pttl + 200))" ] && return 0
  last_pttl=${pttl:-0}
  return 1
}

# A's lease is 6 s: a renewal that reached the old master after the
# promotion does not count (the sentinels name another master), and on a
# busy machine the next one, on the new master, must still come in time
# (CI: with 3 s, A's dlock stopped its job with 76 before it did).
start_job "$name" --ttl 6s
wait_until -t 3 replicated || fail "the lock key never reached the replica"
"${DL[@]}" run "$name" --wait 30s -- sh -c 'date +%s%3N >"$1.start"' sh "$tmpdir/c" </dev/null >/dev/null 2>"$tmpdir/c.err" &
c=$!
track "$c"
wait_until has_waiter "$name" || fail "C never waited for the lock"

[ "$("$DLOCK_TEST_SENTINEL_CLI_1" SENTINEL FAILOVER dlockmaster)" = OK ] || fail "SENTINEL FAILOVER was refused"
wait_until -t 10 names_replica || fail "sentinel 1 did not name the replica as master within 10 s of SENTINEL FAILOVER"
kill -KILL "$(cat "$DLOCK_TEST_REDIS_PIDFILE")"
last_pttl=$("$DLOCK_TEST_REPLICA_CLI" PTTL "$lock_key")
wait_until -t 8 renewed_on_new_master || fail "A's lease never moved on the new master (A's dlock: $(cat "$tmpdir/dlock.rc" 2>/dev/null); stderr: $(cat "$tmpdir/job.err"))"
is_alive "$JOB_PID" || fail "A's job ended"
[ ! -e "$tmpdir/c.start" ] || fail "C's job started while A's ran"
ended=$(now_ms)
kill -TERM "$JOB_PID"
wait_exit "$c" 35
[ "$rc" = 0 ] || fail "C exited $rc $(($(now_ms) - ended)) ms after A's job ended, expected 0 (the lock, on the new master); stderr: $(cat "$tmpdir/c.err")"
[ "$(cat "$tmpdir/c.start")" -ge "$ended" ] || fail "C's job started before A's job was ended"
elapsed=$(($(cat "$tmpdir/c.start") - ended))
echo "C ran its job $elapsed ms after A's job was ended"
[ "$elapsed" -lt 1500 ] || fail "C took $elapsed ms to get the released lock: it was not woken by the new master's release"
pass
