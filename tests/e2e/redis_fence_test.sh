#!/usr/bin/env bash
# DLOCK_FENCE grows strictly from run to run on one name, also across a
# FLUSHALL and across a restart of a server without persistence (both lose
# the fence counter): the fence is combined with the server's clock.
SCENARIO="redis fences survive FLUSHALL and a restart"
. "$(dirname "$0")/lib.sh"
use_redis

fences=()
# fence_run WHAT: one run of lock f; appends the job's DLOCK_FENCE to fences.
fence_run() {
  capture "${DL[@]}" run f -- sh -c 'echo "$DLOCK_FENCE"'
  [ "$rc" = 0 ] || fail "$1: run exited $rc; stderr: $err"
  [[ $out =~ ^[1-9][0-9]{0,19}$ ]] || fail "$1: DLOCK_FENCE is '$out', not a positive decimal"
  python3 -c 'import sys; sys.exit(0 if int(sys.argv[1]) < 2**64 else 1)' "$out" || fail "$1: fence $out is not a 64-bit number"
  if ((${#fences[@]})); then
    local previous=${fences[-1]}
    python3 -c 'import sys; sys.exit(0 if int(sys.argv[2]) > int(sys.argv[1]) else 1)' "$previous" "$out" ||
      fail "$1: fence $out is not greater than the previous one, $previous (all so far: ${fences[*]})"
  fi
  fences+=("$out")
}

fence_run "first run"
fence_run "second run"
[ "$("$RCLI" EXISTS "$(redis_key f fence)")" = 1 ] || fail "no fence counter $(redis_key f fence) on the server"
# The fence in status and acquire --json is the one the job sees.
capture "${DL[@]}" acquire f --ttl 30s --json
[ "$rc" = 0 ] || fail "acquire f --json exited $rc; stderr: $err"
acquired=$(printf '%s' "$out" | json 'd["fence"]')
token=$(printf '%s' "$out" | json 'd["token"]')
[ "$("${DL[@]}" status f --json | json 'd["fence"]')" = "$acquired" ] || fail "status f shows another fence than acquire --json printed ($acquired)"
python3 -c 'import sys; sys.exit(0 if int(sys.argv[2]) > int(sys.argv[1]) else 1)' "${fences[-1]}" "$acquired" ||
  fail "acquire's fence $acquired is not greater than the last run's, ${fences[-1]}"
fences+=("$acquired")
"${DL[@]}" release f "$token" || fail "release f failed"

"$RCLI" FLUSHALL >/dev/null
[ "$("$RCLI" DBSIZE)" = 0 ] || fail "FLUSHALL left keys behind"
fence_run "first run after FLUSHALL"
fence_run "second run after FLUSHALL"

"$DLOCK_TEST_REDIS_RESTART" || fail "the server could not be restarted"
[ "$("$RCLI" DBSIZE)" = 0 ] || fail "the restarted server kept its data: the test would prove nothing"
fence_run "first run after a restart without data"
fence_run "second run after a restart without data"

# Names have their own fences, and a new name starts above what was handed out.
capture "${DL[@]}" run g -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run g exited $rc; stderr: $err"
python3 -c 'import sys; sys.exit(0 if int(sys.argv[2]) > int(sys.argv[1]) else 1)' "${fences[0]}" "$out" ||
  fail "a new name's first fence ($out) is not above the first fence handed out for f (${fences[0]}): not time based?"
echo "fences: ${fences[*]}"
pass
