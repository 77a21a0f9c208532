#!/usr/bin/env bash
# dlock's zk:// semaphore (--limit N) and Apache Curator's
# InterProcessSemaphoreV2(client, "/NS/NAME", N) on the same znode share the
# N slots: with N = 2, one Curator lease and one dlock holder fill them, so a
# second `dlock run --limit 2` is busy (75) and a Curator try is busy; a
# dlock waiter gets in, by the watch, once Curator returns its lease, and a
# waiting Curator once a dlock holder lets go. dlock's lease nodes are
# "_c_<uuid>-lease-<seq>" under leases/, its fence their czxid; busy tries,
# a timed-out wait and a signalled one leave neither a lease node nor a
# node in the locks/ mutex; another --limit beside a dlock holder is
# refused (78). Curator's side is tests/e2e/interop/CuratorSemaphore.java,
# compiled here.
SCENARIO="zookeeper: Curator's InterProcessSemaphoreV2 shares the slots with dlock --limit"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/interop/zk_interop_lib.sh"
use_zk_interop curator

curator_command SEM CuratorSemaphore
LEASE_NODE_RE='^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lease-[0-9]{10}$'
SEM_PATH=/dlock/sem
LEASES=$SEM_PATH/leases
LOCKS=$SEM_PATH/locks

# sem_hold ID: Curator waits for one lease of (SEM_PATH, 2) in the
# background and holds it until sem_release ID.
sem_hold() { interop_start "$1" Curator "a lease" acquired released "${SEM[@]}" "$SEM_PATH" 2; }

# sem_wait_held ID [S]: wait until ID holds; sets SEM_CZXID, SEM_HELD_MS.
sem_wait_held() { interop_wait_held_as SEM "$@"; }

sem_release() { interop_release "$1"; }

leases_are() {
  [ "$(zk_child_count "$LEASES")" = "$1" ] || fail "$2: $(zk_child_count "$LEASES") lease nodes, expected $1: $(children "$LEASES")"
}

# shellcheck disable=SC2317 # called through wait_until
leases_are_empty() { [ "$(zk_child_count "$LEASES")" = 0 ]; }

mutex_is_free() {
  [ "$(zk_child_count "$LOCKS")" = 0 ] || fail "$1: nodes are left in the mutex: $(children "$LOCKS")"
}

# 1. Curator's lease and a dlock holder fill the two slots: dlock and
# Curator are both busy, and their tries leave nothing behind.
sem_hold c1
sem_wait_held c1
start_holder d1 sem --limit 2
d1_pid=$HOLDER_PID
d1_fence=$(cat "$tmpdir/d1.fence")
[ "$d1_fence" -gt "$SEM_CZXID" ] || fail "dlock's fence $d1_fence is not above Curator's lease czxid $SEM_CZXID"
children "$LEASES" >"$tmpdir/leases"
grep -q " czxid=$d1_fence\$" "$tmpdir/leases" || fail "no lease node has dlock's fence $d1_fence as czxid: $(cat "$tmpdir/leases")"
while read -r node _; do
  [[ $node =~ $LEASE_NODE_RE ]] || fail "a lease node is named '$node', expected /$LEASE_NODE_RE/"
done <"$tmpdir/leases"
check_dlock_busy "Curator's lease and dlock's filled the two slots" sem --limit 2
assert_one_line_message "busy semaphore" "$err"
check_dlock_busy "Curator's lease and dlock's filled the two slots" sem --limit 2 --wait 300ms
capture "${SEM[@]}" "$SEM_PATH" 2 try 1000
[[ $rc = 75 && $out = busy ]] || fail "Curator's try beside two holders: exit $rc, '$out' (expected 75, busy); stderr: $err"
leases_are 2 "after the busy tries"
mutex_is_free "after the busy tries"
[ "$(status_field sem 'd["mode"]')" = semaphore ] || fail "status: $("${DL[@]}" status sem --json)"
[ "$(status_field sem 'len(d["holders"])')" = 2 ] || fail "status does not show two holders: $("${DL[@]}" status sem --json)"
[ "$(status_field sem 'd["limit"]')" = 2 ] || fail "status does not show dlock's limit: $("${DL[@]}" status sem --json)"

