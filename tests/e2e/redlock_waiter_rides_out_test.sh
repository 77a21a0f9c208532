#!/usr/bin/env bash
# A majority of the nodes stops answering (frozen) while a waiter waits:
# the waiter's attempts find no quorum, and it keeps trying (backoff up to
# 1 s) until its --wait runs out, as on a single Redis server, instead of
# giving up at once with 69. Once the nodes answer again it takes the lock.
# Found by scripts/chaos (net-delay and net-partition cells: waiters exited
# 69 "no quorum" in the middle of their --wait).
SCENARIO="redlock waiter rides out a lost quorum"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

"${DL[@]}" run ride --ttl 2s -- sh -c 'touch "$1"; exec sleep 30' sh "$tmpdir/held" 2>"$tmpdir/h.err" &
holder=$!
wait_until -t 10 test -e "$tmpdir/held" || fail "the holder did not start"
"${DL[@]}" -v run ride --wait 20s --ttl 2s -- touch "$tmpdir/ran" 2>"$tmpdir/w.err" &
waiter=$!
wait_until -t 10 has_subscriber ride || fail "the waiter never subscribed"
freeze_node $(seq 1 "$QUORUM")
# The holder cannot renew without a majority: it stops its job (76).
wait_exit "$holder" 10
[ "$rc" = 76 ] || fail "the holder exited $rc without a quorum (expected 76): $(cat "$tmpdir/h.err")"
# The waiter's next attempt (when the holder's lease could have run out)
# finds no quorum either: it must say it tries again, and still be waiting.
wait_until -t 10 grep -q "trying again" "$tmpdir/w.err" ||
  fail "the waiter did not retry after finding no quorum: $(cat "$tmpdir/w.err")"
kill -0 "$waiter" 2>/dev/null || {
  wait "$waiter"
  fail "the waiter gave up (exit $?) although its --wait 20s had not run out: $(cat "$tmpdir/w.err")"
}
thaw_node $(seq 1 "$QUORUM")
wait_exit "$waiter" 15
[ "$rc" = 0 ] || fail "the waiter exited $rc once the nodes answered again (expected 0): $(cat "$tmpdir/w.err")"
[ -e "$tmpdir/ran" ] || fail "the waiter's job did not run"
pass
