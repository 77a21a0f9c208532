#!/usr/bin/env bash
# dlock itself stopped (SIGSTOP to its pid only, not to the job) while its
# job runs, on a backend whose lock is a lease: Redis (under with-redis) or
# etcd (under with-etcd). The lease (--ttl 2s) is no longer renewed and
# lapses, and a waiter gets the lock; the guard, which knows the kill
# deadline of the last confirmed renewal, must have killed the job's process
# group before then: when the waiter's job starts, the first job and its
# grandchild are gone (a zombie counts as gone) and the first job's last
# timestamp is older. Continued afterwards, dlock exits 76 with one line
# saying what happened.
SCENARIO="dlock stopped while its job runs: the guard kills the job before the lease lapses"
. "$(dirname "$0")/lib.sh"
if [ -n "${DLOCK_TEST_ETCD_URL:-}" ]; then
  use_etcd
  SCENARIO="etcd: $SCENARIO"
  wait_first_renewal() { etcd_wait_renewed; }
else
  use_redis
  SCENARIO="redis: $SCENARIO"
  wait_first_renewal() { wait_renewed "$(redis_key x lock)"; }
fi

d=$tmpdir
# The first job: a grandchild in its process group, and timestamps every 50 ms.
# shellcheck disable=SC2016 # expanded by the job's shell
"${DL[@]}" run x --ttl 2s -- sh -c 'd=$1
sleep 1000 &
echo $! >"$d/grandchild.tmp" && mv "$d/grandchild.tmp" "$d/grandchild.pid"
echo $$ >"$d/holder.tmp" && mv "$d/holder.tmp" "$d/holder.pid"
while :; do date +%s%3N >>"$d/stamps"; sleep 0.05; done' sh "$d" </dev/null >/dev/null 2>"$d/holder.err" &
holder=$!
track "$holder"
wait_until test -s "$d/holder.pid" || fail "the first job did not start; stderr: $(cat "$d/holder.err")"
wait_until test -s "$d/grandchild.pid" || fail "the first job's grandchild did not start"
job=$(cat "$d/holder.pid") grandchild=$(cat "$d/grandchild.pid")
track "$job" "$grandchild"
wait_until test -s "$d/stamps" || fail "the first job writes no timestamps"
# After a confirmed renewal, so that its deadline is the one that counts.
wait_first_renewal

kill -STOP "$holder"
stopped=$(now_ms)
is_stopped() { [ "$(proc_state "$1")" = T ]; }
wait_until -t 2 is_stopped "$holder" || fail "test set-up: dlock $holder did not stop"

# The waiter's job notes, as it starts, whether the first job's processes
# still run, and when it started.
# shellcheck disable=SC2016 # expanded by the job's shell
"${DL[@]}" run x --wait 10s -- sh -c 'd=$1
for p in $(cat "$d/holder.pid") $(cat "$d/grandchild.pid"); do
  s=$(sed "s/.*) //" "/proc/$p/stat" 2>/dev/null | cut -d" " -f1)
  echo "$p ${s:-gone}" >>"$d/at-start"
done
date +%s%3N >"$d/waiter.tmp" && mv "$d/waiter.tmp" "$d/waiter.start"' sh "$d" </dev/null >/dev/null 2>"$d/waiter.err" &
waiter=$!
track "$waiter"
wait_exit "$waiter" 15
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$d/waiter.err")"
started=$(cat "$d/waiter.start")
last=$(tail -1 "$d/stamps")
echo "the waiter's job started $((started - stopped)) ms after dlock was stopped; the first job's last timestamp was $((last - stopped)) ms after; at the start: $(tr '\n' ' ' <"$d/at-start")"
while read -r pid state; do
  case $state in gone | Z | X) ;; *) fail "process $pid of the first job was still running (state $state) when the waiter's job started" ;; esac
done <"$d/at-start"
[ "$last" -lt "$started" ] || fail "the first job wrote a timestamp $((last - started)) ms after the waiter's job started"
if is_alive "$job" || is_alive "$grandchild"; then fail "the first job is still running while dlock is stopped"; fi

kill -CONT "$holder"
wait_exit "$holder" 10
[ "$rc" = 76 ] || fail "dlock exited $rc once continued, expected 76; stderr: $(cat "$d/holder.err")"
msg=$(cat "$d/holder.err")
assert_one_line_message "dlock continued after its guard killed the job" "$msg"
case $msg in *"not running"*) ;; *) fail "the message does not say that dlock was not running: $msg" ;; esac
echo "$msg"
pass
