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
#   start_status_holder, check_held_status_text, check_held_status_json,
#   check_waiters, check_free_status, start_list_locks, check_list_rows,
#   check_list_prefix, check_list_json, check_ping, check_holders_released
#                                    the status, list and ping scenario the
#                                    server backends share (see below)
#   free_port, start_silent_listener, check_unavailable,
#   check_ping_unreachable, check_unavailable_commands, check_silent_server,
#   check_malformed_urls             the unreachable-server checks they share

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

now_ms() { date +%s%3N; }

# Process state letter from /proc/PID/stat, empty if there is no such process.
proc_state() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  printf '%s' "${stat%% *}"
}

# A zombie counts as gone: PID 1 in a container may never reap orphans.
is_gone() {
  local state
  state=$(proc_state "$1")
  [ -z "$state" ] || [ "$state" = Z ] || [ "$state" = X ]
}

is_alive() { ! is_gone "$1"; }

# Backends besides the private lock directory whose lock holders the cleanup
# kills (use_zookeeper adds its server: acquire's keepers live on after the
# test otherwise).
_cleanup_backends=()

_cleanup() {
  local pid backend backends=("${_cleanup_backends[@]}")
  exec 2>/dev/null # no "Killed" job notices for what is killed here
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
  while :; do
    "$@" && return 0
    [ "$(now_ms)" -ge "$deadline" ] && return 1
    sleep 0.01
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

# capture CMD...: runs CMD with stdin from /dev/null and sets rc, out, err.
# shellcheck disable=SC2034 # rc, out and err are for the caller
capture() {
  "$@" </dev/null >"$tmpdir/.capture.out" 2>"$tmpdir/.capture.err"
  rc=$?
  out=$(cat "$tmpdir/.capture.out")
  err=$(cat "$tmpdir/.capture.err")
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
  CHILD_PID=$(cat "$tmpdir/$id.child")
  track "$CHILD_PID"
}

# release_holder ID: lets the child of start_holder ID exit 0.
release_holder() {
  timeout 5 sh -c 'echo go >"$1"' release "$tmpdir/$1.fifo" ||
    fail "could not release holder $1 (its child is not reading its fifo)"
}

# lock_waiters NAME: the number of waiters status --json reports (0 if none).
lock_waiters() {
  "${DL[@]}" status "$1" --json 2>/dev/null | json 'd.get("waiters") or 0' 2>/dev/null || echo 0
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
  [ "$job_gone" -lt "$ttl_ms" ] ||
    fail "the job was gone only ${job_gone} ms after $what: the ${ttl_ms} ms lease could have lapsed while it ran"
  [ "$exited" -lt "$ttl_ms" ] ||
    fail "dlock exited ${exited} ms after $what (job gone after ${job_gone} ms): later than the ${ttl_ms} ms lease"
  assert_one_line_message "stderr after $what" "$(cat "$tmpdir/job.err")"
}

# use_redis [URL]: switches the test to the Redis server that
# scripts/with-redis started for it (DLOCK_TEST_REDIS_*): BACKEND, DL and
# DLOCK_BACKEND then name URL (default $DLOCK_TEST_REDIS_URL). Fails, never
# skips, when the test is not run under with-redis or dlock lacks the redis
# backend. Sets RCLI to the redis-cli wrapper of that server.
#   redis_key NAME PART [NS]   the server-side key of a lock: {NS:NAME}:PART
#   wait_renewed KEY           wait (3 s) for a renewal of KEY's lease to land
use_redis() {
  [ -n "${DLOCK_TEST_REDIS_URL:-}" ] ||
    fail "DLOCK_TEST_REDIS_URL is not set: run this test as scripts/with-redis [options] -- bash $0"
  if "$DLOCK_BIN" version 2>&1 | grep -A1 -E '^ +redis ' | grep -q 'not available'; then
    fail "this dlock has no redis backend: $("$DLOCK_BIN" version 2>&1 | grep -A1 -E '^ +redis ' | tail -1)"
  fi
  BACKEND=${1:-$DLOCK_TEST_REDIS_URL}
  DL=("$DLOCK_BIN" -b "$BACKEND")
  export DLOCK_BACKEND=$BACKEND
  # shellcheck disable=SC2034 # RCLI is for the caller
  RCLI=$DLOCK_TEST_REDIS_CLI
}

redis_key() { printf '{%s:%s}:%s' "${3:-dlock}" "$1" "$2"; }

# wait_renewed KEY: (after use_redis) waits up to 3 s until a renewal of the
# lease on KEY lands (its PTTL rises between two readings); fails if none does.
wait_renewed() {
  _redis_pttl=$("$RCLI" PTTL "$1")
  wait_until -t 3 _redis_pttl_rose "$1" || fail "the lease was never renewed (PTTL now $_redis_pttl)"
}

_redis_pttl_rose() {
  local p
  p=$("$RCLI" PTTL "$1")
  [ "$p" -gt "$_redis_pttl" ] 2>/dev/null && return 0
  _redis_pttl=$p
  return 1
}

# use_zookeeper [URL]: switches the test to the ZooKeeper server (or
# ensemble) that scripts/with-zookeeper started for it (DLOCK_TEST_ZK_*):
# BACKEND, DL and DLOCK_BACKEND then name URL (default $DLOCK_TEST_ZK_URL).
# Fails, never skips, when the test is not run under with-zookeeper or dlock
# lacks the zk backend. Sets ZKCLI (kazoo znode tool: "$ZKCLI" ls PATH, ...,
# see scripts/with-zookeeper) and ZK4 ("$ZK4" WORD [PORT]: a four-letter
# word). Holders of locks on URL (acquire's keepers) are killed on exit.
#   ZK_NODE_RE                 the name of a lock node (Curator's protected
#                              _c_<uuid>-lock-<10-digit sequence>), a regex
#   zk_children PATH           JSON array of PATH's children with their stat
#                              (name, czxid, ephemeralOwner, ...), [] if none
#   zk_child_count PATH        how many children PATH has (0 if it is absent)
#   zk_session_timeout_ms FILE the session timeout dlock -v reported in FILE
#   zk_wait_pinged             wait (3 s) until a session that was connected
#                              when it was called sends the server a request
#   zk_wakeups FILE...         how many "woken by ZooKeeper" lines FILEs hold
# shellcheck disable=SC2034 # for the caller
ZK_NODE_RE='^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$'

use_zookeeper() {
  [ -n "${DLOCK_TEST_ZK_URL:-}" ] ||
    fail "DLOCK_TEST_ZK_URL is not set: run this test as scripts/with-zookeeper [options] -- bash $0"
  if "$DLOCK_BIN" version 2>&1 | grep -A1 -E '^ +zk ' | grep -q 'not available'; then
    fail "this dlock has no zk backend: $("$DLOCK_BIN" version 2>&1 | grep -A1 -E '^ +zk ' | tail -1)"
  fi
  BACKEND=${1:-$DLOCK_TEST_ZK_URL}
  DL=("$DLOCK_BIN" -b "$BACKEND")
  export DLOCK_BACKEND=$BACKEND
  _cleanup_backends+=("$BACKEND")
  # shellcheck disable=SC2034 # ZKCLI and ZK4 are for the caller
  ZKCLI=$DLOCK_TEST_ZK_CLI
  # shellcheck disable=SC2034
  ZK4=$DLOCK_TEST_ZK_FOURLW
}

zk_children() { "$DLOCK_TEST_ZK_CLI" children "$1"; }

zk_child_count() { zk_children "$1" | json 'len(d)'; }

# zk_session_timeout_ms FILE: from dlock -v's "session 0x... on HOST:PORT,
# timeout 2s (asked 2s)" line in FILE, the negotiated timeout in ms; fails
# the test when there is none.
zk_session_timeout_ms() {
  local ms
  ms=$(python3 - "$1" <<'PY'
import re, sys
units = {"ms": 1, "s": 1000, "m": 60000}
# The last session line: with -v a waiting run looks at the holder first
# (status, a session of its own) and then opens the lock's session.
found = None
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"session .*timeout ([0-9.]+)(ms|s|m)\b", line)
    if m:
        found = int(round(float(m.group(1)) * units[m.group(2)]))
if found is not None:
    print(found)
PY
  )
  [ -n "$ms" ] || fail "dlock -v did not report the negotiated session timeout ('session ..., timeout T'): $(head -3 "$1")"
  echo "$ms"
}

