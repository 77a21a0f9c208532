#!/usr/bin/env bash
# The file backend's resource and storage failures fail closed with the
# documented codes and one dlock: line: the lock directory full (ENOSPC) or
# failing (EIO) is 69, dlock out of descriptors (EMFILE) is 70 and says to
# raise ulimit -n; the job never runs without the lock. Runs in a private
# mount namespace for its small tmpfs mounts. (0e9552c reported ENOSPC and
# EMFILE on the lock directory as configuration errors, 78, and ran the job
# after a failed fdatasync of a fence that only the file kept.) A full or
# failing directory answered: --if-unavailable run never runs the job
# without the lock there.
SCENARIO="file: storage and descriptor exhaustion"
if [ -z "${DLOCK_E2E_MOUNT_NS:-}" ]; then
  [ "$(id -u)" = 0 ] || {
    echo "FAIL $SCENARIO: needs root, for a private mount namespace and tmpfs mounts"
    exit 1
  }
  exec env DLOCK_E2E_MOUNT_NS=1 unshare --mount --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || fail "strace is not installed (it injects the I/O errors)"

# expect_code WHAT CODE PATTERN CMD...: exit CODE, one line matching PATTERN, no job.
expect_code() {
  local what=$1 code=$2 pattern=$3
  shift 3
  rm -f "$tmpdir/ran"
  capture "$@"
  [ "$rc" = "$code" ] || fail "$what: exit $rc, expected $code; stderr: $err"
  assert_one_line_message "$what" "$err"
  printf '%s' "$err" | grep -qiE "$pattern" || fail "$what: the message does not match '$pattern': $err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran without the lock"
}

# ENOSPC making the namespace directory: a tmpfs with no inode left for it.
mkdir "$tmpdir/noinodes"
mount -t tmpfs -o size=64k,nr_inodes=2 dlock-test "$tmpdir/noinodes" || fail "cannot mount a tmpfs"
expect_code "no inode for the namespace directory" 69 "$tmpdir/noinodes/l/dlock.*no space left" \
  "$DLOCK_BIN" -b "file://$tmpdir/noinodes/l" run x -- touch "$tmpdir/ran"
expect_code "no inode for the namespace directory, --if-unavailable run" 69 "no space left.*does not apply" \
  "$DLOCK_BIN" -b "file://$tmpdir/noinodes/l" run --if-unavailable run x -- touch "$tmpdir/ran"
umount "$tmpdir/noinodes"

# ENOSPC writing the record: a tmpfs whose blocks are all taken.
mkdir "$tmpdir/full"
mount -t tmpfs -o size=16k dlock-test "$tmpdir/full" || fail "cannot mount a tmpfs"
mkdir -p "$tmpdir/full/l/dlock"
chmod 0700 "$tmpdir/full" "$tmpdir/full/l" "$tmpdir/full/l/dlock"
dd if=/dev/zero of="$tmpdir/full/filler" bs=4k count=64 2>/dev/null
expect_code "full lock directory" 69 "x\.lock.*no space left" \
  "$DLOCK_BIN" -b "file://$tmpdir/full/l" run x -- touch "$tmpdir/ran"
expect_code "full lock directory, acquire" 69 "no space left" "$DLOCK_BIN" -b "file://$tmpdir/full/l" acquire x
# A full directory is not out of reach (issue 34 point 3: any user can fill
# /run/lock, and --if-unavailable run then ran root's jobs unlocked, two at
# once): --if-unavailable run does not apply; skip, which runs nothing, does.
expect_code "full lock directory, --if-unavailable run" 69 "no space left.*does not apply" \
  "$DLOCK_BIN" -b "file://$tmpdir/full/l" run --if-unavailable run x -- touch "$tmpdir/ran"
expect_code "full lock directory, --if-unavailable skip" 75 "no space left.*skip" \
  "$DLOCK_BIN" -b "file://$tmpdir/full/l" run --if-unavailable skip x -- touch "$tmpdir/ran"
umount "$tmpdir/full"

# EIO from the disk. A counter ahead of the clock must be synced before its
# fence is handed out: if fdatasync fails, no lock.
capture "${DL[@]}" run x -- true
[ "$rc" = 0 ] || fail "first run failed ($rc): $err"
printf '{"fence":9000000000000000000}\n' >"$LOCKDIR/dlock/x.lock"
expect_code "fdatasync fails with EIO" 69 "x\.lock.*input/output error" \
  strace -f -qq -o /dev/null -P "$LOCKDIR/dlock/x.lock" -e trace=fdatasync -e inject=fdatasync:error=EIO \
  "${DL[@]}" run x -- touch "$tmpdir/ran"
expect_code "write fails with EIO" 69 "x\.lock.*input/output error" \
  strace -f -qq -o /dev/null -P "$LOCKDIR/dlock/x.lock" -e trace=pwrite64 -e inject=pwrite64:error=EIO \
  "${DL[@]}" run x -- touch "$tmpdir/ran"
expect_code "read fails with EIO" 69 "x\.lock.*input/output error" \
  strace -f -qq -o /dev/null -P "$LOCKDIR/dlock/x.lock" -e trace=pread64 -e inject=pread64:error=EIO \
  "${DL[@]}" run x -- touch "$tmpdir/ran"
capture "${DL[@]}" run x -- sh -c 'printf %s "$DLOCK_FENCE"'
[ "$rc" = 0 ] && [ "$out" -gt 9000000000000000000 ] || fail "run after the I/O errors: exit $rc, fence '$out': $err"

# EMFILE: dlock itself out of descriptors, at every limit where the file
# backend is what runs out. Never a configuration or backend error.
saw_ulimit=0
try_limit() {
  local limit=$1
  shift
  rm -f "$tmpdir/ran"
  # Descriptors this shell inherited (from ctest, say) are closed first, so
  # that the limit means the same everywhere.
  capture bash -c 'for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
    ulimit -n "$0"; exec "$@"' "$limit" "$@"
  case $rc in
  0 | 3) ;;
  70)
    assert_one_line_message "ulimit -n $limit: $*" "$err"
    case $err in *"ulimit -n"*) saw_ulimit=1 ;; esac
    [ ! -e "$tmpdir/ran" ] || fail "ulimit -n $limit: $*: the job ran after dlock failed"
    ;;
  *) fail "ulimit -n $limit: $*: exit $rc, expected 0, 3 or 70; stderr: $err" ;;
  esac
}
for limit in 4 5 6; do try_limit "$limit" "${DL[@]}" status y; done
for limit in 9 10 11 12; do
  try_limit "$limit" "${DL[@]}" acquire y --ttl 2s
  [ "$rc" = 0 ] && "${DL[@]}" release y --force >/dev/null 2>&1
done
[ "$saw_ulimit" = 1 ] || fail "no failure under a small ulimit -n said to raise it"

pass
