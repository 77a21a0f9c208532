#!/usr/bin/env bash
# Another local user cannot break mutual exclusion between root's jobs in a
# shared sticky directory like /run/lock/dlock: a namespace directory or a
# lock file they made first is refused (78, naming its owner), and they can
# neither remove, rename nor rewrite a lock file root holds, so root's second
# job stays excluded. (0e9552c accepted the planted directory and file; the
# planter's mv of the held file let a second job run at once.)
SCENARIO="file: planted directories and lock files"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users_lib.sh"

make_user
attacker=$MADE
top=$tmpdir/top # plays /run/lock/dlock: root's, sticky, world-writable
mkdir -m 1777 "$top"
TOP=("$DLOCK_BIN" -b "file://$top")

# expect_refused WHAT PATTERN CMD...: exit 78, one line matching PATTERN, no job.
expect_refused() {
  local what=$1 pattern=$2
  shift 2
  rm -f "$tmpdir/ran"
  capture "$@"
  [ "$rc" = 78 ] || fail "$what: exit $rc, expected 78 (unsafe); stderr: $err"
  assert_one_line_message "$what" "$err"
  printf '%s' "$err" | grep -qE "$pattern" || fail "$what: the message does not match '$pattern': $err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran anyway"
}

# The attacker makes the namespace directory first, sticky and world-writable
# as dlock itself used to: as its owner they could remove any file in it.
as_user "$attacker" mkdir -m 1777 "$top/dlock" || fail "the attacker could not make $top/dlock"
expect_refused "namespace directory of another user" "$top/dlock.*owned by $attacker" \
  "${TOP[@]}" run x -- touch "$tmpdir/ran"
expect_refused "status in it" "owned by $attacker" "${TOP[@]}" status x
as_user "$attacker" mkdir -m 0755 "$top/other" || fail "the attacker could not make $top/other"
expect_refused "private namespace directory of another user" "owned by $attacker" \
  "${TOP[@]}" --namespace other run x -- touch "$tmpdir/ran"
rm -rf "$top/dlock" "$top/other"

# Root makes the namespace: sticky and world-writable, so that users keep
# their own locks in it, and root's lock files are root's alone (0600).
capture "${TOP[@]}" run first -- true
[ "$rc" = 0 ] || fail "root's first run failed ($rc): $err"
[ "$(stat -c '%U %a' "$top/dlock")" = "root 1777" ] ||
  fail "namespace directory made by root: $(stat -c '%U %a' "$top/dlock"), expected root 1777"
[ "$(stat -c '%U %a' "$top/dlock/first.lock")" = "root 600" ] ||
  fail "root's lock file: $(stat -c '%U %a' "$top/dlock/first.lock"), expected root 600"
# Nobody else may open it, so nobody else can flock it (issue 34 point 6:
# with 0644 a user's flock made root's "-q -E 0" cron job skip silently).
capture as_user "$attacker" flock -n "$top/dlock/first.lock" true
[ "$rc" != 0 ] || fail "the attacker could flock root's lock file"
# A file of root's from before (0644) is closed at root's next use of it.
chmod 0644 "$top/dlock/first.lock"
capture "${TOP[@]}" run first -- true
[ "$rc" = 0 ] || fail "root's run on its old 0644 lock file failed ($rc): $err"
[ "$(stat -c %a "$top/dlock/first.lock")" = 600 ] ||
  fail "root's old 0644 lock file is $(stat -c %a "$top/dlock/first.lock") after root's run, expected 600"
# Others still see who holds it (from the kernel's locks, without the
# record they may not read).
mkfifo "$tmpdir/first.go"
"${TOP[@]}" run first -- sh -c "read line <'$tmpdir/first.go'" &
first_holder=$!
track "$first_holder"
held_top() { "${TOP[@]}" status "$1" >/dev/null 2>&1; }
wait_until held_top first || fail "root's run of first does not hold it"
capture as_user "$attacker" "${TOP[@]}" status first --json
[ "$rc" = 0 ] || fail "the attacker's status of root's held lock exited $rc, expected 0; stderr: $err"
[ "$(json 'd["holder"]["pid"]' <<<"$out")" = "$first_holder" ] || fail "the attacker's status does not name root's holder $first_holder: $out"
echo go >"$tmpdir/first.go"
wait_exit "$first_holder" 10

