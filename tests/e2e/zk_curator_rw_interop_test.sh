#!/usr/bin/env bash
# dlock's zk:// shared locks (--shared, "_c_<uuid>-__READ__<seq>" nodes) and
# Apache Curator's InterProcessReadWriteLock on the same znode (/NS/NAME)
# exclude each other as readers and writers do: Curator's write lock makes
# `dlock run --shared` busy; beside Curator's read lock `dlock run --shared`
# runs and an exclusive `dlock run` is busy; beside dlock's reader Curator's
# read lock is granted and its write lock is not; a Curator writer waiting
# behind dlock's reader keeps new dlock readers out (writer preference), is
# handed the lock by the watch once the reader goes, and hands it on to a
# waiting dlock reader. dlock's exclusive lock (a -lock- node and a __WRIT__
# node of one protected id) makes Curator's read and write locks busy, and
# hands over by the watch to a Curator reader waiting behind it. Curator's
# side is tests/e2e/interop/CuratorReadWrite.java, compiled here.
SCENARIO="zookeeper: Curator's InterProcessReadWriteLock interoperates"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/interop/zk_interop_lib.sh"
use_zk_interop curator

curator_command RW CuratorReadWrite
READ_NODE_RE='^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-__READ__[0-9]{10}$'

# rw_hold ID PATH read|write: Curator waits for that lock on PATH in the
# background and holds it until rw_release ID.
rw_hold() { interop_start "$1" Curator "its lock" acquired released "${RW[@]}" "$2" "$3"; }

# rw_wait_held ID [S]: wait until ID holds; sets RW_CZXID, RW_HELD_MS.
rw_wait_held() { interop_wait_held_as RW "$@"; }

rw_release() { interop_release "$1"; }

# 1. Curator's write lock held: dlock's readers (and writers) are busy; a
# reader that gives up waiting or is stopped by a signal leaves no node.
rw_hold cw /dlock/written write
rw_wait_held cw
check_dlock_busy "Curator's write lock was held" written --shared
assert_one_line_message "busy under Curator's write lock" "$err"
check_dlock_busy "Curator's write lock was held" written
check_dlock_busy "Curator's write lock was held" written --shared --wait 300ms
check_signalled_waiter /dlock/written 2 "a waiting reader" --shared written
[ ! -e "$tmpdir/ran" ] || fail "dlock --shared ran its command beside Curator's write lock"
[ "$(zk_child_count /dlock/written)" = 1 ] || fail "the busy runs left nodes behind: $(children /dlock/written)"
[ "$(status_field written 'd["mode"]')" = exclusive ] ||
  fail "status while Curator's write lock is held: $("${DL[@]}" status written --json)"
rw_release cw
no_nodes_left /dlock/written

# 2. Curator's read lock held: a dlock reader runs beside it, with a fence of
# its own above Curator's czxid; a dlock writer is busy.
rw_hold cr /dlock/read read
rw_wait_held cr
# shellcheck disable=SC2016 # expanded by the job's shell
capture "${DL[@]}" run --shared read -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "dlock run --shared exited $rc beside Curator's read lock, expected 0; stderr: $err"
if ! [[ $out =~ ^[0-9]+$ ]] || [ "$out" -le "$RW_CZXID" ]; then
  fail "dlock's reader fence '$out' is not above the czxid $RW_CZXID of Curator's reader node"
fi
check_dlock_busy "Curator's read lock was held" read
start_holder dr read --shared
[ "$(status_field read 'd["mode"]')" = shared ] || fail "status beside two readers: $("${DL[@]}" status read --json)"
[ "$(status_field read 'len(d["holders"])')" = 2 ] ||
  fail "status does not list Curator's reader and dlock's: $("${DL[@]}" status read --json)"
end_holder dr "$HOLDER_PID" "dlock run --shared"
rw_release cr
no_nodes_left /dlock/read

# 3. dlock's reader held: Curator's read lock is granted beside it, its write
# lock is not (and its failed try leaves no node behind).
start_holder dh shared --shared
reader_fence=$(cat "$tmpdir/dh.fence")
children /dlock/shared >"$tmpdir/children"
read -r node czxid <"$tmpdir/children"
[[ $node =~ $READ_NODE_RE ]] || fail "dlock named its reader node '$node', expected /$READ_NODE_RE/"
[ "$czxid" = "czxid=$reader_fence" ] || fail "the reader's DLOCK_FENCE $reader_fence is not its node's $czxid"
capture "${RW[@]}" /dlock/shared read try 5000
[[ $rc = 0 && $out = acquired* ]] || fail "Curator's read lock beside dlock's reader: exit $rc, '$out'; stderr: $err"
capture "${RW[@]}" /dlock/shared write try 1000
[[ $rc = 75 && $out = busy ]] || fail "Curator's write lock beside dlock's reader: exit $rc, '$out' (expected 75, busy); stderr: $err"
[ "$(zk_child_count /dlock/shared)" = 2 ] || fail "Curator's tries left nodes behind: $(children /dlock/shared)"

