#!/usr/bin/env bash
# An unreachable Redis is 69 with one line, never a hang: nothing listening
# fails at once; a port that accepts connections but never answers fails
# once --connect-timeout (or its 2 s default) has passed. A malformed URL is
# a configuration error (78). The checks all server backends share are in
# lib.sh (check_unavailable and what follows it).
SCENARIO="redis unreachable"
. "$(dirname "$0")/lib.sh"
use_redis

check_unavailable_commands "nothing listening" 1500 "redis://127.0.0.1:$(free_port)"

start_silent_listener
check_silent_server "redis://127.0.0.1:$SILENT_PORT" 2000 4500
# The same bound holds for a password exchange that is never answered.
check_unavailable "run with a password, silent server" 2000 \
  env DLOCK_PASSWORD=pw "$DLOCK_BIN" -b "redis://127.0.0.1:$SILENT_PORT" --connect-timeout 500ms run u -- touch "$tmpdir/ran"

check_malformed_urls "redis://127.0.0.1:notaport"
pass
