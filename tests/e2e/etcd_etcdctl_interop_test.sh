#!/usr/bin/env bash
# dlock's etcd locks are etcd's concurrency.Mutex, the recipe of `etcdctl
# lock`: lock NAME of namespace NS is etcdctl's lock NS/NAME (keys
# NS/NAME/<lease id>, the lowest create revision holds). Both ways: while
# `etcdctl lock dlock/NAME -- CMD` runs CMD, `dlock run NAME` is busy (75),
# status shows it held (fence = etcdctl's ETCD_LOCK_REV, no holder record),
# and `dlock run NAME --wait` runs its job only once CMD has ended; while
# `dlock run NAME` runs its job, `etcdctl lock dlock/NAME -- CMD` waits and
# runs CMD only once the job has ended. Mixed contenders never overlap.
SCENARIO="etcd: etcdctl lock and dlock exclude each other"
. "$(dirname "$0")/lib.sh"
use_etcd

name=nightly/report

# etcdctl holds the lock, its command blocked on a fifo until let go.
mkfifo "$tmpdir/ctl.fifo"
"$ETCDCTL" lock "dlock/$name" -- sh -c 'echo "$ETCD_LOCK_REV" >"$1.rev"; echo $$ >"$1.tmp"; mv "$1.tmp" "$1.pid"
read x <"$1.fifo"; date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1.end"' sh "$tmpdir/ctl" </dev/null >"$tmpdir/ctl.out" 2>&1 &
ctl=$!
track "$ctl"
wait_until test -s "$tmpdir/ctl.pid" || fail "etcdctl lock dlock/$name did not run its command: $(cat "$tmpdir/ctl.out")"
track "$(cat "$tmpdir/ctl.pid")"
ctl_rev=$(cat "$tmpdir/ctl.rev")

capture "${DL[@]}" run "$name" -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "run $name while etcdctl holds dlock/$name exited $rc, expected 75; stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "dlock ran its job while etcdctl held the lock"
assert_one_line_message "run $name while etcdctl holds the lock" "$err"
capture "${DL[@]}" -q run "$name" -- touch "$tmpdir/ran"
[ "$rc" = 75 ] && [ -z "$err" ] || fail "run -q $name while etcdctl holds the lock: exit $rc, stderr '$err' (expected 75, silent)"
capture "${DL[@]}" status "$name" --json
[ "$rc" = 0 ] || fail "status $name while etcdctl holds the lock exited $rc, expected 0 (held); stderr: $err"
[ "$(printf '%s' "$out" | json 'd["held"]')" = true ] || fail "status --json while etcdctl holds the lock: held is not true: $out"
[ "$(printf '%s' "$out" | json 'd["fence"]')" = "$ctl_rev" ] || fail "status shows the fence $(printf '%s' "$out" | json 'd["fence"]'), etcdctl's ETCD_LOCK_REV is $ctl_rev"
[ "$(printf '%s' "$out" | json 'd["holder"]')" = null ] || fail "status --json shows a holder record for etcdctl's lock: $out"
capture "${DL[@]}" list --json
[ "$(printf '%s' "$out" | json '[x["name"] for x in d]')" = "[\"$name\"]" ] || fail "list does not show etcdctl's lock $name: $out"

# A waiting dlock runs its job only after etcdctl's command ended.
"${DL[@]}" run "$name" --wait 10s -- sh -c 'date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1"; echo "$DLOCK_FENCE" >"$1.fence"' \
  sh "$tmpdir/got" </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter "$name" || fail "the waiting dlock never queued behind etcdctl; stderr: $(cat "$tmpdir/waiter.err")"
[ ! -e "$tmpdir/got" ] || fail "the waiter ran its job while etcdctl held the lock"
is_alive "$waiter" || fail "the waiter ended while etcdctl held the lock; stderr: $(cat "$tmpdir/waiter.err")"
echo go >"$tmpdir/ctl.fifo"
wait_exit "$ctl" 5
[ "$rc" = 0 ] || fail "etcdctl lock exited $rc: $(cat "$tmpdir/ctl.out")"
wait_until -t 5 test -s "$tmpdir/got" || fail "the waiter did not get the lock within 5 s of etcdctl's end; stderr: $(cat "$tmpdir/waiter.err")"
ctl_end=$(cat "$tmpdir/ctl.end")
got=$(cat "$tmpdir/got")
echo "the waiting dlock ran its job $((got - ctl_end)) ms after etcdctl's command ended"
[ "$got" -ge "$ctl_end" ] || fail "the waiter's job started at $got, before etcdctl's command ended at $ctl_end"
[ $((got - ctl_end)) -lt 2000 ] || fail "the waiter got the lock only $((got - ctl_end)) ms after etcdctl let go"
wait_exit "$waiter" 5
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(cat "$tmpdir/got.fence")" -gt "$ctl_rev" ] || fail "the waiter's fence $(cat "$tmpdir/got.fence") is not greater than etcdctl's revision $ctl_rev"

