# shellcheck shell=bash
# Shared helpers for the end-to-end tests of dlock. Each test sets its
# scenario name, then sources this file:
#
#   SCENARIO="busy lock"
#   . "$(dirname "$0")/lib.sh"
#
# It gives every test a private lock directory on the file: backend (so tests
# can run in parallel), isolates it from the user's config and DLOCK_*
# environment, and on exit kills what the test started (and any holder of a
# lock in the private directory, such as acquire's keeper) and removes its
# files. DLOCK_BIN names the binary under test.
#
#   DL          array: the dlock binary with -b $BACKEND, e.g. "${DL[@]}" run x -- true
#               (use the array, not a function, when backgrounding, so that $!
#               is dlock's own pid)
#   BACKEND     file:///... URL of the private lock directory
#   LOCKDIR     that directory (namespace subdirectories live below it)
#   tmpdir      private scratch directory, removed on exit
#   fail MSG    print "FAIL <scenario>: MSG" and exit 1 (only from the main
#               shell: inside $(...) it would just end the subshell)
#   pass        print "PASS <scenario>" and exit 0
#   wait_until [-t SECONDS] CMD...   poll CMD every 10 ms until it succeeds;
#                                    1 after SECONDS (default 10)
#   is_gone PID / is_alive PID       a zombie counts as gone
#   wait_exit PID [SECONDS]          wait (bounded) for a background child, set $rc
#   capture CMD...                   run CMD with stdin /dev/null, set $rc, $out, $err
#   slurp VAR FILE                   VAR=$(cat FILE) without a subshell or cat
#   assert_one_line_message WHAT TEXT   TEXT is one "dlock: ..." line, no crash
#   json EXPR                        evaluate a Python expression over JSON on stdin (d)
#   track PID...                     kill these on exit if still alive
#   now_ms                           wall clock in ms
#   start_holder ID NAME [OPTS]      background `dlock run NAME` whose child blocks;
#                                    sets HOLDER_PID, CHILD_PID
#   release_holder ID                let that child exit 0
#   is_held NAME / is_free NAME      status exit 0 / 3
#   has_waiter NAME / has_no_waiter NAME / lock_waiters NAME
#   check_mutual_exclusion WORKERS ROUNDS NAME [OPTS]
#                                    contending `dlock run NAME` workers over a
#                                    counter: no failure, overlap, lost update,
#                                    stderr; fences strictly increasing
#   start_job NAME [OPTS]            background `dlock run NAME` over a blocking
#                                    job; sets JOB_PID, JOB_DLOCK_PID
#   check_job_stopped SINCE TTL_MS WHAT [THAW...]
#                                    the servers were taken away at SINCE: the
#                                    job is gone and dlock exited 76 within TTL_MS
#   check_long_wait NAME             a grant after a wait longer than the ttl
#
# The backend under test. The test starts on the file: backend; use_X
# (use_redis, use_redlock, use_zookeeper, use_postgres, use_etcd, use_file)
# switches it to X, a server that scripts/with-* started for it. Each
# backend has an adapter, backends/X.sh (X = file, redis, redlock, zk,
# postgres, etcd), with use_X, X's own helpers and the same five functions
# X_server_pids, X_server_kill, X_server_start, X_server_restart (I, a member
# or node number, default 1, where X has several); a scenario that differs
# only by backend is one file, registered once per backend, that calls
# these through:
#   use_backend KIND                 use_X for the backend KIND (the argument
#                                    tests/e2e/CMakeLists.txt gives such a
#                                    scenario)
#   SERVER_KIND                      that backend: file, redis, redlock, zk,
#                                    postgres or etcd
#   server_pids [I]                  the processes that make up its server
#   server_freeze [I] / server_thaw  SIGSTOP those / SIGCONT every process
#                                    server_freeze stopped (also done on exit)
#   server_kill [I]                  the server dies at once (SIGKILL;
#                                    postgres: an immediate shutdown)
#   server_start [I]                 start it again after server_kill
#   server_restart [I]               both
#
# Checks several backends share, in checks/ (sourced here too):
#   acquire.sh            keeper_of NAME, acquire_bg NAME OPTS,
#                         check_acquire_json NAME TTL: acquire's keeper and
#                         its --json document
#   auth.sh               auth_keep, auth_works, auth_refused: the auth
#                         tests' runs, which never show the password
#   modes.sh              check_semaphore WORKERS LIMIT NAME,
#                         check_readers_writer NAME: --limit and --shared
#   semaphore_queue.sh    check_semaphore_queue [OPTS]: a semaphore's
#                         waiters queue behind the first (file, postgres)
#   waiter_queue.sh       queue_measure, check_killed_waiter,
#                         check_stopped_waiter: the Redis and Redlock
#                         waiters' queue and what a hand-over costs
#   status_list_ping.sh   start_status_holder, check_held_status_text,
#                         check_held_status_json, check_waiters,
#                         check_free_status, start_list_locks,
#                         check_list_rows, check_list_prefix, check_list_json,
#                         check_ping, check_holders_released: the status,
#                         list and ping scenario of the server backends
#   unreachable.sh        free_port, start_silent_listener,
#                         check_unavailable, check_ping_unreachable,
#                         check_unavailable_commands, check_silent_server,
#                         check_malformed_urls: the unreachable-server checks

