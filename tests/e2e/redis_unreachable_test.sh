#!/usr/bin/env bash
# An unreachable Redis is 69 with one line, never a hang: nothing listening
# fails at once; a port that accepts connections but never answers fails
# once --connect-timeout (or its 2 s default) has passed.
SCENARIO="redis unreachable"
. "$(dirname "$0")/lib.sh"
use_redis

# A port nothing listens on: bound once by the kernel's choice, then closed.
free_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# unavailable WHAT LIMIT_MS CMD...: CMD exits 69 with one line within
# LIMIT_MS and never runs the job.
unavailable() {
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
}

nothing=redis://127.0.0.1:$free_port
unavailable "run, nothing listening" 1500 "$DLOCK_BIN" -b "$nothing" run u -- touch "$tmpdir/ran"
unavailable "acquire, nothing listening" 1500 "$DLOCK_BIN" -b "$nothing" acquire u
unavailable "status, nothing listening" 1500 "$DLOCK_BIN" -b "$nothing" status u
unavailable "list, nothing listening" 1500 "$DLOCK_BIN" -b "$nothing" list
unavailable "release --force, nothing listening" 1500 "$DLOCK_BIN" -b "$nothing" release u --force

# ping_unreachable WHAT LIMIT_MS CMD...: ping reports the node unreachable on
# stdout and exits 69 within LIMIT_MS.
ping_unreachable() {
  local what=$1 limit=$2 started elapsed
  shift 2
  started=$(now_ms)
  capture "$@"
  elapsed=$(($(now_ms) - started))
  [ "$rc" = 69 ] || fail "$what: exit $rc, expected 69; stdout: $out; stderr: $err"
  printf '%s\n' "$out" | grep -qi unreachable || fail "$what: ping does not report the node unreachable: $out"
  [ "$elapsed" -lt "$limit" ] || fail "$what: took ${elapsed} ms (limit $limit ms)"
}
ping_unreachable "ping, nothing listening" 1500 "$DLOCK_BIN" -b "$nothing" ping

# A listener that accepts and never writes a byte.
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
silent=redis://127.0.0.1:$(cat "$tmpdir/silent.port")

unavailable "run --connect-timeout 500ms, silent server" 2000 \
  "$DLOCK_BIN" -b "$silent" --connect-timeout 500ms run u -- touch "$tmpdir/ran"
unavailable "acquire --connect-timeout 500ms, silent server" 2000 \
  "$DLOCK_BIN" -b "$silent" --connect-timeout 500ms acquire u
unavailable "status --connect-timeout 500ms, silent server" 2000 \
  "$DLOCK_BIN" -b "$silent" status u --connect-timeout 500ms
ping_unreachable "ping --connect-timeout 500ms, silent server" 2000 \
  "$DLOCK_BIN" -b "$silent" --connect-timeout 500ms ping
# The default bound is 2 s.
unavailable "run with the default connect timeout, silent server" 4500 \
  "$DLOCK_BIN" -b "$silent" run u -- touch "$tmpdir/ran"
# The same bound holds for a password exchange that is never answered.
unavailable "run with a password, silent server" 2000 \
  env DLOCK_PASSWORD=pw "$DLOCK_BIN" -b "$silent" --connect-timeout 500ms run u -- touch "$tmpdir/ran"

# A malformed URL is a configuration error, not "unavailable".
capture "$DLOCK_BIN" -b "redis://127.0.0.1:notaport" run u -- touch "$tmpdir/ran"
[ "$rc" = 78 ] || fail "a malformed redis URL: exit $rc, expected 78; stderr: $err"
assert_one_line_message "a malformed redis URL" "$err"
pass
