#!/usr/bin/env bash
# dlock doctor on ZooKeeper. Registered three times:
#  - a standalone server as with-zookeeper sets it up (maxClientCnxns=0, conf
#    allowed): all ok, exit 0;
#  - the same with --4lw-whitelist srvr: conf cannot be read, which doctor
#    says (zk.conf warning naming the whitelist, exit 0);
#  - an ensemble of 3 with --sync-limit 3000 --max-client-cnxns 5: a member
#    cut off from its leader serves for 3 s, longer than the 2 s session
#    that --ttl 2s negotiates (zk.sync-limit warning; ok for --ttl 10s), and
#    5 connections per client host are few (zk.max-client-cnxns warning); a
#    member stopped is found (zk.members warning).
SCENARIO="doctor: ZooKeeper syncLimit x tickTime and maxClientCnxns"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/doctor_lib.sh"
use_zookeeper

if [ "$DLOCK_TEST_ZK_ENSEMBLE" = 1 ] && "$ZK4" conf | grep -q 'not in the whitelist'; then
  doctor --ttl 2s
  expect_rc 0 "conf not in 4lw.commands.whitelist (a warning)"
  expect_check zk.members ok "1 of 1 servers serve"
  expect_check zk.conf warning "4lw.commands.whitelist"
  expect_text_line zk.conf warning
  pass
fi
if [ "$DLOCK_TEST_ZK_ENSEMBLE" = 1 ]; then
  doctor --ttl 2s
  expect_all_ok
  expect_check zk.sync-limit ok "standalone"
  expect_check zk.max-client-cnxns ok "maxClientCnxns=0"
  pass
fi

[ "$DLOCK_TEST_ZK_ENSEMBLE" = 3 ] || fail "run this test under scripts/with-zookeeper [--ensemble 3 --sync-limit 3000 --max-client-cnxns 5]"
doctor --ttl 2s
expect_rc 0 "syncLimit x tickTime longer than the session (a warning)"
expect_check zk.sync-limit warning "= 3s, not shorter than the 2s session"
expect_check zk.max-client-cnxns warning "maxClientCnxns=5"
expect_text_line zk.sync-limit warning
doctor --ttl 10s
expect_check zk.sync-limit ok "shorter than the 10s session"

# A follower stopped: the other two keep their quorum and their leader.
leader=$("$DLOCK_TEST_ZK_LEADER") || fail "no member of the ensemble leads"
victim=3
[ "$leader" = 3 ] && victim=2
stop=DLOCK_TEST_ZK_STOP_$victim
"${!stop}"
wait_until "$DLOCK_TEST_ZK_LEADER" >/dev/null || fail "no member leads after member $victim stopped"
doctor --ttl 10s
expect_rc 0 "one member of three stopped"
expect_check zk.members warning "2 of 3 servers serve"
pass
