#!/usr/bin/env bash
# dlock doctor on the file backend: a private directory on a local file
# system is all ok; a lock directory owned by another user (nobody) or
# writable by everyone without the sticky bit is unsafe (file.settings,
# exit 78) with what to change, and so is one on a FUSE mount (bindfs, as
# a network file system would be: file.filesystem). The tests run as root:
# chown and the mount need it.
SCENARIO="doctor: file lock directories owned by another user or open to everyone"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/doctor_lib.sh"
[ "$(id -u)" = 0 ] || fail "this test chowns a directory to nobody: run it as root"

mkdir -m 0700 "$tmpdir/good"
DL=("$DLOCK_BIN" -b "file://$tmpdir/good")
doctor
expect_all_ok
expect_check file.lock-directory ok "private directory"
expect_check file.filesystem ok "local file system"

mkdir -m 0755 "$tmpdir/theirs"
chown nobody "$tmpdir/theirs"
DL=("$DLOCK_BIN" -b "file://$tmpdir/theirs")
doctor
expect_rc 78 "a directory owned by nobody"
expect_check file.settings unsafe "owned by nobody"
expect_text_line file.settings unsafe

mkdir "$tmpdir/open"
chmod 0777 "$tmpdir/open"
DL=("$DLOCK_BIN" -b "file://$tmpdir/open")
doctor
expect_rc 78 "a world-writable directory without the sticky bit"
expect_check file.settings unsafe "without the sticky bit"
printf '%s' "$out" | json '[c["fix"] for c in d["checks"]][0]' | grep -q 'chmod' ||
  fail "the fix for a world-writable directory does not say chmod: $out"

# Sticky, as /tmp: the backend's own rules let it be shared.
chmod 1777 "$tmpdir/open"
doctor
expect_all_ok
expect_check file.lock-directory ok "sticky"

# A FUSE file system (bindfs mirrors a local directory): flock(2) there is
# whatever the FUSE server makes of it.
command -v bindfs >/dev/null || fail "bindfs is not installed (scripts/install-deps installs it)"
mkdir -m 0700 "$tmpdir/under" "$tmpdir/fuse"
bindfs "$tmpdir/under" "$tmpdir/fuse" || fail "bindfs could not mount $tmpdir/fuse (no /dev/fuse?)"
at_cleanup fusermount -u "$tmpdir/fuse"
chmod 0700 "$tmpdir/fuse"
DL=("$DLOCK_BIN" -b "file://$tmpdir/fuse")
doctor
expect_rc 78 "a lock directory on FUSE"
expect_check file.filesystem unsafe "on FUSE"
expect_text_line file.filesystem unsafe
printf '%s' "$out" | json '[c["fix"] for c in d["checks"] if c["id"] == "file.filesystem"][0]' |
  grep -q 'local file system' || fail "the fix for a FUSE lock directory does not say to use a local file system: $out"
fusermount -u "$tmpdir/fuse"
pass
