#!/usr/bin/env bash
# A ZooKeeper member cut off from its peers (a black hole on its quorum and
# election links, no RST; its clients still reach it) must not keep a lock
# alive. Three members, tickTime 200 ms; holder A connected only to a
# follower F, waiter B only to another member. A runs a long job with
# --ttl 1s, then F is cut off: the leader expires A's session about 1 s
# later and B gets the lock. F answers reads from its own memory until it
# gives up on the leader (syncLimit, 2 s), so a renewal that is only a read
# kept A's job running beside B's. Checked: A's job is gone before B's
# starts (timestamps the jobs write every 10 ms), A exits 76, B runs.
# Run under scripts/with-zookeeper --ensemble 3 --peer-links --tick 200.
SCENARIO="zookeeper: a member cut off from its peers cannot keep a lock"
. "$(dirname "$0")/lib.sh"
use_zookeeper

if [ "${DLOCK_TEST_ZK_ENSEMBLE:-1}" != 3 ] || [ -z "${DLOCK_TEST_ZK_HEAL:-}" ]; then
  fail "run this test under scripts/with-zookeeper --ensemble 3 --peer-links --tick 200"
fi
name=isolated.job
read -ra ports <<<"$DLOCK_TEST_ZK_PORTS"

leader=$("$DLOCK_TEST_ZK_LEADER") || fail "the ensemble has no leader"
follower='' other=''
for i in 1 2 3; do
  if [ "$i" != "$leader" ] && [ -z "$follower" ]; then
    follower=$i
  elif [ -z "$other" ]; then
    other=$i
  fi
done
url_a=zk://127.0.0.1:${ports[$((follower - 1))]}
url_b=zk://127.0.0.1:${ports[$((other - 1))]}
echo "leader $leader; holder A on member $follower, waiter B on member $other"

# A job that notes the time every 10 ms until it is stopped.
# shellcheck disable=SC2016 # expanded by the job's bash
job='while :; do date +%s%3N >>"$1"; sleep 0.01; done'

"$DLOCK_BIN" -b "$url_a" run --ttl 1s --kill-after 200ms -vv "$name" -- bash -c "$job" job "$tmpdir/a.alive" \
  2>"$tmpdir/a.err" &
a_pid=$!
track "$a_pid"
wait_until -t 10 test -s "$tmpdir/a.alive" || fail "holder A's job did not start: $(cat "$tmpdir/a.err")"
# Past A's first two confirmed renewals (-vv logs each), so that A's lease
# was confirmed since it began. (An event to wait on, not a count of the
# job's samples: under load a loop of date and sleep runs far slower than
# every 10 ms, and 60 samples took more than 5 s in CI.)
renewals_of_a() { [ "$(grep -c 'renewed' "$tmpdir/a.err")" -ge 2 ]; }
wait_until -t 15 renewals_of_a ||
  fail "holder A logged no two renewals in 15 s: $(tail -n 5 "$tmpdir/a.err" | tr '\n' ' ')"
is_alive "$a_pid" || fail "holder A ended before the cut: $(tail -n 5 "$tmpdir/a.err" | tr '\n' ' ')"

isolate=DLOCK_TEST_ZK_ISOLATE_$follower
"${!isolate}" || fail "could not cut member $follower off"
cut_at=$(now_ms)
echo "member $follower cut off from its peers"

"$DLOCK_BIN" -b "$url_b" run --ttl 1s --wait 20s "$name" -- bash -c 'date +%s%3N >"$1"; sleep 0.3' job \
  "$tmpdir/b.start" 2>"$tmpdir/b.err" &
b_pid=$!
track "$b_pid"

wait_exit "$a_pid" 15
a_rc=$rc
a_end=$(tail -n 1 "$tmpdir/a.alive")
wait_exit "$b_pid" 25
b_rc=$rc
"$DLOCK_TEST_ZK_HEAL" || fail "could not heal the cut"

[ -s "$tmpdir/b.start" ] || fail "waiter B never ran its job (exit $b_rc): $(cat "$tmpdir/b.err")"
b_start=$(cat "$tmpdir/b.start")
echo "A's job last alive $((a_end - cut_at)) ms after the cut, B's job started $((b_start - cut_at)) ms after it"
grep -c 'renewed' "$tmpdir/a.err" | sed 's/^/renewals of A logged: /'
[ "$a_end" -lt "$b_start" ] ||
  fail "two jobs at once: A's job ran until $((a_end - b_start)) ms after B's began (A: $(tail -n 2 "$tmpdir/a.err" | tr '\n' ' '))"
[ "$a_rc" = 76 ] || fail "holder A exited $a_rc, expected 76 (lock lost): $(tail -n 3 "$tmpdir/a.err")"
[ "$b_rc" = 0 ] || fail "waiter B exited $b_rc: $(cat "$tmpdir/b.err")"
# The job must stop before the lease can lapse: T after the cut at most.
[ $((a_end - cut_at)) -le 1000 ] || fail "A's job ran $((a_end - cut_at)) ms after the cut (T is 1 s)"
pass
