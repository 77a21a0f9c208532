#!/usr/bin/env bash
# Every command against a hostile etcd HTTP gateway (tests/hostile/
# fake_server.py, loopback): garbage, a truncated reply, a close in the
# middle, JSON of another request, a huge Content-Length with a fast
# endless stream, a slow drip. Each command ends with 69 and one `dlock:`
# line within --connect-timeout (1s) plus a margin, with a peak RSS under
# 32 MiB; the job of run never starts.
SCENARIO="hostile servers: every command on etcd"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"

for mode in ${HOSTILE_CASES:-etcd-garbage etcd-truncated etcd-close etcd-other etcd-huge-length etcd-drip}; do
  start_fake "$mode"
  check_hostile_commands "$mode" "etcd://127.0.0.1:$FAKE_PORT"
  stop_fake
done
pass
