#!/usr/bin/env bash
# Every command against a hostile ZooKeeper client port (tests/hostile/
# fake_server.py, loopback): the session handshake and the four-letter
# word srvr (ping) answered with garbage, a truncated answer, a close, the
# answer of another request (a ping's reply header; ruok's "imok"), a huge
# length with a fast endless stream, a drip. The ZooKeeper C client parses
# the handshake; each command still ends with 69 and one `dlock:` line
# (ping: the node named as unusable) within --connect-timeout (1s) plus a
# margin, with a peak RSS under 32 MiB; the job never starts. renew and
# release with a token of no acquire keeper exit 3 without asking the
# server, as documented. (Before: ping exited 0, "reachable", on an answer
# to srvr that was garbage, nothing, cut short or imok.)
SCENARIO="hostile servers: every command on ZooKeeper"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"

for mode in ${HOSTILE_CASES:-zk-garbage zk-truncated zk-close zk-other zk-huge zk-drip}; do
  start_fake "$mode"
  check_hostile_commands "$mode" "zk://127.0.0.1:$FAKE_PORT" 3
  stop_fake
done
pass
