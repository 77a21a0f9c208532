#!/usr/bin/env bash
# PostgreSQL frozen (SIGSTOP of the postmaster and every backend) under a
# running job: renewals on the lock's session go unanswered, so dlock must
# have the job gone and exit 76 (one line) before the lease it last renewed
# can lapse, --ttl 2s after the freeze at the latest. A run against the
# frozen server exits 69 after --connect-timeout, never hangs. Once thawed,
# the server works again.
SCENARIO="postgres: server paused under a running job"
. "$(dirname "$0")/lib.sh"
use_postgres

server_pids() {
  local postmaster
  postmaster=$(cat "$DLOCK_TEST_PG_PIDFILE")
  echo "$postmaster" $(pgrep -P "$postmaster")
}
frozen=()
freeze() {
  read -ra frozen <<<"$(server_pids)"
  kill -STOP "${frozen[@]}"
}
thaw() { ((${#frozen[@]})) && kill -CONT "${frozen[@]}" 2>/dev/null; }
trap 'thaw; _cleanup' EXIT

start_job x --ttl 2s
is_held x || fail "status x: not held while the job runs"
since=$(now_ms)
freeze
check_job_stopped "$since" 2000 "the server froze" true

started=$(now_ms)
capture "${DL[@]}" --connect-timeout 500ms run y -- touch "$tmpdir/ran"
elapsed=$(($(now_ms) - started))
thaw
[ "$rc" = 69 ] || fail "run against the frozen server exited $rc, expected 69; stderr: $err"
assert_one_line_message "run against the frozen server" "$err"
[ ! -e "$tmpdir/ran" ] || fail "the job ran against the frozen server"
[ "$elapsed" -lt 1500 ] || fail "run --connect-timeout 500ms against the frozen server took ${elapsed} ms to fail"

capture "${DL[@]}" --connect-timeout 5s run x --wait 5s -- true
[ "$rc" = 0 ] || fail "run x after the thaw exited $rc; stderr: $err"
pass
