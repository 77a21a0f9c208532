#!/usr/bin/env bash
# The file: backend refuses lock directories others could tamper with, and
# lock files that are symlinks or hard links.
SCENARIO="unsafe directories"
. "$(dirname "$0")/lib.sh"

# expect_refused WHAT URL PATTERN: run through URL exits 78 with a one-line
# message matching PATTERN (an extended regex, case-insensitive).
expect_refused() {
  local what=$1 url=$2 pattern=$3
  capture "$DLOCK_BIN" -b "$url" run x -- touch "$tmpdir/ran"
  [ "$rc" = 78 ] || fail "$what: exit $rc, expected 78; stderr: $err"
  assert_one_line_message "$what" "$err"
  printf '%s' "$err" | grep -qiE "$pattern" || fail "$what: the message does not say '$pattern': $err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran anyway"
}

# A symlink to a directory.
mkdir "$tmpdir/real"
ln -s "$tmpdir/real" "$tmpdir/link"
expect_refused "symlinked lock directory" "file://$tmpdir/link" 'unsafe|symlink'
[ -z "$(ls -A "$tmpdir/real")" ] || fail "dlock created something through the symlink: $(ls -A "$tmpdir/real")"

# A symlinked namespace directory below a good base.
mkdir -p "$tmpdir/base2" "$tmpdir/elsewhere"
ln -s "$tmpdir/elsewhere" "$tmpdir/base2/dlock"
expect_refused "symlinked namespace directory" "file://$tmpdir/base2" 'unsafe|symlink'
[ -z "$(ls -A "$tmpdir/elsewhere")" ] || fail "dlock created something through the namespace symlink"

# World-writable without the sticky bit.
mkdir "$tmpdir/open"
chmod 0777 "$tmpdir/open"
expect_refused "directory with mode 0777" "file://$tmpdir/open" 'unsafe'
mkdir "$tmpdir/group"
chmod 0775 "$tmpdir/group"
expect_refused "group-writable directory" "file://$tmpdir/group" 'unsafe'
# A namespace directory with mode 0777 below a good base.
mkdir -p "$tmpdir/base3/dlock"
chmod 0777 "$tmpdir/base3/dlock"
expect_refused "namespace directory with mode 0777" "file://$tmpdir/base3" 'unsafe'

# A parent of the lock directory that others could rename things in.
mkdir -p "$tmpdir/openparent/locks"
chmod 0777 "$tmpdir/openparent"
expect_refused "parent directory with mode 0777" "file://$tmpdir/openparent/locks" 'unsafe'

# Positive control: the same mode with the sticky bit is fine.
mkdir "$tmpdir/sticky"
chmod 1777 "$tmpdir/sticky"
capture "$DLOCK_BIN" -b "file://$tmpdir/sticky" run x -- touch "$tmpdir/ran"
[ "$rc" = 0 ] || fail "a sticky 1777 directory was refused ($rc): $err"
rm -f "$tmpdir/ran"
# Its lock files are nobody else's to open (0600; 0644 before 2026-12, 0666 before that).
[ "$(stat -c %a "$tmpdir/sticky/dlock/x.lock")" = 600 ] ||
  fail "lock file in a sticky directory has mode $(stat -c %a "$tmpdir/sticky/dlock/x.lock"), expected 600"
# A lock file of ours that others can write (as 0e9552c made them there)
# holds a record nobody can trust: refused until it is removed.
chmod 0666 "$tmpdir/sticky/dlock/x.lock"
expect_refused "world-writable lock file" "file://$tmpdir/sticky" 'x\.lock is unsafe: writable by everyone'
chmod 0664 "$tmpdir/sticky/dlock/x.lock"
expect_refused "group-writable lock file outside a group directory" "file://$tmpdir/sticky" 'x\.lock is unsafe'
rm "$tmpdir/sticky/dlock/x.lock"
capture "$DLOCK_BIN" -b "file://$tmpdir/sticky" run x -- true
[ "$rc" = 0 ] || fail "a fresh lock file after removing the unsafe one was refused ($rc): $err"

# A lock file replaced by a symlink to another file.
capture "${DL[@]}" run s -- true
[ "$rc" = 0 ] || fail "first run of s failed: $err"
lockfile=$LOCKDIR/dlock/s.lock
[ -f "$lockfile" ] || fail "no lock file $lockfile after a run"
printf 'precious data\n' >"$tmpdir/target"
chmod 0644 "$tmpdir/target"
before=$(stat -c '%s %Y %a %i' "$tmpdir/target")
rm "$lockfile"
ln -s "$tmpdir/target" "$lockfile"
capture "${DL[@]}" run s -- touch "$tmpdir/ran"
[ "$rc" != 0 ] || fail "run through a symlinked lock file succeeded"
[ ! -e "$tmpdir/ran" ] || fail "run through a symlinked lock file ran its job"
assert_one_line_message "symlinked lock file" "$err"
capture "${DL[@]}" acquire s --ttl 2s
[ "$rc" != 0 ] || fail "acquire through a symlinked lock file succeeded"
capture "${DL[@]}" release s --force
capture "${DL[@]}" status s
capture "${DL[@]}" list
[ "$(cat "$tmpdir/target")" = "precious data" ] || fail "the symlink's target was changed: $(cat "$tmpdir/target")"
[ "$(stat -c '%s %Y %a %i' "$tmpdir/target")" = "$before" ] || fail "the symlink's target was touched"

# A lock file that is a hard link to another file.
rm -f "$lockfile"
ln "$tmpdir/target" "$lockfile"
capture "${DL[@]}" run s -- touch "$tmpdir/ran"
[ "$rc" != 0 ] || fail "run through a hard-linked lock file succeeded"
[ ! -e "$tmpdir/ran" ] || fail "run through a hard-linked lock file ran its job"
[ "$(cat "$tmpdir/target")" = "precious data" ] || fail "the hard link's target was changed: $(cat "$tmpdir/target")"

pass
