#!/usr/bin/env bash
# The ZooKeeper server is frozen (SIGSTOP) for longer than the session
# timeout while `dlock run --ttl 2s` runs a job: the connection stays open but
# nothing answers, so dlock must have the job gone and exit 76 before T has
# passed since its last confirmed round trip, i.e. within T of the freeze.
# Once the server thaws, the session has expired there and the lock is free
# for the next holder, with a greater fence.
SCENARIO="zookeeper: server paused under a running job"
. "$(dirname "$0")/lib.sh"
use_zookeeper

name=paused.server
ttl_ms=2000
start_job "$name" --ttl 2s
is_held "$name" || fail "the lock is not held while the job runs"
[ "$(zk_child_count "/dlock/$name")" = 1 ] || fail "/dlock/$name does not have exactly one node while the job runs"
fence=$("${DL[@]}" status "$name" --json | json 'd["fence"]')
"$ZK4" cons | grep -q "to=$ttl_ms," || fail "no session with the timeout $ttl_ms ms on the server: $("$ZK4" cons)"
# Let at least one renewal land, so that the freeze falls on a heartbeat in
# full swing.
zk_wait_pinged

server=$(cat "$DLOCK_TEST_ZK_PIDFILE")
# shellcheck disable=SC2317 # called by check_job_stopped
thaw() { kill -CONT "$server" 2>/dev/null; }
frozen=$(now_ms)
kill -STOP "$server"
# The freeze lasts until the job is gone and dlock has given up, and at least
# half a second longer than the session timeout: the pause itself is under test.
check_job_stopped "$frozen" "$ttl_ms" "the server froze" thaw

# Thawed past the session timeout, the server expires the session (at most
# a few ticks later) and the lock is free, with a greater fence for the next
# holder.
wait_until -t 5 is_free "$name" || fail "the lock is still held 5 s after the server thawed past the session timeout"
capture "${DL[@]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run after the thaw exited $rc; stderr: $err"
[ "$out" -gt "$fence" ] 2>/dev/null || fail "the fence after the thaw ($out) is not greater than the lost holder's ($fence)"
pass
