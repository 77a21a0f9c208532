#!/usr/bin/env bash
# Every command against a hostile Redis or etcd (tests/hostile/fake_server.py,
# loopback): garbage, a truncated reply, a close in the middle, a reply that
# belongs to another request, an oversized reply with a fast endless stream,
# a slow drip. run, acquire, renew, release, status, list and ping must each
# end with 69 and one `dlock:` line within --connect-timeout (1s) plus a
# margin, with a peak RSS under 32 MiB, never a crash or a hang; the job of
# run never starts.
SCENARIO="hostile servers: every command"
. "$(dirname "$0")/lib.sh"

FAKE=$(cd "$(dirname "$0")/../hostile" && pwd)/fake_server.py
[ -x /usr/bin/time ] || fail "/usr/bin/time is needed to measure the peak RSS"

start_fake() { # MODE: sets FAKE_PORT, FAKE_PID
  rm -f "$tmpdir/fake.port"
  python3 "$FAKE" "$1" "$tmpdir/fake.port" &
  FAKE_PID=$!
  track "$FAKE_PID"
  wait_until -t 10 test -s "$tmpdir/fake.port" || fail "$1: the fake server did not start"
  FAKE_PORT=$(cat "$tmpdir/fake.port")
}

check_command() { # MODE URL COMMAND...
  local mode=$1 url=$2 started elapsed rss
  shift 2
  rm -f "$tmpdir/ran"
  started=$(now_ms)
  capture /usr/bin/time -f 'rss %M' -o "$tmpdir/time.out" timeout -s KILL 30 \
    "$DLOCK_BIN" -b "$url" --connect-timeout 1s "$@"
  elapsed=$(($(now_ms) - started))
  rss=$(sed -n 's/^rss //p' "$tmpdir/time.out" | tail -1)
  err=$(printf '%s\n' "$err" | grep -v '^Command terminated by signal\|^Command exited with non-zero status')
  echo "$mode, $1: exit $rc after $elapsed ms, peak RSS ${rss:-?} KiB"
  [ "$rc" = 69 ] || fail "$mode, $1: exit $rc, expected 69; stderr: $err"
  [ "$1" = ping ] || assert_one_line_message "$mode, $1" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "$mode, $1: the job ran"
  [ "$elapsed" -lt 2500 ] || fail "$mode, $1: took $elapsed ms, more than --connect-timeout 1s + 1.5s"
  [ -n "$rss" ] && [ "$rss" -lt 32768 ] || fail "$mode, $1: peak RSS ${rss:-?} KiB, not under 32 MiB"
}

modes="redis-garbage redis-truncated redis-close redis-other redis-huge-bulk redis-drip
etcd-garbage etcd-truncated etcd-close etcd-other etcd-huge-length etcd-drip"
for mode in ${HOSTILE_CASES:-$modes}; do
  start_fake "$mode"
  url=${mode%%-*}://127.0.0.1:$FAKE_PORT
  check_command "$mode" "$url" run u -- touch "$tmpdir/ran"
  check_command "$mode" "$url" acquire u
  check_command "$mode" "$url" renew u 00000000075bcd15
  check_command "$mode" "$url" release u 00000000075bcd15
  check_command "$mode" "$url" status u
  check_command "$mode" "$url" list
  check_command "$mode" "$url" ping
  kill "$FAKE_PID" 2>/dev/null
done
pass
