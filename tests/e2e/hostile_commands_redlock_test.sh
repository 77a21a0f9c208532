#!/usr/bin/env bash
# Every command against a Redlock URL whose three nodes are all hostile
# (tests/hostile/fake_server.py --listeners 3, loopback), in each way:
# garbage, a truncated reply, a close, a reply of another request, a huge
# bulk string with an endless stream, a drip. No quorum: each command ends
# with 69 (never 77: a reply of another request is no refusal) and one
# `dlock:` line naming why each node failed, within --connect-timeout (1s)
# plus a margin, with a peak RSS under 32 MiB; the job never starts. Five
# nodes streaming huge replies at once stay under 32 MiB as well.
# (Before: the reply of another request was 77 with an empty list of
# causes, "no quorum: 0 of 3 nodes answered, 2 needed ()"; five huge
# nodes took dlock to 45 MB.)
SCENARIO="hostile servers: every command on Redlock, every node hostile"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"

redlock_url() {
  local port hosts=()
  for port in "${FAKE_PORTS[@]}"; do hosts+=("127.0.0.1:$port"); done
  (IFS=,; echo "redlock://${hosts[*]}")
}

for mode in ${HOSTILE_CASES:-redis-garbage redis-truncated redis-close redis-other redis-huge redis-drip}; do
  start_fake "$mode" --listeners 3
  url=$(redlock_url)
  check_hostile_commands "$mode x3" "$url"
  if [ "$mode" = redis-other ]; then
    check_command "$mode x3" 69 "$url" acquire u
    case $err in *"unexpected reply"*) ;; *) fail "$mode: the message does not say what the nodes answered: $err" ;; esac
  fi
  stop_fake
done
start_fake redis-huge --listeners 5
check_command "redis-huge x5" 69 "$(redlock_url)" run u -- touch "$tmpdir/ran"
check_command "redis-huge x5" 69 "$(redlock_url)" status u
stop_fake
pass
