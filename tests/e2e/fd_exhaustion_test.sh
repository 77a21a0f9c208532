#!/usr/bin/env bash
# Out of file descriptors: under `ulimit -n 3` to 14, run, acquire and status
# on the file backend either work or fail closed: a documented exit code
# (never a crash, 128+N from dlock itself), at most one "dlock: " line, no
# job without the lock (the job's side effect shows only when dlock exits
# with the job's status) and no lock left behind.
SCENARIO="out of file descriptors"
. "$(dirname "$0")/lib.sh"

# 7 is the job's own status below; 126/127 may come from the dynamic loader
# when ld.so itself finds no descriptor to open a library with.
documented=" 0 3 7 64 69 70 75 76 77 78 126 127 "

# check_result WHAT LIMIT: rc and the stderr in $tmpdir/err follow the rules.
check_result() {
  local what=$1 limit=$2 messages
  case $documented in *" $rc "*) ;; *) fail "$what under ulimit -n $limit exited $rc: not a documented code; stderr: $(cat "$tmpdir/err")" ;; esac
  messages=$(grep -c '^dlock: ' "$tmpdir/err")
  [ "$messages" -le 1 ] || fail "$what under ulimit -n $limit printed $messages 'dlock: ' lines: $(cat "$tmpdir/err")"
  if grep -qE 'terminate called|what\(\)|Aborted|core dumped|must be installed for unwinding' "$tmpdir/err"; then
    fail "$what under ulimit -n $limit crashed: $(cat "$tmpdir/err")"
  fi
  # The rule for dlock's own resources is 70; say where it is not kept.
  if grep -qiE 'too many open files|out of file descriptors' "$tmpdir/err" && [ "$rc" != 70 ]; then
    echo "note: $what under ulimit -n $limit: exit $rc, expected 70 for: $(grep '^dlock: ' "$tmpdir/err")"
  fi
  return 0
}

ran=0
for limit in 3 4 5 6 7 8 9 10 11 12 13 14; do
  marker=$tmpdir/ran.$limit
  # shellcheck disable=SC2016 # expanded by the job's shell
  (ulimit -n "$limit" && exec "${DL[@]}" run "r$limit" -- sh -c 'mkdir "$1"; exit 7' sh "$marker") \
    </dev/null >"$tmpdir/out" 2>"$tmpdir/err"
  rc=$?
  check_result "run" "$limit"
  if [ -d "$marker" ]; then
    [ "$rc" = 7 ] || fail "run under ulimit -n $limit: the job ran but dlock exited $rc, not the job's 7; stderr: $(cat "$tmpdir/err")"
    ran=$((ran + 1))
  fi
  is_free "r$limit" || fail "run under ulimit -n $limit (exit $rc) left lock r$limit held"

  (ulimit -n "$limit" && exec "${DL[@]}" acquire "a$limit" --ttl 30s) </dev/null >"$tmpdir/out" 2>"$tmpdir/err"
  rc=$?
  check_result "acquire" "$limit"
  if [ "$rc" = 0 ]; then
    token=$(cat "$tmpdir/out")
    [ -n "$token" ] || fail "acquire under ulimit -n $limit exited 0 without a token"
    capture "${DL[@]}" release "a$limit" "$token"
    [ "$rc" = 0 ] || fail "release of the lock acquire took under ulimit -n $limit exited $rc: $err"
  else
    is_free "a$limit" || fail "acquire under ulimit -n $limit failed (exit $rc) but left lock a$limit held"
  fi

  (ulimit -n "$limit" && exec "${DL[@]}" status "r$limit") </dev/null >"$tmpdir/out" 2>"$tmpdir/err"
  rc=$?
  check_result "status" "$limit"
done

# With enough descriptors it works (the loop above is not vacuous).
# shellcheck disable=SC2016 # expanded by the job's shell
(ulimit -n 32 && exec "${DL[@]}" run big -- sh -c 'mkdir "$1"; exit 7' sh "$tmpdir/ran.big") </dev/null 2>"$tmpdir/err"
rc=$?
if [ "$rc" != 7 ] || [ ! -d "$tmpdir/ran.big" ]; then
  fail "run under ulimit -n 32 exited $rc; stderr: $(cat "$tmpdir/err")"
fi
echo "the job ran under $ran of 12 limits"
pass
