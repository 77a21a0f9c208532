#!/usr/bin/env bash
# The server is frozen (SIGSTOP; PostgreSQL's postmaster and every backend)
# for longer than the lease while `dlock run --ttl 2s` runs a job: the
# connection stays open but nothing answers, so dlock must have the job gone
# and exit 76 (one line) before the lease it last renewed could have lapsed,
# i.e. within the ttl of the freeze. Run once per server backend, as
# `bash server_paused_test.sh KIND` under its scripts/with-* (see
# CMakeLists.txt):
#   redis, zk, etcd  the freeze falls right after a renewal (a keep-alive, a
#                    ping) landed, on a heartbeat in full swing, and lasts
#                    until dlock has given up and half a second longer than
#                    the lease; once thawed, the server lets the lease (the
#                    session) expire, requests dlock queued while it was
#                    frozen do not revive it, and the lock is free for the
#                    next holder, with a greater fence
#   postgres         the server stays frozen: a run against it then exits 69
#                    after --connect-timeout, never hangs; once thawed, the
#                    server works again
case ${1:-} in
zk) SCENARIO="zookeeper: server paused under a running job" ;;
*) SCENARIO="${1:-?}: server paused under a running job" ;;
esac
. "$(dirname "$0")/lib.sh"
use_backend "${1:-}"

name=paused.server
ttl_ms=2000
start_job "$name" --ttl 2s
is_held "$name" || fail "the lock is not held while the job runs"
fence=$("${DL[@]}" status "$name" --json | json 'd["fence"]')

# What the server shows of the lock, and a renewal landing just before the
# freeze.
case $SERVER_KIND in
redis)
  [ "$("$RCLI" EXISTS "$(redis_key "$name" lock)")" = 1 ] || fail "the lock key is not on the server while the job runs"
  wait_renewed "$(redis_key "$name" lock)"
  ;;
zk)
  [ "$(zk_child_count "/dlock/$name")" = 2 ] || fail "/dlock/$name does not have exactly the job's two nodes while the job runs"
  "$ZK4" cons | grep -q "to=$ttl_ms," || fail "no session with the timeout $ttl_ms ms on the server: $("$ZK4" cons)"
  zk_wait_pinged
  ;;
etcd)
  [ "$(etcd_key_count "$name")" = 1 ] || fail "dlock/$name/ does not hold exactly one key while the job runs: $(etcd_keys "dlock/$name/")"
  granted=$("$ETCDCTL" lease timetolive "$(etcd_keys "dlock/$name/" | json 'd[0]["lease"]')" -w json | json 'd["granted-ttl"]')
  [ "$granted" = 2 ] || fail "--ttl 2s gave the lock's lease a TTL of $granted s, expected 2"
  # t0 is then (nearly) the freeze.
  etcd_wait_renewed
  ;;
esac

frozen=$(now_ms)
server_freeze
if [ "$SERVER_KIND" = postgres ]; then
  check_job_stopped "$frozen" "$ttl_ms" "the server froze" true

  started=$(now_ms)
  capture "${DL[@]}" --connect-timeout 500ms run y -- touch "$tmpdir/ran"
  elapsed=$(($(now_ms) - started))
  server_thaw
  [ "$rc" = 69 ] || fail "run against the frozen server exited $rc, expected 69; stderr: $err"
  assert_one_line_message "run against the frozen server" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "the job ran against the frozen server"
  [ "$elapsed" -lt 1500 ] || fail "run --connect-timeout 500ms against the frozen server took ${elapsed} ms to fail"

  capture "${DL[@]}" --connect-timeout 5s run "$name" --wait 5s -- true
  [ "$rc" = 0 ] || fail "run $name after the thaw exited $rc; stderr: $err"
  pass
fi
check_job_stopped "$frozen" "$ttl_ms" "the server froze" server_thaw

# Redis expires the key on its own clock; ZooKeeper expires the session at
# most a few ticks after the thaw, etcd's lessor looks every 500 ms.
free_within=5
[ "$SERVER_KIND" = redis ] && free_within=1
wait_until -t "$free_within" is_free "$name" ||
  fail "the lock is still held $free_within s after the server thawed past its lease$([ "$SERVER_KIND" = etcd ] && echo ": $(etcd_keys "dlock/$name/")")"
capture "${DL[@]}" run "$name" -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run after the thaw exited $rc; stderr: $err"
python3 -c 'import sys; sys.exit(0 if int(sys.argv[2]) > int(sys.argv[1]) else 1)' "$fence" "$out" 2>/dev/null ||
  fail "the fence after the thaw ($out) is not greater than the lost holder's ($fence)"
pass
