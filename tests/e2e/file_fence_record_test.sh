#!/usr/bin/env bash
# The fence record of a lock file: another local user cannot rewrite it, and
# a record that cannot be trusted (garbage, a fence that would overflow, not
# a 64-bit decimal) is an error naming the file, never a silent reset or wrap
# that could hand out a fence again. (0e9552c kept lock files in a sticky
# directory 0666, read garbage as fence 0 and wrapped 2^64-1 to 0: with the
# counter ahead of the clock both moved the fence backwards.)
SCENARIO="file: untrusted fence records"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users_lib.sh"

make_user
attacker=$MADE
top=$tmpdir/top # plays /run/lock/dlock
mkdir -m 1777 "$top"
TOP=("$DLOCK_BIN" -b "file://$top")
file=$top/dlock/x.lock

# fence_of_run: runs x once and prints the fence its job saw.
fence_of_run() {
  "${TOP[@]}" run x -- sh -c 'printf %s "$DLOCK_FENCE"'
}

capture fence_of_run
[ "$rc" = 0 ] || fail "first run failed ($rc): $err"
# A counter ahead of the clock (the clock was set back since): the one case
# where the stored counter alone keeps fences growing.
ahead=9000000000000000000
printf '{"fence":%s}\n' "$ahead" >"$file"
capture fence_of_run
[ "$rc" = 0 ] && [ "$out" = $((ahead + 1)) ] || fail "run after the counter moved ahead: exit $rc, fence '$out': $err"
last=$out

# The file is root's and writable by nobody else: the attacker cannot write.
[ "$(stat -c '%U %a' "$file")" = "root 600" ] || fail "lock file mode: $(stat -c '%U %a' "$file"), expected root 600"
for text in garbage '{"fence":18446744073709551615}' '{"fence":0}'; do
  as_user "$attacker" sh -c "printf '%s\n' '$text' >'$file'" 2>/dev/null &&
    fail "another user could write '$text' into root's lock file"
done
capture fence_of_run
[ "$rc" = 0 ] && [ "$out" -gt "$last" ] 2>/dev/null || fail "fence after the attacker's tries: '$out' (exit $rc), last $last: $err"
last=$out

# Records dlock cannot trust, written by root (another program, a bad
# restore): each is a 78 naming the file, the job does not run, the record
# is left as it is for the admin to look at.
for text in garbage '' '{"fence":18446744073709551615}' '{"fence":18446744073709551616}' '{"fence":-1}' \
  '{"fence":1.5}' '{"fence":"7"}' '{}' '{"fence":7} {"fence":8}'; do
  [ -z "$text" ] && text='{"fence":7,"pid":"one"}'
  printf '%s\n' "$text" >"$file"
  rm -f "$tmpdir/ran"
  capture "${TOP[@]}" run x -- touch "$tmpdir/ran"
  [ "$rc" = 78 ] || fail "record '$text': exit $rc, expected 78; stderr: $err"
  assert_one_line_message "record '$text'" "$err"
  case $err in *"$file"*) ;; *) fail "record '$text': the message does not name $file: $err" ;; esac
  [ ! -e "$tmpdir/ran" ] || fail "record '$text': the job ran"
  [ "$(cat "$file")" = "$text" ] || fail "record '$text' was overwritten: $(cat "$file")"
  capture "${TOP[@]}" acquire x --ttl 2s
  [ "$rc" = 78 ] || fail "acquire on record '$text': exit $rc, expected 78; stderr: $err"
  capture "${TOP[@]}" status x
  if [ "$text" = '{"fence":18446744073709551615}' ]; then
    # A valid record, only full: status shows it.
    [ "$rc" = 3 ] || fail "status on the full counter: exit $rc, expected 3; stderr: $err"
  else
    [ "$rc" = 78 ] || fail "status on record '$text': exit $rc, expected 78; stderr: $err"
  fi
done

# The largest fence but one is handed out once, then the counter is full.
printf '{"fence":18446744073709551614}\n' >"$file"
capture fence_of_run
[ "$rc" = 0 ] && [ "$out" = 18446744073709551615 ] || fail "fence after 2^64-2: '$out' (exit $rc): $err"
capture fence_of_run
[ "$rc" = 78 ] || fail "run after fence 2^64-1: exit $rc, expected 78 (no fence left); stderr: $err"
assert_one_line_message "fence 2^64-1" "$err"

# A good record again: fences go on from it.
printf '{"fence":%s}\n' "$last" >"$file"
capture fence_of_run
[ "$rc" = 0 ] && [ "$out" = $((last + 1)) ] || fail "fence after the record was restored: '$out' (exit $rc), last $last: $err"

pass