# 4. A Curator writer waiting behind dlock's reader keeps new dlock readers
# out; the reader's release hands it the lock by the watch; a dlock reader
# that waits for it gets the lock once it lets go, with a fence above its.
rw_hold cw2 /dlock/shared write
wait_until -t 10 _has_children /dlock/shared 3 || fail "Curator's writer never queued; stderr: $(cat "$tmpdir/cw2.err")"
[ "$(lock_waiters shared)" = 1 ] || fail "status shows $(lock_waiters shared) waiters while Curator's writer waits, expected 1"
check_dlock_busy "Curator's writer waited (writer preference)" shared --shared
! grep -q '^acquired' "$tmpdir/cw2.out" || fail "Curator's writer got the lock beside dlock's reader"
end_holder dh "$HOLDER_PID" "dlock run --shared"
rw_wait_held cw2
check_handover "Curator's writer got the lock" "dlock's reader" "$RELEASED_MS" "$RW_HELD_MS"
[ "$RW_CZXID" -gt "$reader_fence" ] || fail "Curator's writer czxid $RW_CZXID is not above the reader's fence $reader_fence"
# shellcheck disable=SC2016 # expanded by the job's shell
"${DL[@]}" run --shared shared --wait 10s -- sh -c 'echo "$DLOCK_FENCE" >"$1"' sh "$tmpdir/waiter.fence" \
  </dev/null >"$tmpdir/waiter.out" 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until -t 10 has_waiter shared || fail "the waiting dlock reader is not counted as a waiter"
[ ! -e "$tmpdir/waiter.fence" ] || fail "a dlock reader ran beside Curator's write lock"
rw_release cw2
wait_exit "$waiter" 15
[ "$rc" = 0 ] || fail "the waiting dlock reader exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(cat "$tmpdir/waiter.fence")" -gt "$RW_CZXID" ] ||
  fail "the reader's fence $(cat "$tmpdir/waiter.fence") is not above Curator's writer czxid $RW_CZXID"
no_nodes_left /dlock/shared

# 5. dlock's exclusive lock held: Curator's read lock and its write lock are
# busy (their tries leave no node); a Curator reader waiting behind it is
# handed the lock by the watch once dlock's job ends.
start_holder dx exclusive
exclusive_fence=$(cat "$tmpdir/dx.fence")
capture "${RW[@]}" /dlock/exclusive read try 1000
[[ $rc = 75 && $out = busy ]] ||
  fail "Curator's read lock beside dlock's exclusive lock: exit $rc, '$out' (expected 75, busy); stderr: $err"
capture "${RW[@]}" /dlock/exclusive write try 1000
[[ $rc = 75 && $out = busy ]] ||
  fail "Curator's write lock beside dlock's exclusive lock: exit $rc, '$out' (expected 75, busy); stderr: $err"
[ "$(zk_child_count /dlock/exclusive)" = 2 ] || fail "Curator's tries left nodes behind: $(children /dlock/exclusive)"
rw_hold cr2 /dlock/exclusive read
wait_until -t 10 _has_children /dlock/exclusive 3 || fail "Curator's reader never queued; stderr: $(cat "$tmpdir/cr2.err")"
[ "$(lock_waiters exclusive)" = 1 ] || fail "status shows $(lock_waiters exclusive) waiters while Curator's reader waits, expected 1"
sleep 0.3
! grep -q '^acquired' "$tmpdir/cr2.out" || fail "Curator's reader got the lock beside dlock's exclusive lock"
end_holder dx "$HOLDER_PID" "dlock run"
rw_wait_held cr2
check_handover "Curator's reader got the lock" "dlock's job" "$RELEASED_MS" "$RW_HELD_MS"
[ "$RW_CZXID" -gt "$exclusive_fence" ] ||
  fail "Curator's reader czxid $RW_CZXID is not above dlock's fence $exclusive_fence"
rw_release cr2
no_nodes_left /dlock/exclusive
pass
