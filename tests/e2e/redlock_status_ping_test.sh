#!/usr/bin/env bash
# status, list and ping on Redlock. status shows the holder, the fence and
# on how many nodes (and which) the lock is held; a token on a minority of
# nodes is not a held lock. ping lists every node with its version and says
# whether a quorum is reachable: yes with 2 of 5 nodes down, no (exit 69)
# with 3 down. The release token is never printed.
SCENARIO="redlock status, list and ping"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/redlock_lib.sh"
use_redlock

version=$(node_cli 1 INFO server | tr -d '\r' | sed -n 's/^redis_version://p')

# names_every_node WHAT TEXT: TEXT names each of the five nodes.
names_every_node() {
  local i
  for ((i = 1; i <= NODES; i++)); do
    case $2 in *"$(node_address "$i")"*) ;; *) fail "$1 does not name node $(node_address "$i"): $2" ;; esac
  done
}

# ping with every node up.
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping with all nodes up exited $rc; stdout: $out; stderr: $err"
names_every_node "ping" "$out"
[ "$(printf '%s\n' "$out" | grep -c "$version")" -ge 5 ] || fail "ping does not show the version $version of each node: $out"
printf '%s\n' "$out" | grep -qiE 'quorum:? +yes' || fail "ping does not say the quorum is reachable: $out"
capture "${DL[@]}" ping --json
[ "$rc" = 0 ] || fail "ping --json exited $rc"
printf '%s' "$out" >"$tmpdir/ping.json"
python3 - "$tmpdir/ping.json" "$version" "$DLOCK_TEST_NODE_PORTS" <<'PY' || fail "ping --json with all nodes up is wrong: $out"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True and d["quorum"] is True, d
ports = sys.argv[3].split()
assert len(d["nodes"]) == len(ports), d["nodes"]
for node, port in zip(d["nodes"], ports):
    assert node["address"] == "127.0.0.1:" + port, node
    assert node["reachable"] is True and sys.argv[2] in node["version"], node
    assert isinstance(node["rtt_ms"], (int, float)) and node["rtt_ms"] >= 0, node
PY

# A held lock: holder, fence, lease, held on 5 of 5, each node named.
start_holder h app/one --ttl 20s
one_pid=$HOLDER_PID
one_token=$(cat "$tmpdir/h.token")
one_fence=$(cat "$tmpdir/h.fence")
raw_token=$(node_cli 1 GET "$(redis_key app/one lock)")
{ [ -n "$one_token" ] && [ -n "$raw_token" ]; } || fail "no token for the holder"
no_token() {
  case $2 in *"$one_token"* | *"$raw_token"*) fail "$1 prints the release token: $2" ;; esac
}
capture "${DL[@]}" status app/one
[ "$rc" = 0 ] || fail "status of a held lock exited $rc; stderr: $err"
no_token status "$out$err"
case $out in *"$one_pid"*) ;; *) fail "status does not show the holder pid $one_pid: $out" ;; esac
case $out in *"$one_fence"*) ;; *) fail "status does not show the fence $one_fence: $out" ;; esac
case $out in *"$(hostname)"*) ;; *) fail "status does not show the holder's host: $out" ;; esac
printf '%s\n' "$out" | grep -qiE 'lease|left' || fail "status does not show the time left: $out"
case $out in *"5 of 5"*) ;; *) fail "status does not say the lock is held on 5 of 5 nodes: $out" ;; esac
names_every_node "status" "$out"
capture "${DL[@]}" status app/one --json
[ "$rc" = 0 ] || fail "status --json exited $rc"
no_token "status --json" "$out"
printf '%s' "$out" >"$tmpdir/status.json"
python3 - "$tmpdir/status.json" "$one_pid" "$one_fence" <<'PY' || fail "status --json of the held lock is wrong: $out"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["held"] is True and d["name"] == "app/one", d
assert d["holder"]["pid"] == int(sys.argv[2]), d["holder"]
assert d["fence"] == int(sys.argv[3]), d["fence"]
assert isinstance(d["ttl_left_ms"], int) and 0 < d["ttl_left_ms"] <= 20000, d["ttl_left_ms"]
assert "5 of 5" in (d["detail"] or ""), d["detail"]
PY