# A lock file planted before root's first use of the name: refused whatever
# its mode, since its owner can remove it from the sticky directory.
for mode in 0644 0666; do
  as_user "$attacker" sh -c "printf '{\"fence\":1}\n' >'$top/dlock/x.lock' && chmod $mode '$top/dlock/x.lock'" ||
    fail "the attacker could not plant x.lock"
  expect_refused "planted lock file (mode $mode)" "x\.lock.*owned by $attacker" \
    "${TOP[@]}" run x -- touch "$tmpdir/ran"
  expect_refused "acquire on a planted lock file (mode $mode)" "owned by $attacker" "${TOP[@]}" acquire x --ttl 2s
  rm -f "$top/dlock/x.lock"
done
# A planted symlink or FIFO is no lock file either.
as_user "$attacker" ln -s "$tmpdir/target" "$top/dlock/x.lock"
capture "${TOP[@]}" run x -- touch "$tmpdir/ran"
[ "$rc" = 78 ] && [ ! -e "$tmpdir/ran" ] && [ ! -e "$tmpdir/target" ] || fail "planted symlink: exit $rc: $err"
rm -f "$top/dlock/x.lock"
as_user "$attacker" mkfifo "$top/dlock/x.lock"
capture timeout 10 "${TOP[@]}" run x -- touch "$tmpdir/ran"
[ "$rc" = 78 ] && [ ! -e "$tmpdir/ran" ] || fail "planted FIFO: exit $rc: $err"
rm -f "$top/dlock/x.lock"

# Root's job holds x. The attacker tries to remove, rename, replace and
# rewrite the held file; root's second job must still be excluded.
mkfifo "$tmpdir/go"
"${TOP[@]}" run x -- sh -c "touch '$tmpdir/held'; read line <'$tmpdir/go'" &
holder=$!
track "$holder"
wait_until [ -e "$tmpdir/held" ] || fail "root's first job did not start"
before=$(cat "$top/dlock/x.lock")
as_user "$attacker" mv "$top/dlock/x.lock" "$top/dlock/moved" 2>/dev/null &&
  fail "the attacker renamed root's held lock file"
as_user "$attacker" rm -f "$top/dlock/x.lock" 2>/dev/null
[ -e "$top/dlock/x.lock" ] || fail "the attacker removed root's held lock file"
as_user "$attacker" sh -c "printf garbage >'$top/dlock/x.lock'" 2>/dev/null &&
  fail "the attacker rewrote root's held lock file"
as_user "$attacker" sh -c "printf '{\"fence\":1}\n' >'$top/dlock/.x'; mv -f '$top/dlock/.x' '$top/dlock/x.lock'" 2>/dev/null &&
  fail "the attacker replaced root's held lock file"
[ "$(cat "$top/dlock/x.lock")" = "$before" ] || fail "root's held lock file changed"
capture "${TOP[@]}" run x -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "root's second job: exit $rc, expected 75 (busy) while the first holds x; stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "root's second job ran beside the first"
echo finished >"$tmpdir/go"
wait_exit "$holder"
[ "$rc" = 0 ] || fail "root's first job ended with $rc"

# The attacker's own names in root's namespace stay theirs, and root's
# exclusion from them is a clear refusal, not a second lock elsewhere.
capture as_user "$attacker" "${TOP[@]}" run mine -- true
[ "$rc" = 0 ] || fail "a user could not keep a lock of their own in root's namespace ($rc): $err"
expect_refused "root on another user's lock file" "mine\.lock.*owned by $attacker" \
  "${TOP[@]}" run mine -- touch "$tmpdir/ran"
capture as_user "$attacker" "${TOP[@]}" run x -- touch "$tmpdir/ran"
[ "$rc" = 77 ] || fail "a user on root's lock file: exit $rc, expected 77; stderr: $err"
assert_one_line_message "a user on root's lock file" "$err"
[ ! -e "$tmpdir/ran" ] || fail "a user's job ran on root's lock file without holding it"

pass
