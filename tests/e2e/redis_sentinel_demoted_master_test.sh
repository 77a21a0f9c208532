#!/usr/bin/env bash
# Redis Sentinel: a waiter on a master that Sentinel demotes follows the
# sentinels to the new master. After SENTINEL FAILOVER the sentinels turn
# the old master into a replica of the new one about 10 s later, and kill
# its clients' connections (CLIENT KILL). A waiter that went on waiting
# there subscribed again on the old address and got READONLY for every
# attempt, on the same connection, for the rest of its --wait (the
# sentinels were asked again only when a connection closed), and never got
# the lock that the holder, renewing on the new master, released (issue 16,
# point 10). Holder A (--ttl 20s, so that the old master keeps A's key
# until it is a replica) and waiter C, both through redis-sentinel://;
# after the demotion C must wait on the new master, and when A's job ends
# get the lock there and run its job. Run under scripts/with-redis
# --replica --sentinels 3.
SCENARIO="redis: a waiter on a demoted master follows the sentinels to the new one"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sentinel_lib.sh"
old_master_demoted() { "$DLOCK_TEST_REDIS_CLI" ROLE | head -1 | grep -qx slave; }
# C listens on the new master, on its own channel of the name's queue.
waits_on_new_master() {
  [ -n "$("$DLOCK_TEST_REPLICA_CLI" PUBSUB CHANNELS "$(redis_key "$name" queue):*")" ]
}

start_job "$name" --ttl 20s
wait_until -t 3 replicated || fail "the lock key never reached the replica"
"${DL[@]}" run "$name" --wait 40s -- sh -c 'date +%s%3N >"$1.start"' sh "$tmpdir/c" </dev/null >/dev/null 2>"$tmpdir/c.err" &
c=$!
track "$c"
wait_until has_waiter "$name" || fail "C never waited for the lock"

[ "$("$DLOCK_TEST_SENTINEL_CLI_1" SENTINEL FAILOVER dlockmaster)" = OK ] || fail "SENTINEL FAILOVER was refused"
failover_at=$(now_ms)
wait_until -t 25 old_master_demoted || fail "the sentinels did not turn the old master into a replica within 25 s"
echo "the old master is a replica $(($(now_ms) - failover_at)) ms after SENTINEL FAILOVER"
wait_until -t 5 waits_on_new_master || fail "C does not wait on the new master after the old one was demoted; its stderr: $(cat "$tmpdir/c.err")"
is_alive "$JOB_PID" || fail "A's job ended; A's dlock: $(cat "$tmpdir/dlock.rc" 2>/dev/null); stderr: $(cat "$tmpdir/job.err")"
[ ! -e "$tmpdir/c.start" ] || fail "C's job started while A's ran"
ended=$(now_ms)
kill -TERM "$JOB_PID"
wait_exit "$c" 30
[ "$rc" = 0 ] || fail "C exited $rc $(($(now_ms) - ended)) ms after A's job ended, expected 0 (the lock, on the new master); stderr: $(cat "$tmpdir/c.err")"
[ "$(cat "$tmpdir/c.start")" -ge "$ended" ] || fail "C's job started before A's job was ended"
echo "C ran its job $(($(cat "$tmpdir/c.start") - ended)) ms after A's job was ended"
pass