# zk_wait_pinged: waits up to 3 s until one of the client sessions the
# server has now (see the four-letter word cons) sends it another request: a
# renewal or a ping has landed. Fails if none does.
zk_wait_pinged() {
  local before
  before=$(_zk_session_requests)
  [ -n "$before" ] || fail "cons shows no client session on the server"
  wait_until -t 3 _zk_session_requests_rose "$before" ||
    fail "no session sent the server a request within 3 s (cons: $("$ZK4" cons | tr '\n' ' '))"
}

# "sid recved" per client session cons lists.
_zk_session_requests() {
  "$ZK4" cons | sed -n 's/.*recved=\([0-9]*\),.*sid=\(0x[0-9a-f]*\).*/\2 \1/p'
}

_zk_session_requests_rose() {
  local sid count old
  while read -r sid count; do
    old=$(printf '%s\n' "$1" | awk -v s="$sid" '$1 == s { print $2 }')
    [ -n "$old" ] && [ "$count" -gt "$old" ] && return 0
  done <<<"$(_zk_session_requests)"
  return 1
}

zk_wakeups() { cat "$@" 2>/dev/null | grep -c 'woken by ZooKeeper'; }

# use_postgres [URL]: switches the test to the PostgreSQL server that
# scripts/with-postgres started for it (DLOCK_TEST_PG_*): BACKEND, DL and
# DLOCK_BACKEND then name URL (default $DLOCK_TEST_PG_URL, which holds no
# password), and DLOCK_PASSWORD is the dlock role's password. Fails, never
# skips, when the test is not run under with-postgres or dlock lacks the
# postgres backend. Sets PSQL ("$PSQL" -c 'SQL': psql as the superuser,
# unaligned tuples only, see scripts/with-postgres). Holders of locks on URL
# (acquire's keepers) are killed on exit.
#   pg_key NAME [NS]       the advisory lock key of NAME in NS (default
#                          dlock), by the documented SQL: the first 8 bytes
#                          of sha256('NS NAME') as a signed bigint
#   pg_holder_pid KEY      backend pid of the session holding KEY (empty
#                          if none)
#   pg_waiting KEY         how many ungranted requests for KEY there are
#   pg_sessions NAME       how many sessions have application_name
#                          'dlock:NAME'
#   pg_client_sessions     how many client sessions there are besides the
#                          one asking
#   pg_sql SQL             "$PSQL" -c SQL, failing the test on an error
use_postgres() {
  [ -n "${DLOCK_TEST_PG_URL:-}" ] ||
    fail "DLOCK_TEST_PG_URL is not set: run this test as scripts/with-postgres [options] -- bash $0"
  if "$DLOCK_BIN" version 2>&1 | grep -A1 -E '^ +postgres ' | grep -q 'not available'; then
    fail "this dlock has no postgres backend: $("$DLOCK_BIN" version 2>&1 | grep -A1 -E '^ +postgres ' | tail -1 | sed 's/^ *//')"
  fi
  "$DLOCK_BIN" version 2>&1 | grep -qE '^ +postgres ' ||
    fail "this dlock does not know the postgres backend: $("$DLOCK_BIN" version 2>&1 | tr '\n' ' ')"
  BACKEND=${1:-$DLOCK_TEST_PG_URL}
  DL=("$DLOCK_BIN" -b "$BACKEND")
  export DLOCK_BACKEND=$BACKEND
  export DLOCK_PASSWORD=$DLOCK_TEST_PG_PASSWORD
  _cleanup_backends+=("$BACKEND")
  # shellcheck disable=SC2034 # PSQL is for the caller
  PSQL=$DLOCK_TEST_PG_PSQL
}

