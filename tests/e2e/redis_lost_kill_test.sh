#!/usr/bin/env bash
# Redis: after a confirmed loss (release --force from another shell, seen at
# the holder's next renewal) someone else may already run under the lock, so
# a job that ignores SIGTERM gets SIGKILL within --lost-kill-after of it
# (default 1 s), not --kill-after (default 5 s, which --ttl 16s leaves
# uncapped) later; --lost-kill-after 2500ms gives it 2.5 s. Each job counts
# one SIGTERM, and each dlock exits 76 with one line naming the cause.
SCENARIO="redis: a confirmed loss kills the job within --lost-kill-after of SIGTERM"
. "$(dirname "$0")/lib.sh"
use_redis

# The job: records when each SIGTERM came and otherwise ignores it, blocked
# in a builtin read (no child of its own).
cat >"$tmpdir/stubborn.sh" <<'SCRIPT'
d=$1
trap 'date +%s%3N >>"$d/term"' TERM
mkfifo "$d/fifo" && exec 3<>"$d/fifo"
echo $$ >"$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid"
while :; do read -r -u 3 x; done
SCRIPT

# start_stubborn ID [run options...]: dlock run ID over the job, in $tmpdir/ID.
start_stubborn() {
  local id=$1
  shift
  mkdir "$tmpdir/$id"
  "${DL[@]}" run "$id" --ttl 16s "$@" -- bash "$tmpdir/stubborn.sh" "$tmpdir/$id" </dev/null >/dev/null \
    2>"$tmpdir/$id.err" &
  echo $! >"$tmpdir/$id.dlock"
  track "$(cat "$tmpdir/$id.dlock")"
  wait_until test -s "$tmpdir/$id/pid" || fail "$id: the job did not start; stderr: $(cat "$tmpdir/$id.err")"
  track "$(cat "$tmpdir/$id/pid")"
}

# force ID: release --force ID; both see the loss at their next renewal
# (T/3 = 5.3 s) and send SIGTERM.
force() {
  capture "${DL[@]}" release "$1" --force
  [ "$rc" = 0 ] || fail "release --force $1 exited $rc; stderr: $err"
  wait_until -t 12 test -s "$tmpdir/$1/term" || fail "$1: the job got no SIGTERM within 12 s of release --force"
}

check_gone() {
  local id=$1 low=$2 high=$3 job term gone
  job=$(cat "$tmpdir/$id/pid")
  wait_until -t 8 is_gone "$job" || fail "$id: the job still runs 8 s after its SIGTERM"
  gone=$(now_ms)
  term=$(head -1 "$tmpdir/$id/term")
  echo "$id: the job was gone $((gone - term)) ms after SIGTERM"
  [ $((gone - term)) -ge "$low" ] || fail "$id: the job was killed $((gone - term)) ms after SIGTERM, expected at least $low ms"
  [ $((gone - term)) -lt "$high" ] || fail "$id: the job was gone only $((gone - term)) ms after SIGTERM, expected less than $high ms"
  [ "$(wc -l <"$tmpdir/$id/term")" = 1 ] || fail "$id: the job counted $(wc -l <"$tmpdir/$id/term") SIGTERMs, expected 1"
  wait_exit "$(cat "$tmpdir/$id.dlock")" 5
  [ "$rc" = 76 ] || fail "$id: dlock exited $rc after the loss, expected 76; stderr: $(cat "$tmpdir/$id.err")"
  assert_one_line_message "$id: dlock after the loss" "$(cat "$tmpdir/$id.err")"
  grep -qi lost "$tmpdir/$id.err" || fail "$id: the message does not say the lock was lost: $(cat "$tmpdir/$id.err")"
}
start_stubborn default
force default
check_gone default 0 1600
start_stubborn longer --lost-kill-after 2500ms
force longer
check_gone longer 2300 3200
pass
