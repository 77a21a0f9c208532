#!/usr/bin/env bash
# A setgid group directory (2775, as used with flock(1)) shares locks
# between the members of its group on purpose: two members exclude each
# other, fences grow across them, and what dlock makes in it is the group's
# (namespace 2775, lock files 0660, the directory's group). Someone outside
# the group is refused. (0e9552c refused such a directory as 'writable by
# others'.)
SCENARIO="file: shared group directory"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/users_lib.sh"

make_group
group=$MADE
make_user "$group"
alice=$MADE
make_user "$group"
bob=$MADE
make_user
outsider=$MADE
shared=$tmpdir/shared
install -d -m 2775 -g "$group" "$shared"
GRP=("$DLOCK_BIN" -b "file://$shared")
work=$tmpdir/work # where the members' jobs keep their counter
mkdir -m 1777 "$work"

# alice holds x; bob is excluded until she is done.
mkfifo -m 0666 "$tmpdir/go"
as_user "$alice" "${GRP[@]}" run x -- sh -c "printf %s \"\$DLOCK_FENCE\" >'$work/alice'; read line <'$tmpdir/go'" &
holder=$!
track "$holder"
wait_until [ -s "$work/alice" ] || fail "alice's job did not start"
[ "$(stat -c '%a %G' "$shared/dlock")" = "2775 $group" ] ||
  fail "namespace directory: $(stat -c '%a %G' "$shared/dlock"), expected 2775 $group"
[ "$(stat -c '%a %G %U' "$shared/dlock/x.lock")" = "660 $group $alice" ] ||
  fail "lock file: $(stat -c '%a %G %U' "$shared/dlock/x.lock"), expected 660 $group $alice"
capture as_user "$bob" "${GRP[@]}" run x -- touch "$work/bob-ran"
[ "$rc" = 75 ] || fail "bob while alice holds x: exit $rc, expected 75; stderr: $err"
[ ! -e "$work/bob-ran" ] || fail "bob's job ran beside alice's"
capture as_user "$bob" "${GRP[@]}" status x
[ "$rc" = 0 ] && printf '%s' "$out" | grep -q "$alice" || fail "bob's status does not show alice's hold ($rc): $out $err"
echo finished >"$tmpdir/go"
wait_exit "$holder"
[ "$rc" = 0 ] || fail "alice's job ended with $rc"

# Both members and root contend for x: no overlap, no lost update, every
# fence greater than the one before.
printf 0 >"$work/counter"
chmod 0666 "$work/counter"
: >"$work/fences"
chmod 0666 "$work/fences"
job="if ! mkdir '$work/inside' 2>/dev/null; then echo overlap >>'$work/overlap'; fi
n=\$(cat '$work/counter'); echo \$((n + 1)) >'$work/counter'; echo \"\$DLOCK_FENCE\" >>'$work/fences'
rmdir '$work/inside'"
contend() {
  local i
  for i in 1 2 3 4 5 6 7 8; do
    "$@" "${GRP[@]}" run -w 30s x -- sh -c "$job" || echo "exit $?" >>"$work/failed"
  done
}
contend as_user "$alice" &
a=$!
contend as_user "$bob" &
b=$!
contend env &
c=$!
track "$a" "$b" "$c"
for pid in "$a" "$b" "$c"; do wait_exit "$pid" 120; done
[ ! -e "$work/failed" ] || fail "some runs failed: $(sort "$work/failed" | uniq -c | tr '\n' ' ')"
[ ! -e "$work/overlap" ] || fail "two members' jobs overlapped"
[ "$(cat "$work/counter")" = 24 ] || fail "counter is $(cat "$work/counter"), expected 24"
previous=$(cat "$work/alice")
while read -r fence; do
  [ "$fence" -gt "$previous" ] || fail "fence $fence after $previous: not increasing"
  previous=$fence
done <"$work/fences"

# Outside the group: no way in, and no job.
capture as_user "$outsider" "${GRP[@]}" run x -- touch "$work/outsider-ran"
[ "$rc" = 77 ] || fail "outsider: exit $rc, expected 77; stderr: $err"
assert_one_line_message "outsider" "$err"
[ ! -e "$work/outsider-ran" ] || fail "the outsider's job ran"

# A lock file a member made for flock(1) with touch (umask 022, so 0644):
# the others cannot write it (77) until its owner's dlock opens it up.
as_user "$alice" sh -c "umask 022; touch '$shared/dlock/flocked.lock'"
capture as_user "$bob" "${GRP[@]}" run flocked -- touch "$work/bob-ran"
[ "$rc" = 77 ] || fail "bob on alice's 0644 file: exit $rc, expected 77; stderr: $err"
[ ! -e "$work/bob-ran" ] || fail "bob's job ran without the lock"
capture as_user "$alice" "${GRP[@]}" run flocked -- true
[ "$rc" = 0 ] || fail "alice on her own 0644 file: exit $rc: $err"
[ "$(stat -c %a "$shared/dlock/flocked.lock")" = 660 ] ||
  fail "alice's file is $(stat -c %a "$shared/dlock/flocked.lock") after her run, expected 660"
capture as_user "$bob" "${GRP[@]}" run flocked -- true
[ "$rc" = 0 ] || fail "bob after alice opened the file up: exit $rc: $err"

# A group-writable directory without the setgid bit stays refused: its
# files would get each creator's own group.
mkdir -m 0775 "$tmpdir/plain"
chgrp "$group" "$tmpdir/plain"
capture "$DLOCK_BIN" -b "file://$tmpdir/plain" run x -- true
[ "$rc" = 78 ] || fail "group-writable directory without setgid: exit $rc, expected 78; stderr: $err"

pass