pg_sql() {
  local result
  result=$("$DLOCK_TEST_PG_PSQL" -c "$1" 2>&1) || fail "psql failed: $1: $result"
  printf '%s\n' "$result"
}

pg_key() {
  printf '%s\n' "SELECT ('x' || left(encode(sha256(convert_to(:'ns' || ' ' || :'name', 'UTF8')), 'hex'), 16))::bit(64)::bigint;" |
    "$DLOCK_TEST_PG_PSQL" -v ns="${2:-dlock}" -v name="$1"
}

# The advisory lock on a bigint key: classid holds its high 32 bits, objid
# its low 32 bits, objsubid is 1.
_pg_key_match="locktype = 'advisory' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint)"

pg_holder_pid() {
  "$DLOCK_TEST_PG_PSQL" -c "SELECT pid FROM pg_locks WHERE $_pg_key_match = $1 AND granted LIMIT 1"
}

pg_waiting() {
  "$DLOCK_TEST_PG_PSQL" -c "SELECT count(*) FROM pg_locks WHERE $_pg_key_match = $1 AND NOT granted"
}

pg_client_sessions() {
  "$DLOCK_TEST_PG_PSQL" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
}

pg_sessions() {
  printf '%s\n' "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dlock:' || :'name';" |
    "$DLOCK_TEST_PG_PSQL" -v name="$1"
}

# use_etcd [URL]: switches the test to the etcd server (or cluster) that
# scripts/with-etcd started for it (DLOCK_TEST_ETCD_*): BACKEND, DL and
# DLOCK_BACKEND then name URL (default: $DLOCK_TEST_ETCD_URL, with the user
# dlock in it under --auth, its password then in DLOCK_PASSWORD, and
# ?cacert= of the test CA under --tls). Fails, never skips, when the test is
# not run under with-etcd or dlock lacks the etcd backend (a module,
# dlock-etcd.so). Sets ETCDCTL (etcdctl against every member, as root under
# --auth: "$ETCDCTL" get --prefix dlock/). etcd locks are not session-bound:
# acquire leaves no keeper, so there are no holders for the cleanup to kill
# (the holder pid of an acquired lock is the finished acquire's).
#   etcd_url HOSTS             the URL of use_etcd's default for HOSTS
#                              (host:port[,host:port...])
#   etcd_keys PREFIX           JSON array of the keys under PREFIX by create
#                              revision: key, create_revision, lease (hex),
#                              value
#   etcd_key_count NAME [NS]   how many contender keys lock NAME has (the
#                              direct children of NS/NAME/, NS default dlock)
#   etcd_lease_count           how many leases etcd has
#   etcd_stop I / etcd_start I stop (SIGKILL) / start member I again, waiting
#                              until it is gone / healthy
#   etcd_member_pid I          member I's pid
#   etcd_leader                the number I of the member that leads
#   etcd_renewals [I]          lease keep-alives that member I (default: the
#                              leader) has seen as leader
#   etcd_wait_renewed          wait (3 s) until a keep-alive lands on the
#                              leader; fails if none does. Sets
#                              ETCD_RENEWED_AFTER: a now_ms reading before
#                              that keep-alive landed (so the lease it renewed
#                              lasts at least until then + T)
use_etcd() {
  [ -n "${DLOCK_TEST_ETCD_URL:-}" ] ||
    fail "DLOCK_TEST_ETCD_URL is not set: run this test as scripts/with-etcd [options] -- bash $0"
  if "$DLOCK_BIN" version 2>&1 | grep -A1 -E '^ +etcd ' | grep -q 'not available'; then
    fail "this dlock has no etcd backend: $("$DLOCK_BIN" version 2>&1 | grep -A1 -E '^ +etcd ' | tail -1 | sed 's/^ *//')"
  fi
  "$DLOCK_BIN" version 2>&1 | grep -qE '^ +etcd ' ||
    fail "this dlock does not know the etcd backend: $("$DLOCK_BIN" version 2>&1 | tr '\n' ' ')"
  BACKEND=${1:-$(etcd_url "${DLOCK_TEST_ETCD_URL#*://}")}
  DL=("$DLOCK_BIN" -b "$BACKEND")
  export DLOCK_BACKEND=$BACKEND
  [ -n "${DLOCK_TEST_ETCD_PASSWORD:-}" ] && export DLOCK_PASSWORD=$DLOCK_TEST_ETCD_PASSWORD
  # shellcheck disable=SC2034 # ETCDCTL is for the caller
  ETCDCTL=$DLOCK_TEST_ETCD_CTL
}

