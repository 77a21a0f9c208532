#!/usr/bin/env bash
# The file backend's shared locks and semaphores with flock(1) and by hand:
# `run --shared` is flock -s on the lock file and `run` flock -x, both ways;
# a name held one way refuses another (78); acquire, renew and release work
# per slot, and a taker waiting for a slot shows as a waiter; a killed
# holder's slot is free at once.
SCENARIO="file: shared locks and semaphores with flock(1), by hand and killed"
. "$(dirname "$0")/lib.sh"

lockfile=$LOCKDIR/dlock/f.lock
"${DL[@]}" run f -- true || fail "run f -- true failed"
[ -f "$lockfile" ] || fail "no lock file at $lockfile"

# flock -s beside dlock --shared; flock -x against it, both ways.
flock -s "$lockfile" "${DL[@]}" run --shared f -- true || fail "run --shared f did not run beside flock -s"
capture flock -s "$lockfile" "${DL[@]}" run f -- true
[ "$rc" = 75 ] || fail "run f (exclusive) beside flock -s exited $rc, expected 75"
capture flock -x "$lockfile" "${DL[@]}" run --shared f -- true
[ "$rc" = 75 ] || fail "run --shared f beside flock -x exited $rc, expected 75"
capture "${DL[@]}" run --shared f -- flock -n -x "$lockfile" true
[ "$rc" = 1 ] || fail "flock -n -x beside run --shared exited $rc, expected 1 (busy)"
"${DL[@]}" run --shared f -- flock -n -s "$lockfile" true || fail "flock -n -s beside run --shared was refused"

# By hand: two slots of --limit 2, a third busy; status names both slots;
# renew and release each; a wrong token is refused.
acquire_bg s --limit 2 --ttl 5s
t1=$token
acquire_bg s --limit 2 --ttl 5s
t2=$token
capture "${DL[@]}" acquire s --limit 2
[ "$rc" = 75 ] || fail "a third acquire of a semaphore of 2 exited $rc, expected 75"
slots=$("${DL[@]}" status s --json | json 'sorted(h["slot"] for h in d["holders"])')
[ "$slots" = "[0, 1]" ] || fail "status s shows slots $slots, expected [0, 1]"
[ "$("${DL[@]}" status s --json | json 'd["mode"] + " " + str(d["limit"])')" = "semaphore 2" ] ||
  fail "status s --json does not say semaphore, limit 2: $("${DL[@]}" status s --json)"
# A taker waiting for a slot is a waiter, not a holder (issue 34 point 10:
# it showed as a third holder of 2 slots, with no waiter).
"${DL[@]}" run --limit 2 s --wait 30s -- true >/dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter s || fail "a taker waiting for a slot of s is no waiter: $("${DL[@]}" status s --json)"
doc=$("${DL[@]}" status s --json)
[ "$(json 'len(d["holders"])' <<<"$doc")" = 2 ] || fail "with a waiter, status s shows other than its 2 holders: $doc"
[ "$(json "$waiter in [h['pid'] for h in d['holders']]" <<<"$doc")" = false ] || fail "status s shows the waiter $waiter as a holder: $doc"
capture "${DL[@]}" run s -- true
[ "$rc" = 78 ] || fail "an exclusive run on a semaphore of 2 exited $rc, expected 78"
assert_one_line_message "an exclusive run on a semaphore" "$err"
[[ $err == *"--limit 2"* ]] || fail "the refusal does not say how the name is held: $err"
capture "${DL[@]}" run --limit 3 s -- true
[ "$rc" = 78 ] || fail "--limit 3 on a semaphore of 2 exited $rc, expected 78"
"${DL[@]}" renew s "$t1" --ttl 5s || fail "renew of a slot failed"
wrong=${t1%?}0
[ "$wrong" != "$t1" ] || wrong=${t1%?}1
capture "${DL[@]}" release s "$wrong"
[ "$rc" = 3 ] || fail "release of a slot with a wrong token exited $rc, expected 3"
"${DL[@]}" release s "$t1" || fail "release of slot token 1 failed"
wait_exit "$waiter" 10
[ "$rc" = 0 ] || fail "the waiter for a slot exited $rc once one was free: $(cat "$tmpdir/waiter.err")"
"${DL[@]}" run --limit 2 s -- true || fail "a freed slot was not taken"
"${DL[@]}" release s "$t2" || fail "release of slot token 2 failed"
is_free s || fail "s is held after both slots were released"

# A slot file planted as a symlink (or another user's file) is refused as
# the lock file itself would be (78), never followed.
ln -s /etc/passwd "$LOCKDIR/dlock/p.slot0"
capture "${DL[@]}" run --limit 1 p -- true
[ "$rc" = 78 ] || fail "a symlinked slot file: run exited $rc, expected 78"
assert_one_line_message "a symlinked slot file" "$err"
[[ $err == *symlink* ]] || fail "the refusal does not say symlink: $err"

# A holder killed with its job: its slot is free at once, the other stays.
start_job k --limit 2
is_held k || fail "k is not held while its job runs"
kill -KILL "$JOB_PID" "$JOB_DLOCK_PID"
wait_exit "$JOB_WRAPPER" 5
wait_until -t 5 is_gone "$JOB_PID" || fail "the job survived kill -9"
capture "${DL[@]}" run --limit 2 k -- "${DL[@]}" run --limit 2 k -- true
[ "$rc" = 0 ] || fail "after kill -9 of a slot holder two holders could not get in: $rc $err"
is_free k || fail "k still held once every holder is gone"
pass
