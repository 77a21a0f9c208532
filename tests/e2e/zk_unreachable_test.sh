#!/usr/bin/env bash
# An unreachable ZooKeeper is 69 with one line, never a hang: nothing
# listening on any address of the URL fails at once or at the latest after
# --connect-timeout; a port that accepts connections but never
# answers the session handshake fails once --connect-timeout (or its 2 s
# default) has passed; a server that is frozen mid-run likewise. A malformed
# URL is a configuration error (78). The checks all server backends share
# are in lib.sh (check_unavailable and what follows it).
SCENARIO="zookeeper: unreachable server"
. "$(dirname "$0")/lib.sh"
use_zookeeper

closed=$(free_port)
closed2=$(free_port)
nothing=zk://127.0.0.1:$closed
check_unavailable_commands "nothing listening" 2000 "$nothing" --connect-timeout 500ms
check_unavailable "run with the default connect timeout, nothing listening" 4500 \
  "$DLOCK_BIN" -b "$nothing" run u -- touch "$tmpdir/ran"
check_unavailable "run, two addresses, nothing listening on either" 2500 \
  "$DLOCK_BIN" -b "zk://127.0.0.1:$closed,127.0.0.1:$closed2" --connect-timeout 500ms run u -- touch "$tmpdir/ran"

# One dead address in the list does not matter when another serves.
capture "$DLOCK_BIN" -b "zk://127.0.0.1:$closed,127.0.0.1:$DLOCK_TEST_ZK_PORT" --connect-timeout 2s run u -- true
[ "$rc" = 0 ] || fail "a URL with one dead and one live address: run exited $rc; stderr: $err"

start_silent_listener
check_silent_server "zk://127.0.0.1:$SILENT_PORT" 2000 4500
check_unavailable "run with credentials, silent server" 2000 \
  env DLOCK_PASSWORD=pw "$DLOCK_BIN" -b "zk://alice@127.0.0.1:$SILENT_PORT" --connect-timeout 500ms run u -- touch "$tmpdir/ran"

# The real server, frozen: the same bound.
server=$(cat "$DLOCK_TEST_ZK_PIDFILE")
kill -STOP "$server"
check_unavailable "run --connect-timeout 500ms, frozen server" 2000 \
  "$DLOCK_BIN" -b "$DLOCK_TEST_ZK_URL" --connect-timeout 500ms run u -- touch "$tmpdir/ran"
kill -CONT "$server"
capture "${DL[@]}" run u -- true
[ "$rc" = 0 ] || fail "run after the server thawed exited $rc; stderr: $err"

check_malformed_urls "zk://127.0.0.1:notaport" "zk://" "zk://127.0.0.1:$DLOCK_TEST_ZK_PORT/bad//chroot"
pass
