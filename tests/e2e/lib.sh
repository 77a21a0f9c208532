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

_cleanup() {
  local pid
  exec 2>/dev/null # no "Killed" job notices for what is killed here
  # Lock holders in our private directory (dlock run, acquire keepers).
  if [ -d "$LOCKDIR" ]; then
    for pid in $("$DLOCK_BIN" -b "$BACKEND" list --json 2>/dev/null |
      python3 -c 'import json,sys
try:
    for l in json.load(sys.stdin):
        if l.get("holder") and l["holder"].get("pid"): print(l["holder"]["pid"])
except Exception: pass' 2>/dev/null); do
      _tracked_pids+=("$pid")
    done
  fi
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

# use_redis [URL]: switches the test to the Redis server that
# scripts/with-redis started for it (DLOCK_TEST_REDIS_*): BACKEND, DL and
# DLOCK_BACKEND then name URL (default $DLOCK_TEST_REDIS_URL). Fails, never
# skips, when the test is not run under with-redis or dlock lacks the redis
# backend. Sets RCLI to the redis-cli wrapper of that server.
#   redis_key NAME PART [NS]   the server-side key of a lock: {NS:NAME}:PART
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
