#!/usr/bin/env bash
# The default lock directory (file: with no DIR): /run/lock/dlock whenever
# /run/lock exists, for root and every user alike; where it cannot be used,
# one dlock: line says why, with the directory's owner and mode, instead of a
# silent fall back to a directory of the user's own, where root's jobs and
# the user's would no longer exclude each other. Only without /run/lock do
# locks go to /tmp/dlock-$UID. Runs in a private mount namespace with its
# own /run/lock, so the host's is never touched. (0e9552c sent a user who
# could not write /run/lock to $XDG_RUNTIME_DIR/dlock or /tmp/dlock-$UID
# without a word, and took an attacker's /run/lock/dlock/dlock.)
SCENARIO="file: default lock directory"
if [ -z "${DLOCK_E2E_MOUNT_NS:-}" ]; then
  [ "$(id -u)" = 0 ] || {
    echo "FAIL $SCENARIO: needs root, for a private mount namespace and throw-away users"
    exit 1
  }
  exec env DLOCK_E2E_MOUNT_NS=1 unshare --mount --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users_lib.sh"
unset DLOCK_BACKEND # the default directory is what is tested here
marks=$tmpdir/marks # where any user's job could leave its mark
mkdir -m 1777 "$marks"

make_user
user=$MADE
make_user
attacker=$MADE
user_uid=$(id -u "$user")
fallback=/tmp/dlock-$user_uid
rm -rf "$fallback"
_default_cleanup() { rm -rf "$fallback"; }
trap '_cleanup; _users_cleanup; _default_cleanup' EXIT

# fresh_run_lock MODE: a new, empty /run/lock with MODE, root's.
fresh_run_lock() {
  mountpoint -q /run/lock && umount /run/lock
  mkdir -p /run/lock
  mount -t tmpfs -o "mode=$1,size=1m" dlock-test /run/lock || fail "cannot mount a tmpfs on /run/lock"
}

# expect_error WHAT CODE PATTERN CMD...: exit CODE, one line matching PATTERN, no job.
expect_error() {
  local what=$1 code=$2 pattern=$3
  shift 3
  rm -f "$marks/ran"
  capture "$@"
  [ "$rc" = "$code" ] || fail "$what: exit $rc, expected $code; stderr: $err"
  assert_one_line_message "$what" "$err"
  printf '%s' "$err" | grep -qE "$pattern" || fail "$what: the message does not match '$pattern': $err"
  [ ! -e "$marks/ran" ] || fail "$what: the job ran anyway"
}

# /run/lock only root may write (as on Fedora): the user is told, and does
# not go elsewhere.
fresh_run_lock 0755
expect_error "user, /run/lock 0755" 77 "/run/lock/dlock.*/run/lock \(owned by root.*mode 0755\)" \
  as_user "$user" "$DLOCK_BIN" run x -- touch "$marks/ran"
[ ! -e "$fallback" ] || fail "the user fell back to $fallback"
# Root makes /run/lock/dlock sticky and world-writable: the user then keeps
# their own locks in it, and is refused (not split off) on root's.
capture "$DLOCK_BIN" run x -- true
[ "$rc" = 0 ] || fail "root, /run/lock 0755: exit $rc: $err"
[ "$(stat -c '%U %a' /run/lock/dlock /run/lock/dlock/dlock | tr '\n' ' ')" = "root 1777 root 1777 " ] ||
  fail "root made $(stat -c '%n %U %a' /run/lock/dlock /run/lock/dlock/dlock | tr '\n' ' ')"
capture as_user "$user" "$DLOCK_BIN" run y -- true
[ "$rc" = 0 ] || fail "user, own name in root's /run/lock/dlock: exit $rc: $err"
[ "$(stat -c %U /run/lock/dlock/dlock/y.lock)" = "$user" ] || fail "the user's lock file is not in /run/lock/dlock/dlock"
expect_error "user on root's lock" 77 "/run/lock/dlock/dlock/x\.lock.*owned by root" \
  as_user "$user" "$DLOCK_BIN" run x -- touch "$marks/ran"
[ ! -e "$fallback" ] || fail "the user fell back to $fallback"

# /run/lock/dlock exists but is root's alone: named with owner and mode.
fresh_run_lock 1777
mkdir -m 0755 /run/lock/dlock
expect_error "user, /run/lock/dlock 0755" 77 "/run/lock/dlock \(owned by root.*mode 0755\)" \
  as_user "$user" "$DLOCK_BIN" run x -- touch "$marks/ran"
[ ! -e "$fallback" ] || fail "the user fell back to $fallback"

# Another user made /run/lock/dlock, or its namespace, first: refused, 78,
# naming them; never used, never replaced by another directory.
fresh_run_lock 1777
as_user "$attacker" mkdir -m 1777 /run/lock/dlock
expect_error "root, another user's /run/lock/dlock" 78 "/run/lock/dlock .*owned by $attacker" \
  "$DLOCK_BIN" run x -- touch "$marks/ran"
fresh_run_lock 1777
capture "$DLOCK_BIN" --namespace first run x -- true
[ "$rc" = 0 ] || fail "root, fresh /run/lock: exit $rc: $err"
as_user "$attacker" mkdir -m 1777 /run/lock/dlock/dlock
expect_error "root, another user's namespace directory" 78 "/run/lock/dlock/dlock .*owned by $attacker" \
  "$DLOCK_BIN" run x -- touch "$marks/ran"
expect_error "a third user, that namespace directory" 78 "owned by $attacker" \
  as_user "$user" "$DLOCK_BIN" run x -- touch "$marks/ran"

# A user who is first makes /run/lock/dlock their own (0700): root is then
# told whose it is rather than sent elsewhere.
fresh_run_lock 1777
capture as_user "$user" "$DLOCK_BIN" run x -- true
[ "$rc" = 0 ] || fail "user first in /run/lock: exit $rc: $err"
[ "$(stat -c '%U %a' /run/lock/dlock)" = "$user 700" ] ||
  fail "the user made /run/lock/dlock $(stat -c '%U %a' /run/lock/dlock), expected $user 700"
expect_error "root after a user made /run/lock/dlock" 78 "/run/lock/dlock .*owned by $user" \
  "$DLOCK_BIN" run x -- touch "$marks/ran"

# No /run/lock at all: nobody can share it, so each uid has its own
# directory, the same whatever the environment says.
umount /run/lock
mount -t tmpfs -o mode=0755,size=1m dlock-test /run || fail "cannot mount a tmpfs on /run"
capture as_user "$user" env XDG_RUNTIME_DIR="$tmpdir" "$DLOCK_BIN" run x -- true
[ "$rc" = 0 ] || fail "user without /run/lock: exit $rc: $err"
[ "$(stat -c '%U %a' "$fallback")" = "$user 700" ] && [ -e "$fallback/dlock/x.lock" ] ||
  fail "without /run/lock the user's lock is not in $fallback"
capture as_user "$user" env -u XDG_RUNTIME_DIR "$DLOCK_BIN" status x
[ "$rc" = 3 ] && printf '%s' "$out" | grep -q "state: *free" || fail "status without XDG_RUNTIME_DIR: exit $rc: $out $err"

pass
