#!/usr/bin/env bash
# The Redis server is frozen (SIGSTOP) for longer than the lease while
# `dlock run --ttl 2s` runs a job: connections stay open but nothing answers,
# so dlock must have the job gone and exit 76 before the lease it last renewed
# could have lapsed, i.e. within the ttl of the freeze. Once the server thaws,
# the lease has lapsed there and the lock is free for the next holder.
SCENARIO="redis server paused under a running job"
. "$(dirname "$0")/lib.sh"
use_redis

ttl_ms=2000
start_job paused.server --ttl 2s
[ "$("$RCLI" EXISTS "$(redis_key paused.server lock)")" = 1 ] || fail "the lock key is not on the server while the job runs"
# Let at least one renewal happen, so that the freeze lands on a heartbeat in
# full swing.
wait_renewed "$(redis_key paused.server lock)"

fence=$("${DL[@]}" status paused.server --json | json 'd["fence"]')
server=$(cat "$DLOCK_TEST_REDIS_PIDFILE")
# shellcheck disable=SC2317 # called by check_job_stopped
thaw() { kill -CONT "$server" 2>/dev/null; }
frozen=$(now_ms)
kill -STOP "$server"
# The freeze lasts until the job is gone and dlock has given up, and at least
# half a second longer than the lease: the pause itself is under test.
check_job_stopped "$frozen" "$ttl_ms" "the server froze" thaw

# Thawed after the lease ran out, the server finds the lock free (requests
# dlock queued while it was frozen must not revive it), with a greater fence
# for the next holder.
wait_until -t 1 is_free paused.server || fail "the lock is still held after the server thawed past its lease"
capture "${DL[@]}" run paused.server -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run after the thaw exited $rc; stderr: $err"
python3 -c 'import sys; sys.exit(0 if int(sys.argv[2]) > int(sys.argv[1]) else 1)' "$fence" "$out" ||
  fail "the fence after the thaw ($out) is not greater than the lost holder's ($fence)"
pass