etcd_url() {
  local url=${DLOCK_TEST_ETCD_URL%%://*}://
  [ -n "${DLOCK_TEST_ETCD_USER:-}" ] && url+=$DLOCK_TEST_ETCD_USER@
  url+=$1
  [ -n "${DLOCK_TEST_ETCD_CACERT:-}" ] && url+="?cacert=$DLOCK_TEST_ETCD_CACERT"
  printf '%s\n' "$url"
}

etcd_keys() {
  "$DLOCK_TEST_ETCD_CTL" get --prefix "$1" -w json | python3 -c 'import base64, json, sys
kvs = json.load(sys.stdin).get("kvs") or []
out = [{"key": base64.b64decode(kv["key"]).decode(), "create_revision": kv.get("create_revision", 0),
        "lease": "%x" % kv.get("lease", 0), "value": base64.b64decode(kv.get("value", "")).decode(errors="replace")}
       for kv in kvs]
print(json.dumps(sorted(out, key=lambda kv: kv["create_revision"])))'
}

etcd_key_count() {
  local prefix=${2:-dlock}/$1/
  etcd_keys "$prefix" | json "len([k for k in d if '/' not in k['key'][${#prefix}:]])"
}

etcd_lease_count() {
  "$DLOCK_TEST_ETCD_CTL" lease list -w json | json 'len(d.get("leases") or [])'
}

etcd_stop() {
  local stop=DLOCK_TEST_ETCD_STOP_$1
  "${!stop}" || fail "could not stop etcd member $1"
}

etcd_start() {
  local start=DLOCK_TEST_ETCD_START_$1
  "${!start}" || fail "etcd member $1 did not start again"
}

etcd_member_pid() {
  local pidfile=DLOCK_TEST_ETCD_PIDFILE_$1
  cat "${!pidfile}"
}

etcd_leader() { "$DLOCK_TEST_ETCD_LEADER"; }

etcd_renewals() {
  local i=${1:-} member_ports
  [ -n "$i" ] || i=$(etcd_leader) || return 1
  read -ra member_ports <<<"$DLOCK_TEST_ETCD_PORTS"
  curl -sf --noproxy '*' --max-time 2 ${DLOCK_TEST_ETCD_CACERT:+--cacert "$DLOCK_TEST_ETCD_CACERT"} \
    ${DLOCK_TEST_ETCD_CERT:+--cert "$DLOCK_TEST_ETCD_CERT" --key "$DLOCK_TEST_ETCD_KEY"} \
    "${DLOCK_TEST_ETCD_ENDPOINTS%%://*}://127.0.0.1:${member_ports[$((i - 1))]}/metrics" |
    awk '$1 == "etcd_debugging_lease_renewed_total" { printf "%d\n", $2 + 0; found = 1 } END { exit !found }'
}

# shellcheck disable=SC2034 # ETCD_RENEWED_AFTER is for the caller
etcd_wait_renewed() {
  local leader
  leader=$(etcd_leader) || fail "no etcd member leads"
  ETCD_RENEWED_AFTER=$(now_ms)
  _etcd_renewed=$(etcd_renewals "$leader") || fail "could not read member $leader's lease metrics"
  wait_until -t 3 _etcd_renewals_rose "$leader" ||
    fail "no lease keep-alive reached the leader (member $leader) within 3 s (renewals seen: $_etcd_renewed)"
}

# shellcheck disable=SC2034 # ETCD_RENEWED_AFTER is for the caller
_etcd_renewals_rose() {
  local n started
  started=$(now_ms)
  n=$(etcd_renewals "$1") || return 1
  [ "$n" -gt "$_etcd_renewed" ] && return 0
  ETCD_RENEWED_AFTER=$started
  return 1
}

# Session-bound backends: acquire leaves a keeper process holding the lock.
keeper_of() { "${DL[@]}" status "$1" --json 2>/dev/null | json 'd["holder"]["pid"]'; }

# acquire_bg NAME OPTS...: token=$(dlock acquire NAME OPTS) must return: the
# keeper may not keep the substitution's pipe open. Sets token and keeper.
acquire_bg() {
  local name=$1
  shift
  rm -f "$tmpdir/acq.rc" "$tmpdir/acq.token"
  (
    t=$("${DL[@]}" acquire "$name" "$@" 2>"$tmpdir/acq.err" </dev/null)
    echo $? >"$tmpdir/acq.rc.tmp"
    printf '%s' "$t" >"$tmpdir/acq.token"
    mv "$tmpdir/acq.rc.tmp" "$tmpdir/acq.rc"
  ) &
  track $!
  wait_until -t 5 test -e "$tmpdir/acq.rc" ||
    fail "t=\$(dlock acquire $name $*) did not return within 5s: something keeps its stdout/stderr open"
  [ "$(cat "$tmpdir/acq.rc")" = 0 ] || fail "acquire $name exited $(cat "$tmpdir/acq.rc"): $(cat "$tmpdir/acq.err")"
  token=$(cat "$tmpdir/acq.token")
  [[ $token =~ ^[^[:space:]]+$ ]] || fail "acquire $name printed '$token', expected a token only"
  keeper=$(keeper_of "$name")
  [[ $keeper =~ ^[0-9]+$ ]] || fail "status $name --json shows no holder pid after acquire"
  track "$keeper"
  is_alive "$keeper" || fail "the holder pid $keeper of $name is not a live process (the keeper)"
}

# check_acquire_json NAME TTL: `dlock acquire NAME --ttl TTL --json` prints
# one document with name, token, fence, ttl_ms and expires_at: ttl_ms is the
# lease left when it was printed (at most TTL), expires_at that instant plus
# ttl_ms; a keeper adds keeper_window_ms and renew_by. Leaves the document
# in $out.
check_acquire_json() {
  local before after
  before=$(now_ms)
  capture "${DL[@]}" acquire "$1" --ttl "$2" --json
  after=$(now_ms)
  [ "$rc" = 0 ] || fail "acquire --json exited $rc; stderr: $err"
  printf '%s' "$out" >"$tmpdir/acq.json"
  python3 - "$tmpdir/acq.json" "$1" "$(duration_ms "$2")" "$before" "$after" <<'PY' || fail "acquire --json is wrong: $out"
import datetime, json, sys, re
d = json.load(open(sys.argv[1]))
ttl, before, after = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def ms(text):
    assert isinstance(text, str) and re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", text), d
    when = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(when.timestamp() * 1000 + 0.5)
assert set(d) >= {"name", "token", "fence", "ttl_ms", "expires_at"}, d
assert d["name"] == sys.argv[2], d
assert isinstance(d["token"], str) and d["token"], d
assert isinstance(d["fence"], int) and d["fence"] > 0, d
assert isinstance(d["ttl_ms"], int) and 0 < d["ttl_ms"] <= ttl, d
assert before + d["ttl_ms"] - 1 <= ms(d["expires_at"]) <= min(after + d["ttl_ms"] + 1, after + ttl), d
if "keeper_window_ms" in d:
    assert isinstance(d["keeper_window_ms"], int) and d["ttl_ms"] <= d["keeper_window_ms"] <= ttl, d
    assert ms(d["expires_at"]) <= ms(d["renew_by"]) <= after + ttl, d
PY
}
duration_ms() { case $1 in *ms) echo "${1%ms}" ;; *s) echo $((${1%s} * 1000)) ;; esac; }

