#!/usr/bin/env bash
# A hostile server cannot make dlock read forever or fill its memory:
# every reply has a size limit (a Redis reply 2 MiB, an etcd body 8 MiB,
# then 69) and every round trip ends
# by its deadline even while bytes keep arriving. Fake servers
# (tests/hostile/fake_server.py, loopback) answer `dlock status` with a
# huge Redis bulk string or a huge HTTP Content-Length, followed by a fast
# endless stream or by one byte every 100 ms. Each case must exit 69 with
# one `dlock:` line within --connect-timeout (2s) plus a margin, with a
# peak RSS under 32 MiB (/usr/bin/time -f %M).
# (Before: 4.4 GB and 12 s for the Redis stream, 2.1 GB and 3.4 s for etcd.)
SCENARIO="hostile servers: oversized replies and endless streams"
. "$(dirname "$0")/lib.sh"

FAKE=$(cd "$(dirname "$0")/../hostile" && pwd)/fake_server.py
[ -x /usr/bin/time ] || fail "/usr/bin/time is needed to measure the peak RSS"

start_fake() { # MODE: sets FAKE_PORT
  rm -f "$tmpdir/fake.port"
  python3 "$FAKE" "$1" "$tmpdir/fake.port" &
  track $!
  FAKE_PID=$!
  wait_until -t 10 test -s "$tmpdir/fake.port" || fail "$1: the fake server did not start"
  FAKE_PORT=$(cat "$tmpdir/fake.port")
}

check_case() { # MODE SCHEME
  local mode=$1 scheme=$2 started elapsed rss
  start_fake "$mode"
  started=$(now_ms)
  capture /usr/bin/time -f 'rss %M' -o "$tmpdir/time.out" timeout -s KILL 30 \
    "$DLOCK_BIN" -b "$scheme://127.0.0.1:$FAKE_PORT" --connect-timeout 2s status u
  elapsed=$(($(now_ms) - started))
  rss=$(sed -n 's/^rss //p' "$tmpdir/time.out" | tail -1)
  kill "$FAKE_PID" 2>/dev/null
  echo "$mode: exit $rc after $elapsed ms, peak RSS ${rss:-?} KiB; stderr: $err"
  [ "$rc" = 69 ] || fail "$mode: exit $rc, expected 69; stderr: $err"
  assert_one_line_message "$mode" "$err"
  [ "$elapsed" -lt 3000 ] || fail "$mode: took $elapsed ms, more than --connect-timeout 2s + 1s"
  check_peak_rss "$mode" "$rss"
}

# HOSTILE_CASES picks some of the cases (to try one on an old binary).
for mode in ${HOSTILE_CASES:-redis-huge-bulk redis-drip etcd-huge-length etcd-drip}; do
  check_case "$mode" "${mode%%-*}"
done
pass
