#!/usr/bin/env bash
# A semaphore's waiters on etcd queue herd-free: the first waiter watches
# the holders' deletions, every later one the key just before its own. With
# the holder of a --limit 1 semaphore (the same code as any N) and W
# waiters queued one after the other, the waiters get the slot in the order
# they came, and the work the server does per hand-over (its range, put and
# txn counts) does not grow with W: 4 and 16 waiters cost about the same.
SCENARIO="etcd: a semaphore's hand-over wakes two waiters, whatever their number, in order"
. "$(dirname "$0")/lib.sh"
use_etcd

metrics_url="http://${DLOCK_TEST_ETCD_URL#etcd://}"
metrics_url="${metrics_url%%,*}/metrics"
# server_ops: ranges + puts + txns the member has served so far.
server_ops() {
  curl -s --max-time 5 "$metrics_url" |
    awk '/^etcd_debugging_mvcc_(range|put|txn)_total /{n += $2; seen++} END {printf "%d\n", seen == 3 ? n : -1}'
}
[ "$(server_ops)" -ge 0 ] 2>/dev/null || fail "no mvcc range, put and txn counters at $metrics_url"

# queue_round W: a holder, W waiters queued in turn, then let go; sets OPS
# to the server's operations per hand-over. The waiters' order of
# arrival and of getting a slot are in $tmpdir/W.queued and W.served.
queue_round() {
  local w=$1 name=q$1 i pids=() before after
  : >"$tmpdir/$w.queued"
  : >"$tmpdir/$w.served"
  for i in 1; do
    mkfifo "$tmpdir/$w.hold$i"
    "${DL[@]}" run --limit 1 --ttl 30s "$name" -- sh -c 'touch "$1.in"; read -r _ <"$1"' sh "$tmpdir/$w.hold$i" \
      </dev/null 2>>"$tmpdir/err" &
    pids+=($!)
    wait_until test -e "$tmpdir/$w.hold$i.in" || fail "holder $i of $name did not start: $(cat "$tmpdir/err")"
  done
  for ((i = 1; i <= w; i++)); do
    # shellcheck disable=SC2016 # expanded by the job's shell
    "${DL[@]}" run --limit 1 --ttl 30s --wait 60s "$name" -- sh -c 'echo "$1" >>"$2"' sh "$i" "$tmpdir/$w.served" \
      </dev/null 2>>"$tmpdir/err" &
    pids+=($!)
    echo "$i" >>"$tmpdir/$w.queued"
    wait_until eval '[ "$(lock_waiters "$name")" = "$i" ]' || fail "waiter $i of $name never queued"
  done
  track "${pids[@]}"
  before=$(server_ops)
  echo >"$tmpdir/$w.hold1"
  for pid in "${pids[@]}"; do
    wait_exit "$pid" 60
    [ "$rc" = 0 ] || fail "a run on $name exited $rc: $(tail -3 "$tmpdir/err")"
  done
  after=$(server_ops)
  cmp -s "$tmpdir/$w.queued" "$tmpdir/$w.served" ||
    fail "with $w waiters the slots went in the order $(tr '\n' ' ' <"$tmpdir/$w.served"), not as they queued"
  OPS=$(((after - before) / w))
}

queue_round 4
few=$OPS
queue_round 16
many=$OPS
echo "server operations per hand-over: $few with 4 waiters, $many with 16"
[ "$many" -le $((few * 3 / 2 + 2)) ] || fail "a hand-over cost $many server operations with 16 waiters and $few with 4: it grows with the queue"
[ ! -s "$tmpdir/err" ] || fail "dlock printed on stderr: $(head -3 "$tmpdir/err")"
pass