# --- passwords (the auth tests) -------------------------------------------
# The caller sets secret (the right password), port (the server's port) and
# all_output (a file); AUTH_MESSAGE_RE is what a refusal must mention.
AUTH_MESSAGE_RE='auth|password|permi'

# auth_keep: remember what the last capture printed, for a final check
# that no password was ever printed.
auth_keep() { printf '%s\n%s\n' "$out" "$err" >>"$all_output"; }

# auth_works WHAT CMD...: a run through CMD succeeds; the job records what ps
# shows of dlock (its parent) and its environment. The password must be in
# neither.
auth_works() {
  local what=$1
  shift
  rm -f "$tmpdir/ps.txt" "$tmpdir/env.txt"
  capture "$@" run auth.run -- sh -c 'ps -ww -o args= -p "$PPID" >"$1/ps.txt"; env >"$1/env.txt"; echo "$DLOCK_FENCE"' \
    job "$tmpdir"
  auth_keep
  [ "$rc" = 0 ] || fail "$what: run exited $rc, expected 0; stderr: $err"
  [[ $out =~ ^[0-9]+$ ]] || fail "$what: the job saw DLOCK_FENCE='$out'"
  grep -q "127.0.0.1:$port" "$tmpdir/ps.txt" || fail "$what: ps does not show dlock's URL (is ps working?): $(cat "$tmpdir/ps.txt")"
  grep -qF -- "$secret" "$tmpdir/ps.txt" && fail "$what: the password shows in ps while the job runs: $(cat "$tmpdir/ps.txt")"
  local backend_env
  backend_env=$(grep '^DLOCK_BACKEND=' "$tmpdir/env.txt")
  case $backend_env in *"$secret"*) fail "$what: the job's DLOCK_BACKEND holds the password: $backend_env" ;; esac
  case $backend_env in *"127.0.0.1:$port"*) ;; *) fail "$what: the job's DLOCK_BACKEND does not name the server: $backend_env" ;; esac
}

# auth_refused WHAT CMD...: a run through CMD exits 77 with one line naming
# authentication or permission, and its job does not run.
auth_refused() {
  local what=$1
  shift
  rm -f "$tmpdir/ran"
  capture "$@" run auth.run -- touch "$tmpdir/ran"
  auth_keep
  [ "$rc" = 77 ] || fail "$what: exit $rc, expected 77; stdout: $out; stderr: $err"
  assert_one_line_message "$what" "$err"
  printf '%s\n' "$err" | grep -qiE "$AUTH_MESSAGE_RE" || fail "$what: the message names neither authentication nor permission: $err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran"
}

# --- a grant after a long wait ----------------------------------------------
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

# --- status, list and ping -------------------------------------------------
# The scenario the server backends' *_status_list_ping tests share: holder h
# holds app/one (start_status_holder); the test adds its backend's own checks
# (what the server stores, what ping shows of a cluster) around these.

# The forms of the release token that nothing may print (assert_no_token):
# start_status_holder puts DLOCK_TOKEN here, a test may add others (e.g. the
# raw value the server keeps).
SECRET_TOKENS=()

# start_status_holder [TOKEN_RE [FENCE_RE]]: start_holder h app/one --ttl 20s.
# Sets one_pid (its dlock), one_token and one_fence (the DLOCK_TOKEN and
# DLOCK_FENCE its child saw: they must match TOKEN_RE and FENCE_RE, default
# anything not empty) and SECRET_TOKENS=(one_token).
# shellcheck disable=SC2034 # one_token and one_fence are for the caller
start_status_holder() {
  local token_re=${1:-.} fence_re=${2:-.}
  start_holder h app/one --ttl 20s
  one_pid=$HOLDER_PID
  one_token=$(cat "$tmpdir/h.token")
  one_fence=$(cat "$tmpdir/h.fence")
  [[ $one_token =~ $token_re ]] && [[ $one_fence =~ $fence_re ]] ||
    fail "holder did not get DLOCK_TOKEN/DLOCK_FENCE (token '$one_token', fence '$one_fence')"
  SECRET_TOKENS=("$one_token")
}

# assert_no_token WHAT TEXT: TEXT shows none of SECRET_TOKENS.
assert_no_token() {
  local secret
  for secret in "${SECRET_TOKENS[@]}"; do
    [ -n "$secret" ] || continue
    case $2 in *"$secret"*) fail "$1 prints the release token: $2" ;; esac
  done
}

# check_held_status_text NAME PID FENCE: `dlock status NAME` exits 0 and
# shows the holder PID, the FENCE and this host, never the token. Leaves the
# output in $out and $err for the backend's own checks (the lease left).
check_held_status_text() {
  capture "${DL[@]}" status "$1"
  [ "$rc" = 0 ] || fail "status of a held lock exited $rc, expected 0; stderr: $err"
  case $out in *"$2"*) ;; *) fail "status does not show the holder pid $2: $out" ;; esac
  case $out in *"$3"*) ;; *) fail "status does not show the fence $3: $out" ;; esac
  case $out in *"$(hostname)"*) ;; *) fail "status does not show the holder's host: $out" ;; esac
  assert_no_token "status" "$out$err"
}