set -u


if [ -z "${DLOCK_BIN:-}" ]; then
  echo "FAIL ${SCENARIO:-$(basename "$0" .sh)}: DLOCK_BIN is not set (the path of the dlock binary)" >&2
  exit 1
fi
if [ ! -x "$DLOCK_BIN" ]; then
  echo "FAIL ${SCENARIO:-$(basename "$0" .sh)}: DLOCK_BIN=$DLOCK_BIN is not executable" >&2
  exit 1
fi

SCENARIO=${SCENARIO:-$(basename "$0" .sh)}

tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/dlock-e2e.XXXXXX") || {
  echo "FAIL $SCENARIO: mktemp -d failed" >&2
  exit 1
}
chmod 0700 "$tmpdir"
# The tests' python3 is Debian's, with the modules scripts/install-deps
# installs (kazoo, redis, psycopg2, prometheus_client), not whatever comes
# first in PATH, such as a pyenv shim, which may lack them and, being a
# script that runs several more, took over a second per call under load
# and so broke the tests that time a lease with it. A link in PATH, not a
# function, so that `python3 ... &` leaves python's own pid in $!.
if [ -x /usr/bin/python3 ]; then
  mkdir "$tmpdir/bin" && ln -s /usr/bin/python3 "$tmpdir/bin/python3" && PATH=$tmpdir/bin:$PATH
fi
# The tests' own sleeps without a process each: bash's loadable sleep
# (package bash-builtins). wait_until looks every 10 ms, and /bin/sleep
# cost about 4.6 ms of CPU per call, half a CPU per waiting test, which
# slowed the whole suite and the timings under test. Jobs run by dlock
# (sh -c '... sleep ...') still run /bin/sleep.
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true
LOCKDIR=$tmpdir/locks
BACKEND=file://$LOCKDIR
DL=("$DLOCK_BIN" -b "$BACKEND")

# Nothing from the caller's environment or config may change what is tested.
unset DLOCK_NAMESPACE DLOCK_CONFIG DLOCK_PASSWORD DLOCK_TOKEN DLOCK_NAME DLOCK_FENCE
export DLOCK_BACKEND=$BACKEND # safety net: a raw "$DLOCK_BIN" call still stays private
mkdir -p "$tmpdir/xdg"
export XDG_CONFIG_HOME=$tmpdir/xdg

_tracked_pids=()

track() { _tracked_pids+=("$@"); }

# Without running a program (date): the tests that time a stop to within
# 100 ms call these in a loop, where each exec cost milliseconds under load.
now_ms() {
  local t=${EPOCHREALTIME/[.,]/}
  echo "${t:0:-3}"
}

