#!/usr/bin/env bash
# status, list and ping on ZooKeeper: lock NAME in namespace NS is the znode
# /NS/NAME, each contender an ephemeral sequential child named like
# Curator's (_c_<uuid>-lock-<10 digits>) holding the holder's metadata;
# status shows holder, fence (the node's czxid) and the queued waiters,
# never the token, and exits 3 for a free lock; list shows every held lock
# (names with slashes are nested znodes) and nothing else; ping shows the
# server version, its mode and the round trip.
SCENARIO="zookeeper: status, list and ping"
. "$(dirname "$0")/lib.sh"
use_zookeeper

start_holder h app/one --ttl 20s
one_pid=$HOLDER_PID
one_token=$(cat "$tmpdir/h.token")
one_fence=$(cat "$tmpdir/h.fence")
[ -n "$one_token" ] && [ -n "$one_fence" ] || fail "holder did not get DLOCK_TOKEN/DLOCK_FENCE"

# The znode layout.
zk_children /dlock/app/one >"$tmpdir/nodes.json"
[ "$(json 'len(d)' <"$tmpdir/nodes.json")" = 1 ] || fail "/dlock/app/one does not hold exactly one node: $(cat "$tmpdir/nodes.json")"
node=$(json 'd[0]["name"]' <"$tmpdir/nodes.json")
[[ $node =~ $ZK_NODE_RE ]] || fail "the lock node '$node' is not named like Curator's: _c_<uuid>-lock-<10 digits>"
[ "$(json 'd[0]["czxid"]' <"$tmpdir/nodes.json")" = "$one_fence" ] || fail "the job's DLOCK_FENCE $one_fence is not the node's czxid"
[ "$(json 'd[0]["ephemeralOwner"]' <"$tmpdir/nodes.json")" != 0 ] || fail "the lock node is not ephemeral"
data=$("$ZKCLI" get "/dlock/app/one/$node")
case $data in *"$one_pid"*) ;; *) fail "the lock node's data does not hold the holder's pid $one_pid: $data" ;; esac
case $data in *"$one_token"*) fail "the lock node's data holds the release token: $data" ;; esac

# no_token WHAT TEXT: TEXT does not show the token.
no_token() {
  case $2 in *"$one_token"*) fail "$1 prints the release token: $2" ;; esac
}

capture "${DL[@]}" status app/one
[ "$rc" = 0 ] || fail "status of a held lock exited $rc, expected 0; stderr: $err"
case $out in *"$one_pid"*) ;; *) fail "status does not show the holder pid $one_pid: $out" ;; esac
case $out in *"$one_fence"*) ;; *) fail "status does not show the fence $one_fence: $out" ;; esac
case $out in *"$(hostname)"*) ;; *) fail "status does not show the holder's host: $out" ;; esac
no_token "status" "$out$err"

capture "${DL[@]}" status app/one --json
[ "$rc" = 0 ] || fail "status --json of a held lock exited $rc; stderr: $err"
no_token "status --json" "$out$err"
printf '%s' "$out" >"$tmpdir/status.json"
python3 - "$tmpdir/status.json" "$one_pid" "$one_fence" "$(hostname)" "$(id -un)" <<'PY' || fail "status --json is wrong: $out"
import json, sys
path, pid, fence, host, user = sys.argv[1:]
d = json.load(open(path))
def check(cond, what):
    if not cond:
        sys.exit("status --json: " + what)
check(d.get("name") == "app/one", "name is %r" % d.get("name"))
check(d.get("held") is True, "held is %r" % d.get("held"))
h = d.get("holder")
check(isinstance(h, dict), "holder is not an object")
check(h.get("pid") == int(pid), "holder.pid %r != dlock's pid %s" % (h.get("pid"), pid))
check(h.get("host") == host, "holder.host %r != %s" % (h.get("host"), host))
check(h.get("user") == user, "holder.user %r != %s" % (h.get("user"), user))
check(isinstance(h.get("command"), str) and "holder" in h["command"], "holder.command %r" % h.get("command"))
check(isinstance(h.get("since"), str) and h["since"][:2] == "20", "holder.since %r" % h.get("since"))
check(d.get("fence") == int(fence), "fence %r != the job's DLOCK_FENCE %s" % (d.get("fence"), fence))
check(d.get("waiters") == 0, "waiters %r" % d.get("waiters"))
check("ttl_left_ms" not in d or d["ttl_left_ms"] is None or isinstance(d["ttl_left_ms"], int), "ttl_left_ms %r" % d.get("ttl_left_ms"))
PY

# Waiters are the queued nodes behind the holder's; one that gives up takes
# its node away.
waiters=()
for i in 1 2; do
  "${DL[@]}" run app/one --wait 20s -- true </dev/null 2>/dev/null &
  waiters+=($!)
  track $!
done
two_waiters() { [ "$(lock_waiters app/one)" = 2 ]; }
wait_until two_waiters || fail "status --json never counted the two waiting runs (now $(lock_waiters app/one))"
[ "$(zk_child_count /dlock/app/one)" = 3 ] || fail "/dlock/app/one does not hold 3 nodes with 2 waiters: $(zk_children /dlock/app/one)"
capture "${DL[@]}" status app/one
printf '%s\n' "$out" | grep -qE 'waiters: +2' || fail "status text does not show 2 waiters: $out"
kill -TERM "${waiters[@]}"
wait_exit "${waiters[0]}" 5
wait_exit "${waiters[1]}" 5
wait_until -t 3 has_no_waiter app/one || fail "the interrupted waiters are still counted"
[ "$(zk_child_count /dlock/app/one)" = 1 ] || fail "the interrupted waiters left their nodes: $(zk_children /dlock/app/one)"

