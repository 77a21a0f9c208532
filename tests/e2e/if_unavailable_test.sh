#!/usr/bin/env bash
# --if-unavailable fail|run|skip: with nothing listening (and with a server
# that accepts but never answers), fail is 69 and runs nothing; run runs the
# job WITHOUT the lock (DLOCK_UNLOCKED=1, no fence, no token), exits with its
# status and says so even with -q; skip runs nothing, exits as busy (75, or
# -E) and says so even with -q. A bad value is a usage error. A backend lost
# while the job runs is not covered (the job is never started twice).
SCENARIO="--if-unavailable: fail, run without the lock, or skip"
. "$(dirname "$0")/lib.sh"

dead="redis://127.0.0.1:$(free_port)"
env_job='echo "unlocked=${DLOCK_UNLOCKED-} fence=${DLOCK_FENCE-unset} token=${DLOCK_TOKEN-unset} name=$DLOCK_NAME" >"$1"; exit 7'

capture "$DLOCK_BIN" -b "$dead" run -q --if-unavailable fail x -- sh -c 'touch "$1"' sh "$tmpdir/ran"
[ "$rc" = 69 ] || fail "--if-unavailable fail exited $rc, expected 69"
[ -e "$tmpdir/ran" ] && fail "--if-unavailable fail ran the job"
assert_one_line_message "fail" "$err"
capture "$DLOCK_BIN" -b "$dead" run -q x -- sh -c 'touch "$1"' sh "$tmpdir/ran"
[ "$rc" = 69 ] && [ ! -e "$tmpdir/ran" ] || fail "the default is not fail: exit $rc"

capture "$DLOCK_BIN" -b "$dead" run -q --if-unavailable run x -- sh -c "$env_job" sh "$tmpdir/env"
[ "$rc" = 7 ] || fail "--if-unavailable run exited $rc, expected the job's 7; stderr: $err"
[ "$(cat "$tmpdir/env")" = "unlocked=1 fence=unset token=unset name=x" ] ||
  fail "the unlocked job's environment: $(cat "$tmpdir/env")"
assert_one_line_message "run" "$err"
case $err in *WITHOUT*) ;; *) fail "--if-unavailable run -q did not say it runs without the lock: $err" ;; esac

capture "$DLOCK_BIN" -b "$dead" run -q --if-unavailable skip x -- sh -c 'touch "$1"' sh "$tmpdir/ran"
[ "$rc" = 75 ] || fail "--if-unavailable skip exited $rc, expected 75"
[ -e "$tmpdir/ran" ] && fail "--if-unavailable skip ran the job"
assert_one_line_message "skip" "$err"
case $err in *skip*) ;; *) fail "--if-unavailable skip -q said nothing: $err" ;; esac
capture "$DLOCK_BIN" -b "$dead" run -E 0 --if-unavailable skip x -- true
[ "$rc" = 0 ] || fail "--if-unavailable skip -E 0 exited $rc"

# A server that accepts and never answers: the same, once the round trip
# has timed out; and the unlocked job is supervised (--max-runtime).
start_silent_listener
silent="redis://127.0.0.1:$SILENT_PORT"
capture "$DLOCK_BIN" -b "$silent" --connect-timeout 300ms run --if-unavailable run --max-runtime 300ms x -- sleep 30
[ "$rc" = 124 ] || fail "an unlocked job past --max-runtime: exit $rc, expected 124; stderr: $err"
capture "$DLOCK_BIN" -b "$silent" --connect-timeout 300ms run --if-unavailable skip x -- true
[ "$rc" = 75 ] || fail "silent server, skip: exit $rc"

# A reachable backend: the option changes nothing; the lock is taken.
capture "${DL[@]}" run --if-unavailable run x -- sh -c "$env_job" sh "$tmpdir/env"
case $(cat "$tmpdir/env") in "unlocked= fence="[0-9]*) ;; *) fail "a locked run's environment: $(cat "$tmpdir/env")" ;; esac
# A busy lock is not unavailable.
start_holder h x
capture "${DL[@]}" run -q --if-unavailable run x -- sh -c 'touch "$1"' sh "$tmpdir/ran"
[ "$rc" = 75 ] && [ ! -e "$tmpdir/ran" ] || fail "a busy lock with --if-unavailable run: exit $rc"
release_holder h

for bad in maybe '' RUN; do
  capture "${DL[@]}" run --if-unavailable "$bad" x -- true
  [ "$rc" = 64 ] || fail "--if-unavailable '$bad' exited $rc, expected 64"
  assert_one_line_message "--if-unavailable '$bad'" "$err"
done
pass