# check_held_status_json NAME PID FENCE TTL_LEFT_OK: `dlock status NAME
# --json` exits 0 without the token: name NAME, held, holder {pid PID, this
# host and user, a command that is start_holder's, since}, fence FENCE, no
# waiters; TTL_LEFT_OK is the backend's condition (Python) on ttl_left_ms,
# bound to t (None if absent), e.g. 'isinstance(t, int) and 0 < t <= 20000'.
check_held_status_json() {
  capture "${DL[@]}" status "$1" --json
  [ "$rc" = 0 ] || fail "status --json of a held lock exited $rc; stderr: $err"
  assert_no_token "status --json" "$out$err"
  printf '%s' "$out" >"$tmpdir/status.json"
  python3 - "$tmpdir/status.json" "$1" "$2" "$3" "$(hostname)" "$(id -un)" "$4" <<'PY' || fail "status --json is wrong: $out"
import json, sys
path, name, pid, fence, host, user, ttl_left_ok = sys.argv[1:]
d = json.load(open(path))
def check(cond, what):
    if not cond:
        sys.exit("status --json: " + what)
check(d.get("name") == name, "name is %r" % d.get("name"))
check(d.get("held") is True, "held is %r" % d.get("held"))
h = d.get("holder")
check(isinstance(h, dict), "holder is not an object")
check(h.get("pid") == int(pid), "holder.pid %r != dlock's pid %s" % (h.get("pid"), pid))
check(h.get("host") == host, "holder.host %r != %s" % (h.get("host"), host))
check(h.get("user") == user, "holder.user %r != %s" % (h.get("user"), user))
check(isinstance(h.get("command"), str) and "holder" in h["command"], "holder.command %r" % h.get("command"))
check(isinstance(h.get("since"), str) and h["since"][:2] == "20", "holder.since %r" % h.get("since"))
check(d.get("fence") == int(fence), "fence %r != the job's DLOCK_FENCE %s" % (d.get("fence"), fence))
check(d.get("waiters") == 0, "waiters %r" % d.get("waiters"))
t = d.get("ttl_left_ms")
check(eval(ttl_left_ok), "ttl_left_ms %r, expected %s" % (t, ttl_left_ok))
PY
}

# check_waiters NAME COUNT [QUEUED_CHECK [GONE_CHECK]]: COUNT runs of `dlock
# run NAME --wait 20s` queue behind NAME's holder: status --json counts COUNT
# waiters, QUEUED_CHECK runs (a command checking the backend's own view of the
# queue, failing the test), status text shows "waiters: COUNT" and no token.
# Then SIGTERM: each waiter exits 143, status --json counts none and
# GONE_CHECK runs (the backend's view again: the waiters left nothing behind).
check_waiters() {
  local name=$1 count=$2 queued=${3:-} gone=${4:-} i pids=()
  for ((i = 1; i <= count; i++)); do
    "${DL[@]}" run "$name" --wait 20s -- true </dev/null 2>"$tmpdir/waiter$i.err" &
    pids+=($!)
    track $!
  done
  wait_until _counts_waiters "$name" "$count" ||
    fail "status --json never counted the $count waiting run(s) (now $(lock_waiters "$name")); stderr: $(cat "$tmpdir"/waiter*.err)"
  [ -z "$queued" ] || "$queued" || fail "$queued (with $count waiter(s) queued) failed"
  capture "${DL[@]}" status "$name"
  printf '%s\n' "$out" | grep -qE "^waiters: +$count\$" || fail "status text does not show $count waiter(s): $out"
  assert_no_token "status with $count waiter(s)" "$out$err"
  kill -TERM "${pids[@]}"
  for ((i = 1; i <= count; i++)); do
    wait_exit "${pids[i - 1]}" 5
    [ "$rc" = 143 ] || fail "waiter $i ended with $rc after SIGTERM, expected 143; stderr: $(cat "$tmpdir/waiter$i.err")"
  done
  wait_until -t 3 has_no_waiter "$name" || fail "the interrupted waiters are still counted (now $(lock_waiters "$name"))"
  [ -z "$gone" ] || "$gone" || fail "$gone (after the waiters were interrupted) failed"
}

_counts_waiters() { [ "$(lock_waiters "$1")" = "$2" ]; }

# check_free_status: free locks exit 3 and status --json says held false:
# nothing.here, never used, and app/three, which a run takes and releases
# first (three_fence is the DLOCK_FENCE that run saw).
# shellcheck disable=SC2034 # three_fence is for the caller
check_free_status() {
  capture "${DL[@]}" status nothing.here
  [ "$rc" = 3 ] || fail "status of a never-used lock exited $rc, expected 3; stderr: $err"
  capture "${DL[@]}" status nothing.here --json
  [ "$rc" = 3 ] || fail "status --json of a never-used lock exited $rc, expected 3"
  [ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a never-used lock: held is not false: $out"
  three_fence=$("${DL[@]}" run app/three -- sh -c 'echo "$DLOCK_FENCE"' </dev/null) || fail "run app/three failed"
  capture "${DL[@]}" status app/three --json
  [ "$rc" = 3 ] || fail "status of a released lock exited $rc, expected 3"
  [ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a released lock: held is not false: $out"
}

# start_list_locks BULK THIRD: the locks the list checks find besides
# app/one: holders h2 of app/two and h3 of THIRD (two_pid and third_pid are
# their dlocks), app/ns acquired in namespace elsewhere and bulk/1 ...
# bulk/BULK acquired here.
# shellcheck disable=SC2034 # two_pid and third_pid are for the caller
start_list_locks() {
  local i
  start_holder h2 app/two
  two_pid=$HOLDER_PID
  start_holder h3 "$2"
  third_pid=$HOLDER_PID
  [ "$third_pid" -gt 0 ] || fail "no pid for holder h3"
  capture "${DL[@]}" --namespace elsewhere acquire app/ns --ttl 30s
  [ "$rc" = 0 ] || fail "acquire in namespace elsewhere exited $rc; stderr: $err"
  for ((i = 1; i <= $1; i++)); do
    "${DL[@]}" acquire "bulk/$i" --ttl 60s </dev/null >/dev/null || fail "acquire bulk/$i failed"
  done
}

# check_list_rows BULK "NOT_LISTED..." HELD...: `dlock list` exits 0 without
# the token and shows exactly one row for each lock HELD, one_pid, BULK rows
# bulk/N, and none of the (space-separated) NOT_LISTED: locks that are free,
# of another namespace or not dlock's.
check_list_rows() {
  local bulk=$1 not_listed n
  read -ra not_listed <<<"$2"
  shift 2
  capture "${DL[@]}" list
  [ "$rc" = 0 ] || fail "list exited $rc; stderr: $err"
  assert_no_token "list" "$out$err"
  for n in "$@"; do
    [ "$(printf '%s\n' "$out" | grep -cE "^${n}[[:space:]]")" = 1 ] || fail "list does not show exactly one row for $n: $out"
  done
  for n in "${not_listed[@]}"; do
    case $out in *"$n"*) fail "list shows $n, a lock that is not held in this namespace: $out" ;; esac
  done
  case $out in *"$one_pid"*) ;; *) fail "list does not show holder pid $one_pid: $out" ;; esac
  [ "$(printf '%s\n' "$out" | grep -cE '^bulk/[0-9]+[[:space:]]')" = "$bulk" ] || fail "list does not show all $bulk bulk/N locks: $out"
}