# Process state letter from /proc/PID/stat, empty if there is no such process.
proc_state() {
  local stat
  stat=$(<"/proc/$1/stat") 2>/dev/null || return 0
  stat=${stat##*) }
  printf '%s' "${stat%% *}"
}

# A zombie counts as gone: PID 1 in a container may never reap orphans.
is_gone() {
  local stat
  # proc_state without a subshell; an empty read: no such process.
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  stat=${stat##*) }
  stat=${stat%% *}
  [ -z "$stat" ] || [ "$stat" = Z ] || [ "$stat" = X ]
}

is_alive() { ! is_gone "$1"; }

# Backends besides the private lock directory whose lock holders the cleanup
# kills (use_zookeeper adds its server: acquire's keepers live on after the
# test otherwise).
_cleanup_backends=()
# Commands the cleanup runs first (at_cleanup CMD...: e.g. unmount what a
# test mounted in $tmpdir, before it is removed).
_cleanup_cmds=()
at_cleanup() { _cleanup_cmds+=("$*"); }

_cleanup() {
  local pid backend backends=("${_cleanup_backends[@]}") cmd
  exec 2>/dev/null # no "Killed" job notices for what is killed here
  for cmd in "${_cleanup_cmds[@]}"; do eval "$cmd"; done
  server_thaw # a frozen server would hold up the look at its holders
  # Lock holders in our private directory (dlock run, acquire keepers).
  [ -d "$LOCKDIR" ] && backends+=("file://$LOCKDIR")
  for backend in "${backends[@]}"; do
    for pid in $(timeout 5 "$DLOCK_BIN" -b "$backend" --connect-timeout 1s list --json 2>/dev/null |
      python3 -c 'import json,sys
try:
    for l in json.load(sys.stdin):
        if l.get("holder") and l["holder"].get("pid"): print(l["holder"]["pid"])
except Exception: pass' 2>/dev/null); do
      _tracked_pids+=("$pid")
    done
  done
  for pid in $(jobs -p) "${_tracked_pids[@]}"; do
    [ -n "$pid" ] && [ "$pid" -gt 1 ] 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  done
  rm -rf "$tmpdir"
}
trap _cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# Prints to stdout, and to stderr too when that is somewhere else (so that the
# reason shows even where stdout is captured).
fail() {
  echo "FAIL $SCENARIO: $*"
  [ "$(readlink /proc/$$/fd/1)" = "$(readlink /proc/$$/fd/2)" ] || echo "FAIL $SCENARIO: $*" >&2
  exit 1
}

pass() {
  echo "PASS $SCENARIO"
  exit 0
}

# wait_until [-t SECONDS] CMD...: runs CMD every 10 ms until it succeeds;
# returns 1 if it has not within SECONDS (default 10).
wait_until() {
  local limit=10
  if [ "${1:-}" = -t ]; then
    limit=$2
    shift 2
  fi
  local deadline=$(($(now_ms) + ${limit%.*} * 1000))
  case $limit in *.*)
    local frac=${limit#*.}000
    deadline=$((deadline + 10#${frac:0:3}))
    ;;
  esac
  # Every 10 ms for the first 100 ms, then less often, up to every 50 ms:
  # each look runs a command or more, and a test that waits seconds must
  # not keep a CPU busy looking (the timings under test share it).
  local nap=10 looks=0
  local t
  while :; do
    "$@" && return 0
    t=${EPOCHREALTIME/[.,]/} # now_ms without a subshell
    ((${t:0:-3} >= deadline)) && return 1
    sleep "0.0$nap"
    looks=$((looks + 1))
    ((looks < 10 || nap >= 50)) || nap=$((nap + 10))
  done
}

# wait_exit PID [SECONDS]: waits (bounded, default 10 s) for a background
# child of this shell to end and sets rc to its exit status. Fails the test
# on the deadline.
wait_exit() {
  local pid=$1 limit=${2:-10}
  wait_until -t "$limit" is_gone "$pid" || fail "process $pid did not end within ${limit}s"
  wait "$pid" 2>/dev/null
  # shellcheck disable=SC2034 # rc is for the caller
  rc=$?
}

# slurp VAR FILE: VAR = FILE's text without its trailing newlines, as
# VAR=$(cat FILE) gives, but read by bash itself: no subshell, no cat
# (the tests capture hundreds of times, and each cat cost a fork and an
# exec, about a sixth of a busy test's time). A file with a NUL in it
# (read stops there) is read by $(cat FILE) after all.
slurp() {
  local -n _slurp_into=$1
  _slurp_into=''
  if IFS= read -r -d '' _slurp_into <"$2"; then
    _slurp_into=$(cat "$2")
    return 0
  fi
  while [[ $_slurp_into == *$'\n' ]]; do _slurp_into=${_slurp_into%$'\n'}; done
  return 0
}

# capture CMD...: runs CMD with stdin from /dev/null and sets rc, out, err.
# shellcheck disable=SC2034 # rc, out and err are for the caller
capture() {
  "$@" </dev/null >"$tmpdir/.capture.out" 2>"$tmpdir/.capture.err"
  rc=$?
  slurp out "$tmpdir/.capture.out"
  slurp err "$tmpdir/.capture.err"
}

# Number of lines of a string (0 for empty).
line_count() {
  if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l | tr -d ' '; fi
}

# A "dlock: ..." one-line message without C++ noise.
assert_one_line_message() {
  local what=$1 text=$2
  [ "$(line_count "$text")" = 1 ] || fail "$what: expected exactly one line on stderr, got: $text"
  case $text in
  "dlock: "*) ;;
  *) fail "$what: stderr does not start with 'dlock: ': $text" ;;
  esac
  case $text in
  *"terminate called"* | *"what():"* | *"Aborted"* | *"core dumped"* | *"#0 "* | *"stack trace"*)
    fail "$what: stderr looks like a crash: $text"
    ;;
  esac
}

# check_peak_rss WHAT KIB: a command's peak RSS (from /usr/bin/time) must be
# under 32 MiB. Not checked in a sanitizer build (DLOCK_SANITIZED, set by
# CMake): ASan's shadow memory alone is over 100 MiB.
check_peak_rss() {
  if [ -n "${DLOCK_SANITIZED:-}" ]; then
    echo "$1: peak RSS ${2:-?} KiB, not checked in a sanitizer build"
    return 0
  fi
  [ -n "$2" ] && [ "$2" -lt 32768 ] || fail "$1: peak RSS ${2:-?} KiB, not under 32 MiB"
}

# json EXPR: evaluates a Python expression over the JSON document on stdin
# (bound to d) and prints the result (JSON-encoded unless it is a string).
json() {
  python3 -c 'import json,sys
d = json.load(sys.stdin)
r = eval(sys.argv[1])
print(r if isinstance(r, str) else json.dumps(r))' "$1"
}

# start_holder ID NAME [run options...]: starts `dlock run NAME [options] --
# CHILD` in the background, where CHILD records its pid, DLOCK_TOKEN and
# DLOCK_FENCE in $tmpdir/ID.child, ID.token and ID.fence and then blocks until
# release_holder ID. dlock's stdout and stderr go to $tmpdir/ID.out and ID.err.
# Sets HOLDER_PID to dlock's pid and CHILD_PID to the child's, once the child
# has started.
start_holder() {
  local id=$1 name=$2
  shift 2
  rm -f "$tmpdir/$id.child" "$tmpdir/$id.fifo" "$tmpdir/$id.token" "$tmpdir/$id.fence"
  mkfifo "$tmpdir/$id.fifo"
  "${DL[@]}" run "$name" "$@" -- sh -c 'printf "%s\n" "$DLOCK_TOKEN" >"$1.token"; printf "%s\n" "$DLOCK_FENCE" >"$1.fence"
echo $$ >"$1.tmp" && mv "$1.tmp" "$1.child"; read x <"$1.fifo"' \
    holder "$tmpdir/$id" </dev/null >"$tmpdir/$id.out" 2>"$tmpdir/$id.err" &
  HOLDER_PID=$!
  track "$HOLDER_PID"
  wait_until test -s "$tmpdir/$id.child" ||
    fail "holder $id (dlock pid $HOLDER_PID) did not start its child; stderr: $(cat "$tmpdir/$id.err")"
  slurp CHILD_PID "$tmpdir/$id.child"
  track "$CHILD_PID"
}

# release_holder ID: lets the child of start_holder ID exit 0.
release_holder() {
  timeout 5 sh -c 'echo go >"$1"' release "$tmpdir/$1.fifo" ||
    fail "could not release holder $1 (its child is not reading its fifo)"
}

# lock_waiters NAME: the number of waiters status --json reports (0 if none).
# (Read without python, which costs about 50 ms of CPU a call: tests ask
# this in loops.)
lock_waiters() {
  local out
  out=$("${DL[@]}" status "$1" --json 2>/dev/null)
  if [[ $out =~ \"waiters\":\ ([0-9]+) ]]; then echo "${BASH_REMATCH[1]}"; else echo 0; fi
}

# has_waiter NAME: true once someone waits for NAME.
has_waiter() { [ "$(lock_waiters "$1")" -ge 1 ] 2>/dev/null; }
has_no_waiter() { [ "$(lock_waiters "$1")" = 0 ]; }

# is_held NAME / is_free NAME: status exit 0 / 3.
is_held() {
  "${DL[@]}" status "$1" >/dev/null 2>&1
}
is_free() {
  "${DL[@]}" status "$1" >/dev/null 2>&1
  [ $? = 3 ]
}

# check_mutual_exclusion WORKERS ROUNDS NAME [run options...]: WORKERS
# background workers each run ROUNDS times `dlock run NAME [options] --` a
# critical section that reads a counter, sleeps 0-5 ms, writes the counter
# back plus one and records its DLOCK_FENCE. Fails the test if a worker is not
# done within 45 s, a run exits non-zero, two critical sections overlap, an
# update is lost, dlock prints on stderr, or the fences are not strictly
# increasing in lock order. Prints how long all the runs took.
check_mutual_exclusion() {
  local workers=$1 rounds=$2 name=$3 w pid started elapsed count pids=()
  shift 3
  echo 0 >"$tmpdir/counter"
  : >"$tmpdir/fences"
  : >"$tmpdir/overlaps"
  : >"$tmpdir/failures"
  # The critical section: $1 = scratch dir, $2 = sleep seconds.
  cat >"$tmpdir/critical.sh" <<'SCRIPT'
d=$1
if ! mkdir "$d/inside" 2>/dev/null; then
  echo "overlap fence=$DLOCK_FENCE" >>"$d/overlaps"
fi
read n <"$d/counter"
sleep "$2"
echo $((n + 1)) >"$d/counter"
echo "$DLOCK_FENCE" >>"$d/fences"
rmdir "$d/inside" 2>/dev/null
exit 0
SCRIPT
  started=$(now_ms)
  for ((w = 0; w < workers; w++)); do
    _contender "$w" "$rounds" "$name" "$@" 2>>"$tmpdir/stderr" &
    pids+=($!)
  done
  track "${pids[@]}"
  for pid in "${pids[@]}"; do
    wait_until -t 45 is_gone "$pid" || fail "worker $pid did not finish in time (count so far $(cat "$tmpdir/counter"))"
    wait "$pid"
  done
  elapsed=$(($(now_ms) - started))

  [ ! -s "$tmpdir/failures" ] || fail "some runs failed: $(head -5 "$tmpdir/failures"); stderr: $(head -3 "$tmpdir/stderr")"
  [ ! -s "$tmpdir/overlaps" ] || fail "$(wc -l <"$tmpdir/overlaps") critical sections overlapped: $(head -3 "$tmpdir/overlaps")"
  count=$(cat "$tmpdir/counter")
  [ "$count" = $((workers * rounds)) ] || fail "counter is $count, expected $((workers * rounds)) (lost updates)"
  [ ! -s "$tmpdir/stderr" ] || fail "dlock printed on stderr: $(head -3 "$tmpdir/stderr")"
  python3 - "$tmpdir/fences" $((workers * rounds)) <<'PY' || fail "fences are not strictly increasing in lock order"
import sys
fences = [int(line) for line in open(sys.argv[1])]
assert len(fences) == int(sys.argv[2]), len(fences)
assert all(b > a for a, b in zip(fences, fences[1:]))
PY
  echo "$((workers * rounds)) locked increments in ${elapsed} ms"
}

# _contender ID ROUNDS NAME [run options...]: one worker of
# check_mutual_exclusion; notes each failed run in $tmpdir/failures.
_contender() {
  local id=$1 rounds=$2 name=$3 i rc
  shift 3
  for ((i = 0; i < rounds; i++)); do
    "${DL[@]}" run "$name" "$@" -- sh "$tmpdir/critical.sh" "$tmpdir" "0.00$((RANDOM % 6))" </dev/null
    rc=$?
    [ "$rc" = 0 ] || echo "worker $id round $i: dlock exited $rc" >>"$tmpdir/failures"
  done
}

# start_run NAME SCRIPT [run options...]: starts `dlock run NAME [options]
# -- sh -c SCRIPT sh $tmpdir` in the background (after the command prefix in
# the array RUN_PREFIX, if set: e.g. env, setsid), below a subshell that
# records dlock's exit status in $tmpdir/dlock.rc and the moment it exits in
# $tmpdir/dlock.exit_ms (for check_job_stopped). SCRIPT writes its pid to
# "$1/job.pid" (atomically) and ends up exec'ing sleep. dlock's stderr goes
# to $tmpdir/job.err. Returns once the job runs `sleep`; sets JOB_PID (the
# job), JOB_DLOCK_PID and JOB_WRAPPER (the subshell; it prints no "Killed"
# notice if dlock is killed).
RUN_PREFIX=()
start_run() {
  local name=$1 script=$2
  shift 2
  rm -f "$tmpdir/job.pid" "$tmpdir/job.pid.fence" "$tmpdir/dlock.pid" "$tmpdir/dlock.rc" "$tmpdir/dlock.exit_ms"
  (
    "${RUN_PREFIX[@]}" "${DL[@]}" run "$name" "$@" -- sh -c "$script" sh "$tmpdir" </dev/null >/dev/null 2>"$tmpdir/job.err" &
    echo $! >"$tmpdir/dlock.pid"
    wait $!
    echo $? >"$tmpdir/dlock.rc.tmp"
    now_ms >"$tmpdir/dlock.exit_ms"
    mv "$tmpdir/dlock.rc.tmp" "$tmpdir/dlock.rc"
  ) 2>/dev/null &
  JOB_WRAPPER=$!
  track "$JOB_WRAPPER"
  wait_until test -s "$tmpdir/dlock.pid" || fail "dlock run $name did not start"
  JOB_DLOCK_PID=$(cat "$tmpdir/dlock.pid")
  track "$JOB_DLOCK_PID"
  wait_until test -s "$tmpdir/job.pid" || fail "the job of $name did not start; stderr: $(cat "$tmpdir/job.err")"
  JOB_PID=$(cat "$tmpdir/job.pid")
  track "$JOB_PID"
  wait_until grep -qx sleep "/proc/$JOB_PID/comm" || fail "the job of $name never became 'sleep'"
}

# start_job NAME [run options...]: start_run over a job that records its
# DLOCK_FENCE in $tmpdir/job.pid.fence and blocks (sleep 1000).
# shellcheck disable=SC2016 # expanded by the job's shell
_blocking_job='echo "$DLOCK_FENCE" >"$1/job.pid.fence"; echo $$ >"$1/job.pid.tmp"; mv "$1/job.pid.tmp" "$1/job.pid"; exec sleep 1000'
start_job() {
  local name=$1
  shift
  start_run "$name" "$_blocking_job" "$@"
}

# check_job_stopped SINCE TTL_MS WHAT [THAW...]: the servers of start_job's
# lock were taken away at SINCE (a now_ms reading); WHAT says how, e.g. "the
# server died". The job must be gone and dlock must have exited 76 with a
# one-line message, both less than TTL_MS after SINCE, i.e. before the lease
# it last renewed could have lapsed (it waits at most 5 s and 10 s for them).
# With THAW the servers are frozen: they stay so until both have ended and
# TTL_MS + 500 ms have passed since SINCE (the pause itself is under test),
# then the command THAW... runs (also before the test fails on a deadline).
check_job_stopped() {
  local since=$1 ttl_ms=$2 what=$3 job_gone exited rc remaining
  shift 3
  wait_until -t 5 is_gone "$JOB_PID" || {
    (($#)) && "$@"
    fail "the job was still running 5 s after $what (ttl ${ttl_ms} ms)"
  }
  job_gone=$(($(now_ms) - since))
  wait_until -t 10 test -e "$tmpdir/dlock.rc" || {
    (($#)) && "$@"
    fail "dlock had not exited 10 s after $what (ttl ${ttl_ms} ms; job gone after ${job_gone} ms)"
  }
  if (($#)); then
    remaining=$((since + ttl_ms + 500 - $(now_ms)))
    [ "$remaining" -gt 0 ] && sleep "$((remaining / 1000)).$(printf '%03d' $((remaining % 1000)))"
    "$@"
  fi
  rc=$(cat "$tmpdir/dlock.rc")
  exited=$(($(cat "$tmpdir/dlock.exit_ms") - since))
  echo "job gone ${job_gone} ms, dlock exited ${exited} ms after $what (ttl ${ttl_ms} ms)"
  [ "$rc" = 76 ] || fail "dlock exited $rc after $what, expected 76; stderr: $(cat "$tmpdir/job.err")"
  # dlock exits 76 only once it has reaped the whole job (it is the job's
  # subreaper): its exit bounds the job's end, which the poll above, a
  # process per look, may find out later than that on a busy machine.
  [ "$exited" -lt "$job_gone" ] && job_gone=$exited
  [ "$job_gone" -lt "$ttl_ms" ] ||
    fail "the job was gone only ${job_gone} ms after $what: the ${ttl_ms} ms lease could have lapsed while it ran"
  [ "$exited" -lt "$ttl_ms" ] ||
    fail "dlock exited ${exited} ms after $what (job gone after ${job_gone} ms): later than the ${ttl_ms} ms lease"
  assert_one_line_message "stderr after $what" "$(cat "$tmpdir/job.err")"
}

# use_server KIND URL_VARIABLE HOW MODULE URL: what every adapter's use_X
# does first. Fails, never skips, when URL_VARIABLE is not set (the test
# does not run as HOW, e.g. "scripts/with-redis [options]", would have it)
# or dlock lacks the backend MODULE (as `dlock version` lists it); then
# BACKEND, DL and DLOCK_BACKEND name URL and SERVER_KIND is KIND.
use_server() {
  local kind=$1 variable=$2 how=$3 module=$4 url=$5 line
  [ -n "${!variable:-}" ] || fail "$variable is not set: run this test as $how -- bash $0"
  line=$("$DLOCK_BIN" version 2>&1 | grep -A1 -E "^ +$module ")
  [ -n "$line" ] || fail "this dlock does not know the $module backend: $("$DLOCK_BIN" version 2>&1 | tr '\n' ' ')"
  case $line in
  *"not available"*) fail "this dlock has no $module backend: $(printf '%s\n' "$line" | tail -1 | sed 's/^ *//')" ;;
  esac
  BACKEND=$url
  DL=("$DLOCK_BIN" -b "$BACKEND")
  export DLOCK_BACKEND=$BACKEND
  SERVER_KIND=$kind
}

use_backend() {
  case ${1:-} in
  file | redis | redlock | etcd) "use_$1" ;;
  zk) use_zookeeper ;;
  postgres) use_postgres ;;
  "") fail "no backend given: this scenario runs once per backend, as bash $0 KIND (see tests/e2e/CMakeLists.txt)" ;;
  *) fail "unknown backend '$1' (file, redis, redlock, zk, postgres, etcd)" ;;
  esac
}

SERVER_KIND="file"
_frozen_pids=()

server_pids() { "${SERVER_KIND}_server_pids" "$@"; }

server_freeze() {
  local pids pid
  pids=$(server_pids "$@") && [ -n "$pids" ] || fail "found no process of the $SERVER_KIND server to freeze"
  for pid in $pids; do
    _frozen_pids+=("$pid")
    kill -STOP "$pid" 2>/dev/null
  done
  return 0
}

server_thaw() {
  ((${#_frozen_pids[@]})) && kill -CONT "${_frozen_pids[@]}" 2>/dev/null
  return 0
}

server_kill() { "${SERVER_KIND}_server_kill" "$@"; }
server_start() { "${SERVER_KIND}_server_start" "$@"; }
server_restart() { "${SERVER_KIND}_server_restart" "$@"; }

# kill_pid PID WHAT: SIGKILL PID (a frozen one too) and wait (5 s) until it
# is gone; fails the test if it is not.
kill_pid() {
  kill -CONT "$1" 2>/dev/null
  kill -KILL "$1" 2>/dev/null
  wait_until -t 5 is_gone "$1" || fail "$2 (pid $1) did not die on SIGKILL"
}

# run_server_script WHAT SCRIPT [ARGS...]: runs one of the control scripts
# a scripts/with-* wrapper exported; fails the test with its output if it
# fails.
run_server_script() {
  local what=$1
  shift
  "$@" >"$tmpdir/.server-script.out" 2>&1 || fail "could not $what: $(cat "$tmpdir/.server-script.out")"
}

# check_long_wait NAME: a waiter that got the lock after waiting longer than
# its --ttl runs its job and exits 0 (its lease is dated anew, not by the
# start of its wait, which would put its kill deadline in the past).
check_long_wait() {
  local name=$1
  "${DL[@]}" run "$name" --ttl 1s -- sh -c 'touch "$1"; sleep 2.5' sh "$tmpdir/$name.held" &
  local holder=$!
  wait_until -t 10 test -e "$tmpdir/$name.held" || fail "the holder of $name did not start"
  local started rc
  started=$(now_ms)
  "${DL[@]}" run "$name" --wait 20s --ttl 1s -- sh -c 'echo ran >"$1"' sh "$tmpdir/$name.ran" 2>"$tmpdir/$name.err"
  rc=$?
  local waited=$(($(now_ms) - started))
  wait "$holder" || fail "the holder of $name exited $?"
  [ "$rc" = 0 ] || fail "a waiter granted $name after ${waited}ms (ttl 1s) exited $rc: $(cat "$tmpdir/$name.err")"
  [ -s "$tmpdir/$name.ran" ] || fail "the job of a waiter granted $name after ${waited}ms did not run"
  [ "$waited" -ge 1500 ] || fail "the waiter got $name after ${waited}ms: the wait was not longer than its ttl"
}

_e2e_dir=$(dirname "${BASH_SOURCE[0]}")
for _e2e_part in backends/file backends/redis backends/redlock backends/zk backends/postgres backends/etcd \
  checks/acquire checks/auth checks/modes checks/semaphore_queue checks/status_list_ping checks/unreachable \
  checks/waiter_queue; do
  # shellcheck source=/dev/null
  . "$_e2e_dir/$_e2e_part.sh"
done
unset _e2e_part
