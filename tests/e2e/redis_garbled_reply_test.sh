#!/usr/bin/env bash
# One malformed reply does not poison the connection: a proxy in front of
# the real server (tests/hostile/fake_server.py redis-garble-once) answers
# the first renewal of a `dlock run --ttl 2s` job with garbage. dlock must
# close that connection and connect again, so the next renewal succeeds
# and the job, which runs on for 3 s (longer than the TTL) after the
# garbled reply, ends normally with 0. (Before: every later renewal failed
# with 'Protocol error, got "X"' and the job was stopped, 76.)
# Run under scripts/with-redis.
SCENARIO="redis: a garbled reply to one renewal"
. "$(dirname "$0")/lib.sh"
use_redis

FAKE=$(cd "$(dirname "$0")/../hostile" && pwd)/fake_server.py
python3 "$FAKE" redis-garble-once "$tmpdir/proxy.port" "$DLOCK_TEST_REDIS_PORT" &
track $!
wait_until -t 10 test -s "$tmpdir/proxy.port" || fail "the proxy did not start"
proxy=redis://127.0.0.1:$(cat "$tmpdir/proxy.port")

capture "$DLOCK_BIN" -b "$proxy" run --ttl 2s garbled -- sh -c '
  i=0
  while [ ! -e "$1" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ -e "$1" ] || exit 9
  sleep 3' job "$tmpdir/proxy.port.garbled"
[ -e "$tmpdir/proxy.port.garbled" ] || fail "the proxy never saw a renewal (exit $rc; stderr: $err)"
[ "$rc" = 0 ] || fail "the job did not survive one garbled reply: exit $rc; stderr: $err"
echo "exit 0; stderr: ${err:-(none)}"
# And the lock is free again.
capture "$DLOCK_BIN" -b "$DLOCK_TEST_REDIS_URL" status garbled
[ "$rc" = 3 ] || fail "status after the run: exit $rc, expected 3 (free); $err"
pass
