#!/usr/bin/env bash
# An unreachable ZooKeeper is 69 with one line, never a hang: nothing
# listening on any address of the URL fails at once or at the latest after
# --connect-timeout; a port that accepts connections but never
# answers the session handshake fails once --connect-timeout (or its 2 s
# default) has passed; a server that is frozen mid-run likewise. A malformed
# URL is a configuration error (78).
SCENARIO="zookeeper: unreachable server"
. "$(dirname "$0")/lib.sh"
use_zookeeper

# A port nothing listens on: bound once by the kernel's choice, then closed.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
closed=$(free_port)
closed2=$(free_port)

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
  echo "$what: 69 after ${elapsed} ms"
}

nothing=zk://127.0.0.1:$closed
unavailable "run --connect-timeout 500ms, nothing listening" 2000 \
  "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms run u -- touch "$tmpdir/ran"
unavailable "acquire --connect-timeout 500ms, nothing listening" 2000 \
  "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms acquire u
unavailable "status --connect-timeout 500ms, nothing listening" 2000 \
  "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms status u
unavailable "list --connect-timeout 500ms, nothing listening" 2000 \
  "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms list
unavailable "release --force --connect-timeout 500ms, nothing listening" 2000 \
  "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms release u --force
unavailable "run --wait 10s --connect-timeout 500ms, nothing listening" 2000 \
  "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms run u --wait 10s -- touch "$tmpdir/ran"
unavailable "run with the default connect timeout, nothing listening" 4500 \
  "$DLOCK_BIN" -b "$nothing" run u -- touch "$tmpdir/ran"
unavailable "run, two addresses, nothing listening on either" 2500 \
  "$DLOCK_BIN" -b "zk://127.0.0.1:$closed,127.0.0.1:$closed2" --connect-timeout 500ms run u -- touch "$tmpdir/ran"

# One dead address in the list does not matter when another serves.
capture "$DLOCK_BIN" -b "zk://127.0.0.1:$closed,127.0.0.1:$DLOCK_TEST_ZK_PORT" --connect-timeout 2s run u -- true
[ "$rc" = 0 ] || fail "a URL with one dead and one live address: run exited $rc; stderr: $err"

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
ping_unreachable "ping --connect-timeout 500ms, nothing listening" 2000 \
  "$DLOCK_BIN" -b "$nothing" --connect-timeout 500ms ping

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
silent=zk://127.0.0.1:$(cat "$tmpdir/silent.port")

unavailable "run --connect-timeout 500ms, silent server" 2000 \
  "$DLOCK_BIN" -b "$silent" --connect-timeout 500ms run u -- touch "$tmpdir/ran"
unavailable "acquire --connect-timeout 500ms, silent server" 2000 \
  "$DLOCK_BIN" -b "$silent" --connect-timeout 500ms acquire u
unavailable "status --connect-timeout 500ms, silent server" 2000 \
  "$DLOCK_BIN" -b "$silent" status u --connect-timeout 500ms
ping_unreachable "ping --connect-timeout 500ms, silent server" 2000 \
  "$DLOCK_BIN" -b "$silent" --connect-timeout 500ms ping
unavailable "run with the default connect timeout, silent server" 4500 \
  "$DLOCK_BIN" -b "$silent" run u -- touch "$tmpdir/ran"
unavailable "run with credentials, silent server" 2000 \
  env DLOCK_PASSWORD=pw "$DLOCK_BIN" -b "zk://alice@127.0.0.1:$(cat "$tmpdir/silent.port")" --connect-timeout 500ms run u -- touch "$tmpdir/ran"

# The real server, frozen: the same bound.
server=$(cat "$DLOCK_TEST_ZK_PIDFILE")
kill -STOP "$server"
unavailable "run --connect-timeout 500ms, frozen server" 2000 \
  "$DLOCK_BIN" -b "$DLOCK_TEST_ZK_URL" --connect-timeout 500ms run u -- touch "$tmpdir/ran"
kill -CONT "$server"
capture "${DL[@]}" run u -- true
[ "$rc" = 0 ] || fail "run after the server thawed exited $rc; stderr: $err"

# A malformed URL is a configuration error, not "unavailable".
for url in "zk://127.0.0.1:notaport" "zk://" "zk://127.0.0.1:$DLOCK_TEST_ZK_PORT/bad//chroot"; do
  capture "$DLOCK_BIN" -b "$url" run u -- touch "$tmpdir/ran"
  [ "$rc" = 78 ] || fail "the malformed URL $url: exit $rc, expected 78; stderr: $err"
  assert_one_line_message "the malformed URL $url" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "the malformed URL $url: the job ran"
done
pass
