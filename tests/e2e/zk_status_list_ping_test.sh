#!/usr/bin/env bash
# status, list and ping on ZooKeeper: lock NAME in namespace NS is the znode
# /NS/NAME, each contender an ephemeral sequential child named like
# Curator's (_c_<uuid>-lock-<10 digits>) holding the holder's metadata;
# status shows holder, fence (the node's czxid) and the queued waiters,
# never the token, and exits 3 for a free lock; list shows every held lock
# (names with slashes are nested znodes) and nothing else; ping shows the
# server version, its mode and the round trip. The checks all server
# backends share are in lib.sh (start_status_holder and what follows it).
SCENARIO="zookeeper: status, list and ping"
. "$(dirname "$0")/lib.sh"
use_zookeeper

start_status_holder

# The znode layout.
zk_children /dlock/app/one >"$tmpdir/nodes.json"
[ "$(json 'len(d)' <"$tmpdir/nodes.json")" = 2 ] || fail "/dlock/app/one does not hold exactly the holder's two nodes: $(cat "$tmpdir/nodes.json")"
node=$(json '[n for n in d if "-lock-" in n["name"]][0]["name"]' <"$tmpdir/nodes.json")
[[ $node =~ $ZK_NODE_RE ]] || fail "the lock node '$node' is not named like Curator's: _c_<uuid>-lock-<10 digits>"
[ "$(json '[n for n in d if "-lock-" in n["name"]][0]["czxid"]' <"$tmpdir/nodes.json")" = "$one_fence" ] || fail "the job's DLOCK_FENCE $one_fence is not the node's czxid"
[ "$(json '[n for n in d if "-lock-" in n["name"]][0]["ephemeralOwner"]' <"$tmpdir/nodes.json")" != 0 ] || fail "the lock node is not ephemeral"
data=$("$ZKCLI" get "/dlock/app/one/$node")
case $data in *"$one_pid"*) ;; *) fail "the lock node's data does not hold the holder's pid $one_pid: $data" ;; esac
case $data in *"$one_token"*) fail "the lock node's data holds the release token: $data" ;; esac

check_held_status_text app/one "$one_pid" "$one_fence"
check_held_status_json app/one "$one_pid" "$one_fence" 't is None or isinstance(t, int)'

# Waiters are the queued nodes behind the holder's; one that gives up takes
# its node away.
three_nodes() {
  [ "$(zk_child_count /dlock/app/one)" = 6 ] || fail "/dlock/app/one does not hold 6 nodes (two each) with 2 waiters: $(zk_children /dlock/app/one)"
}
one_node() {
  [ "$(zk_child_count /dlock/app/one)" = 2 ] || fail "the interrupted waiters left their nodes: $(zk_children /dlock/app/one)"
}
check_waiters app/one 2 three_nodes one_node

# Free locks: exit 3, also one that was held before (its parent znode may remain).
check_free_status

# list: one row per held lock, whatever else lives on the server.
"$ZKCLI" create /dlock/not/a/lock data || fail "could not create an unrelated znode"
"$ZKCLI" create /elsewhere/thing data || fail "could not create an unrelated znode"
start_list_locks 10 other
[ "$(zk_child_count /elsewhere/app/ns)" = 2 ] || fail "--namespace elsewhere did not put the lock under /elsewhere/app/ns"

check_list_rows 10 "app/three not/a/lock app/ns nothing.here" app/one app/two other
check_list_prefix app/ "app/one:$one_pid" "app/two:$two_pid"
check_list_json 13

# ping: version, mode, round trip.
version=$("$ZK4" srvr | sed -n 's/^Zookeeper version: \([0-9][0-9.]*\).*/\1/p')
[ -n "$version" ] || fail "srvr does not show the server version: $("$ZK4" srvr)"
check_ping "$version" "$DLOCK_TEST_ZK_PORT" standalone

check_holders_released h h2 h3
[ "$(zk_child_count /dlock/app/one)" = 0 ] || fail "the released lock left nodes: $(zk_children /dlock/app/one)"
pass
