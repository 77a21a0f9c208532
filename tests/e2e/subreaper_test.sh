#!/usr/bin/env bash
# dlock is a child subreaper: it waits for the job's descendants before it
# releases the lock, and stops those that left the process group.
SCENARIO="subreaper"
. "$(dirname "$0")/lib.sh"

# A background subshell in the job's process group outlives the job's main
# process: dlock exits only after it, and holds the lock until then.
"${DL[@]}" run s -- sh -c 'echo $$ >"$1/main.pid"; (sleep 0.5; touch "$1/done") & exit 0' sh "$tmpdir" \
  </dev/null 2>"$tmpdir/s.err" &
dl=$!
track "$dl"
wait_until test -s "$tmpdir/main.pid" || fail "the job did not start"
main=$(cat "$tmpdir/main.pid")
wait_until is_gone "$main" || fail "the job's main process did not exit"
if [ ! -e "$tmpdir/done" ]; then
  is_alive "$dl" || fail "dlock exited while the job's background subshell still ran"
  is_held s || fail "lock s is not held while the job's background subshell still runs"
fi
wait_exit "$dl" 5
[ "$rc" = 0 ] || fail "dlock exited $rc, expected 0; stderr: $(cat "$tmpdir/s.err")"
[ -e "$tmpdir/done" ] || fail "dlock exited before the job's background subshell finished"
is_free s || fail "lock s still held after dlock exited"

# A grandchild in a new session (setsid) with --max-runtime: dlock stops it
# too, and only then exits.
started=$(now_ms)
"${DL[@]}" run s2 --max-runtime 500ms --kill-after 1s -- \
  sh -c 'setsid sh -c "echo \$\$ >\"\$1/gc.tmp\"; mv \"\$1/gc.tmp\" \"\$1/gc.pid\"; exec sleep 1000" sh "$1" &
wait; exit 0' sh "$tmpdir" </dev/null 2>"$tmpdir/s2.err" &
dl=$!
track "$dl"
wait_until test -s "$tmpdir/gc.pid" || fail "the setsid grandchild did not start"
gc=$(cat "$tmpdir/gc.pid")
track "$gc"
[ "$(ps -o sid= -p "$gc" | tr -d ' ')" = "$gc" ] || fail "test set-up: the grandchild is not in a session of its own"
wait_exit "$dl" 5
elapsed=$(($(now_ms) - started))
is_gone "$gc" || fail "dlock exited but the setsid grandchild $gc (state $(proc_state "$gc")) still runs"
[ "$rc" = 124 ] || fail "dlock exited $rc, expected 124 (--max-runtime); stderr: $(cat "$tmpdir/s2.err")"
[ "$elapsed" -ge 450 ] || fail "dlock exited after ${elapsed} ms, before --max-runtime"
is_free s2 || fail "lock s2 still held after dlock exited"

# The same, but the job's main process exits at once and leaves the setsid
# grandchild behind: dlock still waits for it (holding the lock) and stops it
# at --max-runtime (5 s, so that the looks below, a few process starts
# each, all come before it on a loaded machine).
rm -f "$tmpdir/gc.pid"
"${DL[@]}" run s3 --max-runtime 5s -- \
  sh -c 'setsid sh -c "echo \$\$ >\"\$1/gc.tmp\"; mv \"\$1/gc.tmp\" \"\$1/gc.pid\"; exec sleep 1000" sh "$1" &
echo $$ >"$1/main3.pid"; exit 0' sh "$tmpdir" </dev/null 2>"$tmpdir/s3.err" &
dl=$!
track "$dl"
wait_until test -s "$tmpdir/gc.pid" || fail "the setsid grandchild (s3) did not start"
gc=$(cat "$tmpdir/gc.pid")
track "$gc"
wait_until is_gone "$(cat "$tmpdir/main3.pid")" || fail "the s3 job's main process did not exit"
if is_alive "$gc"; then
  is_alive "$dl" || fail "dlock exited while the orphaned setsid grandchild still runs"
  is_held s3 || fail "lock s3 is not held while the orphaned setsid grandchild still runs"
fi
wait_exit "$dl" 15
is_gone "$gc" || fail "dlock exited but the orphaned setsid grandchild still runs"
[ "$rc" = 124 ] || fail "s3: dlock exited $rc, expected 124; stderr: $(cat "$tmpdir/s3.err")"

# Lock loss (release --force) stops a setsid grandchild too.
rm -f "$tmpdir/gc.pid"
"${DL[@]}" run s4 --ttl 1s --kill-after 200ms -- \
  sh -c 'setsid sh -c "echo \$\$ >\"\$1/gc.tmp\"; mv \"\$1/gc.tmp\" \"\$1/gc.pid\"; exec sleep 1000" sh "$1" &
wait' sh "$tmpdir" </dev/null 2>"$tmpdir/s4.err" &
dl=$!
track "$dl"
wait_until test -s "$tmpdir/gc.pid" || fail "the setsid grandchild (s4) did not start"
gc=$(cat "$tmpdir/gc.pid")
track "$gc"
capture "${DL[@]}" release s4 --force
[ "$rc" = 0 ] || fail "release s4 --force exited $rc: $err"
wait_exit "$dl" 5
[ "$rc" = 76 ] || fail "s4: dlock exited $rc after its lock was broken, expected 76; stderr: $(cat "$tmpdir/s4.err")"
is_gone "$gc" || fail "the setsid grandchild survived the loss of the lock"
pass
