#!/usr/bin/env bash
# The Redis server restarted (empty) while a waiter waits: the waiter's
# next attempt goes out on a new connection and takes the lock (exit 0),
# instead of failing on the connection the old server closed (69). Found by
# scripts/chaos (Redlock waiters gave up with "no quorum" although every
# node was back).
SCENARIO="redis: server restarted under a waiter"
. "$(dirname "$0")/lib.sh"
use_redis

"${DL[@]}" run r --ttl 2s -- sh -c 'touch "$1"; exec sleep 30' sh "$tmpdir/held" 2>"$tmpdir/h.err" &
holder=$!
wait_until -t 10 test -e "$tmpdir/held" || fail "the holder did not start"
"${DL[@]}" run r --wait 20s -- touch "$tmpdir/ran" 2>"$tmpdir/w.err" &
waiter=$!
subscribed() { [ "$("$DLOCK_TEST_REDIS_CLI" PUBSUB NUMPAT)" -gt 0 ] || [ -n "$("$DLOCK_TEST_REDIS_CLI" PUBSUB CHANNELS)" ]; }
wait_until -t 10 subscribed || fail "the waiter never subscribed"
"$DLOCK_TEST_REDIS_RESTART" || fail "the server did not restart"
wait_exit "$waiter" 20
[ "$rc" = 0 ] || fail "the waiter exited $rc after the server restarted (expected 0): $(cat "$tmpdir/w.err")"
[ -e "$tmpdir/ran" ] || fail "the waiter's job did not run"
# The holder's key went with the restart: its next renewal says so.
wait_exit "$holder" 10
[ "$rc" = 76 ] || fail "the holder exited $rc after its key was lost (expected 76): $(cat "$tmpdir/h.err")"
pass
