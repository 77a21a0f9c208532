#!/usr/bin/env bash
# One hostile node among two real ones (scripts/with-redis --nodes 2, and
# tests/hostile/fake_server.py first in the URL): garbage, a truncated
# reply, a close, a reply of another request, a huge bulk string with an
# endless stream, a drip. The healthy majority decides, so every command
# succeeds, within --connect-timeout (1s) plus a margin, with a peak RSS
# under 32 MiB and nothing on stderr: run runs its job (0), acquire prints
# a token (0), status finds it held (0), renew and release with it succeed
# (0), list shows it and two more (0; before, list waited for a dripping
# node once per name held: 4 s for three), and ping reports "quorum: yes"
# with the hostile node unusable (0: "It exits 0 when a majority is
# usable, even with other servers down", REDLOCK BACKEND in dlock(1)).
SCENARIO="hostile servers: every command on Redlock, one node of three hostile"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hostile_lib.sh"

[ "${DLOCK_TEST_NODES:-0}" = 2 ] || fail "run this test as scripts/with-redis --nodes 2 -- bash $0"
read -r -a real_ports <<<"$DLOCK_TEST_NODE_PORTS"

for mode in ${HOSTILE_CASES:-redis-garbage redis-truncated redis-close redis-other redis-huge redis-drip}; do
  start_fake "$mode"
  url=redlock://127.0.0.1:$FAKE_PORT,127.0.0.1:${real_ports[0]},127.0.0.1:${real_ports[1]}
  what="$mode + 2 real"
  check_command "$what" 0 "$url" run u -- touch "$tmpdir/ran"
  [ -e "$tmpdir/ran" ] || fail "$what, run: exit 0 but the job did not run"
  check_command "$what" 0 "$url" acquire u
  token=$out
  [[ $token =~ ^[0-9a-f]{32}$ ]] || fail "$what, acquire: printed '$token', not a token"
  check_command "$what" 0 "$url" status u
  check_command "$what" 0 "$url" renew u "$token"
  # Three names held: list waits for a silent node once, not once per name.
  check_command "$what" 0 "$url" acquire v
  token_v=$out
  check_command "$what" 0 "$url" acquire w
  token_w=$out
  check_command "$what" 0 "$url" list
  [ "$(printf '%s\n' "$out" | grep -cw 'u\|v\|w')" = 3 ] || fail "$what, list: not the three locks held: $out"
  check_command "$what" 0 "$url" release u "$token"
  check_command "$what" 0 "$url" release v "$token_v"
  check_command "$what" 0 "$url" release w "$token_w"
  check_command "$what" 0 "$url" ping
  printf '%s\n' "$out" | grep -q 'quorum: *yes' || fail "$what, ping: no 'quorum: yes': $out"
  stop_fake
done
pass