# dlock holds the lock: etcdctl waits until dlock's job has ended.
mkfifo "$tmpdir/job.fifo"
"${DL[@]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE" >"$1.fence"; echo $$ >"$1.tmp"; mv "$1.tmp" "$1.pid"
read x <"$1.fifo"; date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1.end"' sh "$tmpdir/job" </dev/null 2>"$tmpdir/job.err" &
holder=$!
track "$holder"
wait_until test -s "$tmpdir/job.pid" || fail "dlock run $name did not start its job; stderr: $(cat "$tmpdir/job.err")"
"$ETCDCTL" lock "dlock/$name" -- sh -c 'date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1.start"; echo "$ETCD_LOCK_REV" >"$1.rev"' \
  sh "$tmpdir/ctl2" </dev/null >"$tmpdir/ctl2.out" 2>&1 &
ctl2=$!
track "$ctl2"
wait_until has_waiter "$name" || fail "etcdctl lock never queued behind dlock: $(cat "$tmpdir/ctl2.out")"
[ ! -e "$tmpdir/ctl2.start" ] || fail "etcdctl ran its command while dlock held the lock"
is_alive "$ctl2" || fail "etcdctl lock ended while dlock held the lock: $(cat "$tmpdir/ctl2.out")"
echo go >"$tmpdir/job.fifo"
wait_exit "$holder" 5
[ "$rc" = 0 ] || fail "dlock run exited $rc; stderr: $(cat "$tmpdir/job.err")"
wait_exit "$ctl2" 5
[ "$rc" = 0 ] || fail "etcdctl lock exited $rc: $(cat "$tmpdir/ctl2.out")"
job_end=$(cat "$tmpdir/job.end")
ctl_start=$(cat "$tmpdir/ctl2.start")
echo "etcdctl ran its command $((ctl_start - job_end)) ms after dlock's job ended"
[ "$ctl_start" -ge "$job_end" ] || fail "etcdctl's command started at $ctl_start, before dlock's job ended at $job_end"
[ "$(cat "$tmpdir/ctl2.rev")" -gt "$(cat "$tmpdir/job.fence")" ] ||
  fail "etcdctl's revision $(cat "$tmpdir/ctl2.rev") is not greater than dlock's fence $(cat "$tmpdir/job.fence")"

# Mixed contenders, each critical section noting overlaps: none.
cat >"$tmpdir/critical.sh" <<'SCRIPT'
d=$1
mkdir "$d/inside" 2>/dev/null || echo "overlap $2" >>"$d/overlaps"
sleep 0.02
echo "$2" >>"$d/entries"
rmdir "$d/inside"
SCRIPT
: >"$tmpdir/overlaps"
: >"$tmpdir/entries"
: >"$tmpdir/failures"
contend() {
  local who=$1 i
  for i in 1 2 3 4 5 6; do
    if [ "$who" = etcdctl ]; then
      timeout 30 "$ETCDCTL" lock "dlock/$name" -- sh "$tmpdir/critical.sh" "$tmpdir" etcdctl >/dev/null 2>&1
    else
      "${DL[@]}" run "$name" --wait 30s -- sh "$tmpdir/critical.sh" "$tmpdir" dlock </dev/null
    fi || echo "$who round $i failed" >>"$tmpdir/failures"
  done
}
pids=()
for who in dlock dlock dlock etcdctl etcdctl; do
  contend "$who" &
  pids+=($!)
done
track "${pids[@]}"
for pid in "${pids[@]}"; do wait_exit "$pid" 40; done
[ ! -s "$tmpdir/failures" ] || fail "some contenders failed: $(head -3 "$tmpdir/failures")"
[ ! -s "$tmpdir/overlaps" ] || fail "critical sections of dlock and etcdctl overlapped: $(head -3 "$tmpdir/overlaps")"
[ "$(wc -l <"$tmpdir/entries")" = 30 ] || fail "$(wc -l <"$tmpdir/entries") critical sections ran, expected 30"
[ "$(etcd_key_count "$name")" = 0 ] || fail "keys are left under dlock/$name/: $(etcd_keys "dlock/$name/")"
pass