# A token on two nodes only (a minority) is not a held lock.
for i in 1 2; do
  node_cli "$i" SET "$(redis_key minority lock)" 0123456789abcdef0123456789abcdef PX 30000 >/dev/null
done
capture "${DL[@]}" status minority
[ "$rc" = 3 ] || fail "status of a lock on 2 of 5 nodes exited $rc, expected 3 (free): $out"
capture "${DL[@]}" list --json
[ "$rc" = 0 ] || fail "list --json exited $rc; stderr: $err"
no_token "list --json" "$out"
[ "$(printf '%s' "$out" | json 'sorted(x["name"] for x in d)')" = '["app/one"]' ] ||
  fail "list --json does not show exactly app/one (held on a majority): $out"
# ... and can still be taken: three free nodes are a majority.
capture "${DL[@]}" run minority -- true
[ "$rc" = 0 ] || fail "run of a lock held on 2 of 5 nodes exited $rc, expected 0; stderr: $err"

# Two nodes down: still held (3 of 5), still a quorum.
stop_node 4 5
capture "${DL[@]}" status app/one
[ "$rc" = 0 ] || fail "status with 2 nodes down exited $rc; stdout: $out; stderr: $err"
case $out in *"3 of 5"*) ;; *) fail "status with 2 nodes down does not say the lock is held on 3 of 5 nodes: $out" ;; esac
case $out in *"$one_pid"*) ;; *) fail "status with 2 nodes down does not show the holder pid $one_pid: $out" ;; esac
no_token "status with 2 nodes down" "$out$err"
capture "${DL[@]}" list
[ "$rc" = 0 ] || fail "list with 2 nodes down exited $rc; stderr: $err"
[ "$(printf '%s\n' "$out" | grep -cE '^app/one[[:space:]]')" = 1 ] || fail "list with 2 nodes down does not show app/one: $out"
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping with 2 of 5 nodes down exited $rc; stdout: $out; stderr: $err"
names_every_node "ping with 2 nodes down" "$out"
printf '%s\n' "$out" | grep -qiE 'quorum:? +yes' || fail "ping with 2 of 5 nodes down does not say the quorum is reachable: $out"
for i in 4 5; do
  printf '%s\n' "$out" | grep -F "$(node_address "$i")" | grep -qiE 'unreachable|refused|down' ||
    fail "ping does not show node $i ($(node_address "$i")) as unreachable: $out"
  printf '%s\n' "$out" | grep -F "$(node_address "$i")" | grep -q 'rtt' &&
    fail "ping shows a round trip for the unreachable node $i: $out"
done
printf '%s\n' "$out" | grep -qE '^state: +degraded: 2 of 5 nodes unusable' || fail "ping with 2 of 5 nodes down does not say degraded: $out"
capture "${DL[@]}" ping --json
[ "$rc" = 0 ] || fail "ping --json with 2 of 5 nodes down exited $rc"
[ "$(printf '%s' "$out" | json 'd["ok"] and d["degraded"] and [n["rtt_ms"] for n in d["nodes"]][3:] == [None, None]')" = true ] ||
  fail "ping --json with 2 of 5 nodes down: expected ok, degraded and no rtt_ms for the two down: $out"

# Three nodes down: no quorum.
stop_node 3
capture "${DL[@]}" ping
[ "$rc" = 69 ] || fail "ping with 3 of 5 nodes down exited $rc, expected 69; stdout: $out; stderr: $err"
names_every_node "ping with 3 nodes down" "$out"
printf '%s\n' "$out$err" | grep -qiE 'quorum:? +no|no quorum' || fail "ping with 3 of 5 nodes down does not say there is no quorum: $out $err"
capture "${DL[@]}" ping --json
[ "$rc" = 69 ] || fail "ping --json with 3 of 5 nodes down exited $rc, expected 69"
[ "$(printf '%s' "$out" | json '[d["ok"], d["quorum"], sum(1 for n in d["nodes"] if n["reachable"])]')" = '[false, false, 2]' ] ||
  fail "ping --json with 3 of 5 nodes down: expected ok false, quorum false, 2 reachable: $out"
pass