# check_list_prefix PREFIX NAME:PID...: `dlock list PREFIX --json` exits 0
# without the token and holds exactly the locks NAME (in sort order), each
# held by PID.
check_list_prefix() {
  local prefix=$1 want="" got held
  shift
  capture "${DL[@]}" list "$prefix" --json
  [ "$rc" = 0 ] || fail "list $prefix --json exited $rc; stderr: $err"
  assert_no_token "list $prefix --json" "$out"
  got=$(printf '%s' "$out" | json 'sorted((x["name"], x["held"], x["holder"]["pid"]) for x in d) if isinstance(d, list) else "not an array"')
  for held in "$@"; do
    want+="${want:+, }[\"${held%:*}\", true, ${held##*:}]"
  done
  want="[$want]"
  [ "$got" = "$want" ] || fail "list $prefix --json: got $got, expected $want"
}

# check_list_json TOTAL: `list --json` shows app/ns alone in namespace
# elsewhere (start_list_locks) and an empty array for a prefix nothing
# has; `dlock list --json` exits 0 without the token and holds TOTAL locks.
# Leaves that document in $out.
check_list_json() {
  capture "${DL[@]}" --namespace elsewhere list --json
  [ "$(printf '%s' "$out" | json '[x["name"] for x in d]')" = '["app/ns"]' ] || fail "list in namespace elsewhere: $out"
  capture "${DL[@]}" list zzz --json
  [ "$rc" = 0 ] && [ "$(printf '%s' "$out" | json 'd')" = "[]" ] || fail "list with no match is not an empty array ($rc): $out"
  capture "${DL[@]}" list --json
  [ "$rc" = 0 ] || fail "list --json exited $rc; stderr: $err"
  assert_no_token "list --json" "$out"
  [ "$(printf '%s' "$out" | json 'len(d)')" = "$1" ] ||
    fail "list --json does not hold $1 locks: $(printf '%s' "$out" | json '[x["name"] for x in d]')"
}

# check_ping VERSION PORT [ROLE]: `dlock ping` of a single server exits 0,
# prints nothing on stderr and shows the server's VERSION, its ROLE (e.g.
# master, standalone) and a round-trip time; ping --json says ok, the node
# reachable at an address with PORT, with VERSION and ROLE, and a round trip.
# Leaves the document in $out.
check_ping() {
  local version=$1 port=$2 role=${3:-}
  capture "${DL[@]}" ping
  [ "$rc" = 0 ] || fail "ping exited $rc; stdout: $out; stderr: $err"
  case $out in *"$version"*) ;; *) fail "ping does not show the server version $version: $out" ;; esac
  [ -z "$role" ] || printf '%s\n' "$out" | grep -qi "$role" || fail "ping does not show the role $role: $out"
  printf '%s\n' "$out" | grep -qE '[0-9.]+ ?(ms|µs|us)' || fail "ping does not show a round-trip time: $out"
  [ -z "$err" ] || fail "ping printed on stderr: $err"
  capture "${DL[@]}" ping --json
  [ "$rc" = 0 ] || fail "ping --json exited $rc; stderr: $err"
  printf '%s' "$out" >"$tmpdir/ping.json"
  python3 - "$tmpdir/ping.json" "$version" "$port" "$role" <<'PY' || fail "ping --json is wrong: $out"
import json, sys
d = json.load(open(sys.argv[1]))
version, port, role = sys.argv[2:]
assert d["ok"] is True, d
node = d["nodes"][0]
assert node["reachable"] is True, node
assert version in node["version"], node
assert role in json.dumps(node), node
assert port in node["address"], node
assert isinstance(node["rtt_ms"], (int, float)) and node["rtt_ms"] >= 0, node
PY
}

# check_holders_released ID...: release_holder each ID (h among them): h's
# dlock exits 0 and app/one is free.
check_holders_released() {
  local id
  for id in "$@"; do release_holder "$id"; done
  wait_exit "$one_pid"
  [ "$rc" = 0 ] || fail "holder h exited $rc; stderr: $(cat "$tmpdir/h.err")"
  is_free app/one || fail "app/one is still held after its holder ended"
}

# --- unreachable servers ----------------------------------------------------
# What the server backends' *_unreachable tests share: an unreachable server
# is 69 with one line, never a hang; a malformed URL is 78. Jobs touch
# $tmpdir/ran, which must not appear.