# 2. Another N beside dlock's holder is refused; a waiter stopped by a
# signal leaves no node.
capture "${DL[@]}" run --limit 3 sem -- touch "$tmpdir/ran"
[ "$rc" = 78 ] || fail "--limit 3 beside a dlock holder of --limit 2 exited $rc, expected 78; stderr: $err"
[[ $err == *"--limit 2"* ]] || fail "the refusal does not name the other limit: $err"
check_signalled_waiter "$LEASES" 3 "a waiting dlock --limit 2" --limit 2 sem
leases_are 2 "after the signalled waiter"
mutex_is_free "after the signalled waiter"

# 3. A dlock waiter gets in by the watch once Curator returns its lease.
# shellcheck disable=SC2016 # expanded by the job's shell
"${DL[@]}" run --limit 2 sem --wait 20s -- sh -c 'echo "$DLOCK_FENCE" >"$1"' sh "$tmpdir/waiter.fence" \
  </dev/null >"$tmpdir/waiter.out" 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until -t 10 _has_children "$LEASES" 3 || fail "the waiting dlock never made its lease node: $(cat "$tmpdir/waiter.err")"
[ ! -e "$tmpdir/waiter.fence" ] || fail "a third dlock ran beside two holders"
released=$(now_ms)
sem_release c1
wait_exit "$waiter" 15
[ "$rc" = 0 ] || fail "the waiting dlock exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
echo "dlock's waiter was done $(($(now_ms) - released)) ms after Curator returned its lease (upper bound)"
[ "$(cat "$tmpdir/waiter.fence")" -gt "$d1_fence" ] || fail "the waiter's fence is not above the earlier holder's"
leases_are 1 "after the waiter ran"

# 4. Two dlock holders fill the slots; a waiting Curator gets in once one
# lets go.
start_holder d2 sem --limit 2
sem_hold c2
wait_until -t 10 _has_children "$LEASES" 3 || fail "Curator never made its lease node; stderr: $(cat "$tmpdir/c2.err")"
! grep -q '^acquired' "$tmpdir/c2.out" || fail "Curator got a lease beside two dlock holders"
[ "$(lock_waiters sem)" = 1 ] || fail "status shows $(lock_waiters sem) waiters while Curator waits, expected 1"
"${DL[@]}" list --json >"$tmpdir/list.json" 2>&1 || fail "list failed: $(cat "$tmpdir/list.json")"
[ "$(json '[l["name"] for l in d if l["name"].startswith("sem")]' <"$tmpdir/list.json")" = '["sem"]' ] ||
  fail "list shows more than the semaphore (its mutex?): $(cat "$tmpdir/list.json")"
d2_pid=$HOLDER_PID
end_holder d2 "$d2_pid" "dlock run --limit 2"
sem_wait_held c2
check_handover "Curator got its lease" "dlock's holder" "$RELEASED_MS" "$SEM_HELD_MS"
sem_release c2
end_holder d1 "$d1_pid" "dlock run --limit 2"

# 5. `dlock acquire --limit 2` (a keeper holds the session) takes one slot
# beside Curator's lease: a Curator try is busy; renew works; release by
# token lets Curator in. (A window of 20 s: the Curator try starts a JVM,
# which on a loaded machine took longer than the 2 s window the keeper
# first had, so the lease was gone before the renew.)
sem_hold c3
sem_wait_held c3
capture "${DL[@]}" acquire --limit 2 sem --ttl 20s
[ "$rc" = 0 ] || fail "dlock acquire --limit 2 beside one Curator lease exited $rc; stderr: $err"
token=$(head -1 <<<"$out")
capture "${SEM[@]}" "$SEM_PATH" 2 try 500
[[ $rc = 75 && $out = busy ]] || fail "Curator's try beside the keeper's lease: exit $rc, '$out' (expected 75, busy)"
capture "${DL[@]}" renew sem "$token"
[ "$rc" = 0 ] || fail "renew of the keeper's lease exited $rc; stderr: $err"
capture "${DL[@]}" release sem "$token"
[ "$rc" = 0 ] || fail "release of the keeper's lease exited $rc; stderr: $err"
capture "${SEM[@]}" "$SEM_PATH" 2 try 5000
[[ $rc = 0 && $out = acquired* ]] || fail "Curator's try after the keeper's release: exit $rc, '$out'; stderr: $err"
sem_release c3
wait_until -t 10 leases_are_empty || fail "lease nodes are left: $(children "$LEASES")"
mutex_is_free "at the end"
pass