# Free locks: exit 3, also one that was held before (its parent znode may remain).
capture "${DL[@]}" status nothing.here
[ "$rc" = 3 ] || fail "status of a never-used lock exited $rc, expected 3; stderr: $err"
capture "${DL[@]}" status nothing.here --json
[ "$rc" = 3 ] || fail "status --json of a never-used lock exited $rc, expected 3"
[ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a never-used lock: held is not false: $out"
"${DL[@]}" run app/three -- true || fail "run app/three failed"
capture "${DL[@]}" status app/three --json
[ "$rc" = 3 ] || fail "status of a released lock exited $rc, expected 3"
[ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a released lock: held is not false: $out"

# list: one row per held lock, whatever else lives on the server.
start_holder h2 app/two
two_pid=$HOLDER_PID
start_holder h3 other
other_pid=$HOLDER_PID
"$ZKCLI" create /dlock/not/a/lock data || fail "could not create an unrelated znode"
"$ZKCLI" create /elsewhere/thing data || fail "could not create an unrelated znode"
capture "${DL[@]}" --namespace elsewhere acquire app/ns --ttl 30s
[ "$rc" = 0 ] || fail "acquire in namespace elsewhere exited $rc; stderr: $err"
[ "$(zk_child_count /elsewhere/app/ns)" = 1 ] || fail "--namespace elsewhere did not put the lock under /elsewhere/app/ns"
for i in $(seq 1 10); do
  "${DL[@]}" acquire "bulk/$i" --ttl 60s >/dev/null || fail "acquire bulk/$i failed"
done

capture "${DL[@]}" list
[ "$rc" = 0 ] || fail "list exited $rc; stderr: $err"
no_token "list" "$out$err"
for n in app/one app/two other; do
  [ "$(printf '%s\n' "$out" | grep -cE "^${n}[[:space:]]")" = 1 ] || fail "list does not show exactly one row for $n: $out"
done
case $out in *app/three* | *not/a/lock* | *app/ns* | *nothing.here*) fail "list shows a lock that is not held in this namespace: $out" ;; esac
case $out in *"$one_pid"*) ;; *) fail "list does not show holder pid $one_pid: $out" ;; esac
[ "$(printf '%s\n' "$out" | grep -cE '^bulk/[0-9]+[[:space:]]')" = 10 ] || fail "list does not show all 10 bulk/N locks: $out"

capture "${DL[@]}" list app/ --json
[ "$rc" = 0 ] || fail "list app/ --json exited $rc"
no_token "list --json" "$out"
got=$(printf '%s' "$out" | json 'sorted((x["name"], x["held"], x["holder"]["pid"]) for x in d) if isinstance(d, list) else "not an array"')
want="[[\"app/one\", true, $one_pid], [\"app/two\", true, $two_pid]]"
[ "$got" = "$want" ] || fail "list app/ --json: got $got, expected $want"
capture "${DL[@]}" list --json
[ "$(printf '%s' "$out" | json 'len(d)')" = 13 ] || fail "list --json does not hold 13 locks: $(printf '%s' "$out" | json '[x["name"] for x in d]')"
capture "${DL[@]}" --namespace elsewhere list --json
[ "$(printf '%s' "$out" | json '[x["name"] for x in d]')" = '["app/ns"]' ] || fail "list in namespace elsewhere: $out"
capture "${DL[@]}" list zzz --json
[ "$rc" = 0 ] && [ "$(printf '%s' "$out" | json 'd')" = "[]" ] || fail "list with no match is not an empty array ($rc): $out"
[ "$other_pid" -gt 0 ] || fail "no pid for holder h3"

# ping: version, mode, round trip.
version=$("$ZK4" srvr | sed -n 's/^Zookeeper version: \([0-9][0-9.]*\).*/\1/p')
[ -n "$version" ] || fail "srvr does not show the server version: $("$ZK4" srvr)"
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping exited $rc; stdout: $out; stderr: $err"
case $out in *"$version"*) ;; *) fail "ping does not show the server version $version: $out" ;; esac
printf '%s\n' "$out" | grep -qi standalone || fail "ping does not show the mode standalone: $out"
printf '%s\n' "$out" | grep -qE '[0-9.]+ ?(ms|µs|us)' || fail "ping does not show a round-trip time: $out"
[ -z "$err" ] || fail "ping printed on stderr: $err"
capture "${DL[@]}" ping --json
[ "$rc" = 0 ] || fail "ping --json exited $rc"
printf '%s' "$out" >"$tmpdir/ping.json"
python3 - "$tmpdir/ping.json" "$version" "$DLOCK_TEST_ZK_PORT" <<'PY' || fail "ping --json is wrong: $out"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True, d
node = d["nodes"][0]
assert node["reachable"] is True, node
assert sys.argv[2] in node["version"], node
assert "standalone" in json.dumps(node), node
assert sys.argv[3] in node["address"], node
assert isinstance(node["rtt_ms"], (int, float)) and node["rtt_ms"] >= 0, node
PY

release_holder h
release_holder h2
release_holder h3
wait_exit "$one_pid"
[ "$rc" = 0 ] || fail "holder h exited $rc"
is_free app/one || fail "app/one is still held after its holder ended"
[ "$(zk_child_count /dlock/app/one)" = 0 ] || fail "the released lock left nodes: $(zk_children /dlock/app/one)"
pass