# free_port: a TCP port on 127.0.0.1 that nothing listens on (bound once by
# the kernel's choice, then closed).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_silent_listener: a listener on 127.0.0.1 that accepts connections and
# never writes a byte; sets SILENT_PORT.
# shellcheck disable=SC2034 # SILENT_PORT is for the caller
start_silent_listener() {
  rm -f "$tmpdir/silent.port"
  python3 - "$tmpdir/silent.port" <<'PY' &
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    conn, _ = s.accept()
    held.append(conn)  # kept open, never answered
PY
  track $!
  wait_until test -s "$tmpdir/silent.port" || fail "the silent listener did not start"
  SILENT_PORT=$(cat "$tmpdir/silent.port")
}

# check_unavailable WHAT LIMIT_MS CMD...: CMD exits 69 with one line within
# LIMIT_MS and never runs the job.
check_unavailable() {
  local what=$1 limit=$2 started elapsed
  shift 2
  rm -f "$tmpdir/ran"
  started=$(now_ms)
  capture "$@"
  elapsed=$(($(now_ms) - started))
  [ "$rc" = 69 ] || fail "$what: exit $rc, expected 69; stderr: $err"
  assert_one_line_message "$what" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran"
  [ "$elapsed" -lt "$limit" ] || fail "$what: took ${elapsed} ms (limit $limit ms)"
  echo "$what: 69 after ${elapsed} ms"
}

# check_ping_unreachable WHAT LIMIT_MS CMD...: CMD (a ping) exits 69 within
# LIMIT_MS and reports the node unreachable on stdout.
check_ping_unreachable() {
  local what=$1 limit=$2 started elapsed
  shift 2
  started=$(now_ms)
  capture "$@"
  elapsed=$(($(now_ms) - started))
  [ "$rc" = 69 ] || fail "$what: exit $rc, expected 69; stdout: $out; stderr: $err"
  printf '%s\n' "$out" | grep -qi unreachable || fail "$what: ping does not report the node unreachable: $out"
  [ "$elapsed" -lt "$limit" ] || fail "$what: took ${elapsed} ms (limit $limit ms)"
}

# check_unavailable_commands WHERE LIMIT_MS URL [OPTIONS...]: with URL, where
# no server answers (WHERE says why, e.g. "nothing listening"), and global
# OPTIONS, run, run --wait 10s, acquire, status, list and release --force
# exit 69 with one line and ping reports the node unreachable, each within
# LIMIT_MS.
check_unavailable_commands() {
  local where=$1 limit=$2 url=$3 opts
  shift 3
  opts=${*:+ $*}
  local dl=("$DLOCK_BIN" -b "$url" "$@")
  check_unavailable "run$opts, $where" "$limit" "${dl[@]}" run u -- touch "$tmpdir/ran"
  check_unavailable "run --wait 10s$opts, $where" "$limit" "${dl[@]}" run u --wait 10s -- touch "$tmpdir/ran"
  check_unavailable "acquire$opts, $where" "$limit" "${dl[@]}" acquire u
  check_unavailable "status$opts, $where" "$limit" "${dl[@]}" status u
  check_unavailable "list$opts, $where" "$limit" "${dl[@]}" list
  # With --json a script reading stdout gets an error document, not nothing.
  local command
  for command in status list; do
    # shellcheck disable=SC2046 # status takes the name u
    check_unavailable "$command --json$opts, $where" "$limit" "${dl[@]}" $command $([ $command = status ] && echo u) --json
    [ "$(printf '%s' "$out" | json 'd["error"]["code"]')" = 69 ] && [ -n "$(printf '%s' "$out" | json 'd["error"]["message"]')" ] ||
      fail "$command --json$opts, $where: stdout is not an error document with code 69: '$out'"
  done
  check_unavailable "release --force$opts, $where" "$limit" "${dl[@]}" release u --force
  check_ping_unreachable "ping$opts, $where" "$limit" "${dl[@]}" ping
}

# check_silent_server URL LIMIT_MS DEFAULT_LIMIT_MS: with URL, a server that
# accepts connections and never answers (start_silent_listener), run,
# acquire, status (--connect-timeout before and after the command) and ping
# with --connect-timeout 500ms fail within LIMIT_MS, a run without it (the
# 2 s default) within DEFAULT_LIMIT_MS: 69 with one line, ping reporting the
# node unreachable.
check_silent_server() {
  local url=$1 limit=$2 default_limit=$3 where="silent server"
  check_unavailable "run --connect-timeout 500ms, $where" "$limit" \
    "$DLOCK_BIN" -b "$url" --connect-timeout 500ms run u -- touch "$tmpdir/ran"
  check_unavailable "acquire --connect-timeout 500ms, $where" "$limit" \
    "$DLOCK_BIN" -b "$url" --connect-timeout 500ms acquire u
  check_unavailable "status --connect-timeout 500ms, $where" "$limit" \
    "$DLOCK_BIN" -b "$url" --connect-timeout 500ms status u
  check_unavailable "status u --connect-timeout 500ms (the option after the command), $where" "$limit" \
    "$DLOCK_BIN" -b "$url" status u --connect-timeout 500ms
  check_ping_unreachable "ping --connect-timeout 500ms, $where" "$limit" \
    "$DLOCK_BIN" -b "$url" --connect-timeout 500ms ping
  check_unavailable "run with the default connect timeout, $where" "$default_limit" \
    "$DLOCK_BIN" -b "$url" run u -- touch "$tmpdir/ran"
}

# check_malformed_urls URL...: with each URL, run exits 78 (a configuration
# error, not "unavailable") with one line and never runs the job.
check_malformed_urls() {
  local url
  for url in "$@"; do
    rm -f "$tmpdir/ran"
    capture "$DLOCK_BIN" -b "$url" run u -- touch "$tmpdir/ran"
    [ "$rc" = 78 ] || fail "the malformed URL $url: exit $rc, expected 78; stderr: $err"
    assert_one_line_message "the malformed URL $url" "$err"
    [ ! -e "$tmpdir/ran" ] || fail "the malformed URL $url: the job ran"
  done
}
