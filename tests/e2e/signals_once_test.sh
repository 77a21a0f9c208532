#!/usr/bin/env bash
# Every signal dlock forwards or sends reaches each process of the job
# exactly once: the job, a grandchild in its process group and a descendant
# that left the group with setsid each count five SIGUSR1 when five are sent
# to dlock, and one SIGTERM when dlock is sent one, and one SIGTERM from
# --max-runtime. (They used to get the group's copy and then their own.)
SCENARIO="each signal reaches each process of the job once"
. "$(dirname "$0")/lib.sh"

# A process that counts the SIGUSR1 and SIGTERM it gets in DIR/NAME.usr1 and
# DIR/NAME.term, blocked in a builtin read that a trapped signal interrupts
# (no child of its own that the signals would also reach). It exits on TERM
# only once DIR/exit-on-term exists.
cat >"$tmpdir/counter.sh" <<'SCRIPT'
d=$1 n=$2
u=0 t=0
trap 'u=$((u+1)); echo $u >"$d/$n.usr1"' USR1
trap 't=$((t+1)); echo $t >"$d/$n.term"; [ -e "$d/exit-on-term" ] && exit 0' TERM
mkfifo "$d/$n.fifo" && exec 3<>"$d/$n.fifo"
echo $$ >"$d/$n.pid.tmp" && mv "$d/$n.pid.tmp" "$d/$n.pid"
while :; do read -r -u 3 x; done
SCRIPT
# The job: a grandchild in the job's process group, one that did setsid, and
# the job itself counting too.
cat >"$tmpdir/job.sh" <<'SCRIPT'
counter=$1 d=$2
bash "$counter" "$d" grandchild &
setsid bash "$counter" "$d" setsid &
exec bash "$counter" "$d" job
SCRIPT
procs="job grandchild setsid"

# start_counting_job NAME [run options...]: sets DLOCK_PID once all three count.
start_counting_job() {
  local name=$1 p
  shift
  rm -rf "$tmpdir/c" && mkdir "$tmpdir/c"
  "${DL[@]}" run "$name" "$@" -- bash "$tmpdir/job.sh" "$tmpdir/counter.sh" "$tmpdir/c" </dev/null >"$tmpdir/run.out" 2>"$tmpdir/run.err" &
  DLOCK_PID=$!
  track "$DLOCK_PID"
  for p in $procs; do
    wait_until test -s "$tmpdir/c/$p.pid" || fail "$name: the $p process did not start; stderr: $(cat "$tmpdir/run.err")"
    track "$(cat "$tmpdir/c/$p.pid")"
  done
  [ "$(ps -o pgid= -p "$(cat "$tmpdir/c/setsid.pid")" | tr -d ' ')" != "$(cat "$tmpdir/c/job.pid")" ] ||
    fail "test set-up: the setsid process is still in the job's process group"
  [ "$(ps -o pgid= -p "$(cat "$tmpdir/c/grandchild.pid")" | tr -d ' ')" = "$(cat "$tmpdir/c/job.pid")" ] ||
    fail "test set-up: the grandchild is not in the job's process group"
}

count_of() { cat "$tmpdir/c/$1.$2" 2>/dev/null || echo 0; }

all_counted() {
  local what=$1 least=$2 p
  for p in $procs; do [ "$(count_of "$p" "$what")" -ge "$least" ] || return 1; done
}

counts() {
  local what=$1 p line=
  for p in $procs; do line+="$p=$(count_of "$p" "$what") "; done
  echo "${line% }"
}

# Five SIGUSR1, each one counted everywhere before the next is sent (two
# pending ones would merge into one), then SIGTERM: the job exits 0.
start_counting_job u
for i in 1 2 3 4 5; do
  kill -USR1 "$DLOCK_PID"
  wait_until -t 5 all_counted usr1 "$i" || fail "SIGUSR1 number $i did not reach every process: $(counts usr1)"
done
touch "$tmpdir/c/exit-on-term"
kill -TERM "$DLOCK_PID"
wait_exit "$DLOCK_PID" 10
[ "$rc" = 0 ] || fail "dlock exited $rc after forwarding SIGTERM to a job that exits 0 on it; stderr: $(cat "$tmpdir/run.err")"
echo "5 SIGUSR1 to dlock: $(counts usr1); 1 SIGTERM: $(counts term)"
[ "$(counts usr1)" = "job=5 grandchild=5 setsid=5" ] || fail "5 SIGUSR1 sent to dlock were counted $(counts usr1)"
[ "$(counts term)" = "job=1 grandchild=1 setsid=1" ] || fail "1 SIGTERM sent to dlock was counted $(counts term)"

# --max-runtime: one SIGTERM each (the job ignores it), then SIGKILL.
start_counting_job m --max-runtime 3s --kill-after 1s
wait_exit "$DLOCK_PID" 15
[ "$rc" = 124 ] || fail "dlock run --max-runtime 3s exited $rc, expected 124; stderr: $(cat "$tmpdir/run.err")"
for p in $procs; do is_gone "$(cat "$tmpdir/c/$p.pid")" || fail "the $p process outlived --max-runtime's SIGKILL"; done
echo "--max-runtime's SIGTERM: $(counts term)"
[ "$(counts term)" = "job=1 grandchild=1 setsid=1" ] || fail "--max-runtime's SIGTERM was counted $(counts term)"
pass
