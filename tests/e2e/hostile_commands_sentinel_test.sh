#!/usr/bin/env bash
# Every command against Redis behind a hostile Sentinel (tests/hostile/
# fake_server.py, loopback). A sentinel that answers SENTINEL
# get-master-addr-by-name (and SENTINEL master) with garbage, a truncated
# reply, a close, a reply of another request, a huge bulk string with an
# endless stream or a drip; and a sentinel that answers correctly but names
# a master that is hostile in each of these ways. Each command ends with 69
# and one `dlock:` line within --connect-timeout (1s) plus a margin, with a
# peak RSS under 32 MiB; the job of run never starts.
SCENARIO="hostile servers: every command behind Redis Sentinel"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"

behaviours="garbage truncated close other huge drip"
for mode in ${HOSTILE_CASES:-$(for b in $behaviours; do echo "sentinel-$b sentinel-to-$b"; done)}; do
  case $mode in
  sentinel-to-*) start_fake "$mode" ;;
  *) start_fake "redis-${mode#sentinel-}" ;; # the sentinel itself is hostile
  esac
  check_hostile_commands "$mode" "redis-sentinel://127.0.0.1:$FAKE_PORT/mymaster"
  stop_fake
done
pass
