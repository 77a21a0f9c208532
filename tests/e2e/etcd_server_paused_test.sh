#!/usr/bin/env bash
# The etcd server (a single member) is frozen (SIGSTOP) for longer than the
# lease while `dlock run --ttl 2s` runs a job: the connection stays open but
# no keep-alive is answered, so dlock must have the job gone and exit 76 (one
# line) before the lease it last kept alive could have lapsed. The freeze
# comes right after a keep-alive landed, so T after the freeze is T after
# the last confirmed keep-alive (give or take a poll). Once thawed, etcd
# lets the lease expire and the lock is free for the next holder, with a
# greater fence.
SCENARIO="etcd: server paused under a running job"
. "$(dirname "$0")/lib.sh"
use_etcd

name=paused.server
ttl_ms=2000
start_job "$name" --ttl 2s
is_held "$name" || fail "the lock is not held while the job runs"
[ "$(etcd_key_count "$name")" = 1 ] || fail "dlock/$name/ does not hold exactly one key while the job runs: $(etcd_keys "dlock/$name/")"
fence=$("${DL[@]}" status "$name" --json | json 'd["fence"]')
granted=$("$ETCDCTL" lease timetolive "$(etcd_keys "dlock/$name/" | json 'd[0]["lease"]')" -w json | json 'd["granted-ttl"]')
[ "$granted" = 2 ] || fail "--ttl 2s gave the lock's lease a TTL of $granted s, expected 2"
# Freeze right after a keep-alive landed: t0 is then (nearly) the freeze.
etcd_wait_renewed

server=$(etcd_member_pid 1)
# shellcheck disable=SC2317 # called by check_job_stopped
thaw() { kill -CONT "$server" 2>/dev/null; }
trap 'thaw; _cleanup' EXIT
frozen=$(now_ms)
kill -STOP "$server"
# The freeze lasts until the job is gone and dlock has given up, and at least
# half a second longer than the lease: the pause itself is under test.
check_job_stopped "$frozen" "$ttl_ms" "the server froze" thaw

# Thawed past the lease, etcd expires it (its lessor looks every 500 ms)
# and the lock is free, with a greater fence for the next holder.
wait_until -t 5 is_free "$name" || fail "the lock is still held 5 s after the server thawed past the lease: $(etcd_keys "dlock/$name/")"
capture "${DL[@]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run after the thaw exited $rc; stderr: $err"
[ "$out" -gt "$fence" ] 2>/dev/null || fail "the fence after the thaw ($out) is not greater than the lost holder's ($fence)"
pass
