#!/usr/bin/env bash
# status, list and ping on etcd (a three-member cluster). Lock NAME of
# namespace NS is the prefix NS/NAME/; each contender a key NS/NAME/<lease id
# in hex> under its lease, holding the holder's record; the holder is the key
# with the lowest create revision, the others wait. status shows holder,
# fence (the key's create revision), the time left on the lease and the
# waiters, never the token, and exits 3 for a free lock; list shows every
# held lock of the namespace (a lock "app" beside "app/one" included, keys
# of nested names not counted as contenders) and nothing else; ping shows
# every member, its version and role, one leader, a quorum; a stopped member
# shows unreachable with the quorum kept, two stopped lose it (69).
# The checks all server backends share are in lib.sh (start_status_holder
# and what follows it). Run under scripts/with-etcd --cluster 3.
SCENARIO="etcd: status, list and ping"
. "$(dirname "$0")/lib.sh"
use_etcd

[ "${DLOCK_TEST_ETCD_CLUSTER:-1}" = 3 ] || fail "run this test under scripts/with-etcd --cluster 3"

start_status_holder '^[0-9a-f]+$' '^[0-9]+$'

# The key layout: one key, dlock/app/one/<lease id>, under that lease, its
# create revision the fence, its value the holder's record.
etcd_keys dlock/app/one/ >"$tmpdir/keys.json"
python3 - "$tmpdir/keys.json" "$one_token" "$one_fence" "$one_pid" <<'PY' || fail "the lock's keys are wrong: $(cat "$tmpdir/keys.json")"
import json, sys
path, token, fence, pid = sys.argv[1:]
d = json.load(open(path))
assert len(d) == 1, "not exactly one key"
k = d[0]
assert k["key"] == "dlock/app/one/" + token, "the key is not dlock/app/one/<token>"
assert k["lease"] == token, "the key is not under the lease " + token
assert k["create_revision"] == int(fence), "DLOCK_FENCE is not the key's create revision"
assert json.loads(k["value"])["pid"] == int(pid), "the value does not hold the holder's pid"
PY
granted=$("$ETCDCTL" lease timetolive "$one_token" -w json | json 'd["granted-ttl"]')
[ "$granted" = 20 ] || fail "--ttl 20s gave a lease of $granted s"

check_held_status_text app/one "$one_pid" "$one_fence"
printf '%s\n' "$out" | grep -qE '^lease: +(1[0-9]|20)(\.[0-9]+)?s left' || fail "status does not show the 10-20 s left on the lease: $out"
check_held_status_json app/one "$one_pid" "$one_fence" 'isinstance(t, int) and 10000 <= t <= 20000'

# A waiter is a queued key behind the holder's; one that gives up revokes
# its lease, which takes its key away.
two_keys() {
  [ "$(etcd_key_count app/one)" = 2 ] || fail "dlock/app/one/ does not hold 2 keys with 1 waiter: $(etcd_keys dlock/app/one/)"
}
one_key() {
  [ "$(etcd_key_count app/one)" = 1 ] || fail "the interrupted waiter left its key: $(etcd_keys dlock/app/one/)"
}
check_waiters app/one 1 two_keys one_key

# Free locks: exit 3, also one that was held before.
check_free_status

# list: one row per held lock, whatever else lives on the server. The lock
# "app" lives beside app/one: neither counts the other's keys.
"$ETCDCTL" put dlock/not/a/lock data >/dev/null || fail "could not put an unrelated key"
"$ETCDCTL" put elsewhere/thing data >/dev/null || fail "could not put an unrelated key"
start_list_locks 10 app
[ "$(etcd_key_count app/ns elsewhere)" = 1 ] || fail "--namespace elsewhere did not put the lock under elsewhere/app/ns/: $(etcd_keys elsewhere/)"
check_list_rows 10 "app/three not/a/lock app/ns nothing.here thing" app app/one app/two
check_list_json 13
# The keys of a nested name are no contenders: no waiters anywhere.
got=$(printf '%s' "$out" | json 'sorted((x["name"], x["held"], x["holder"]["pid"], x["fence"], x["waiters"]) for x in d if x["name"].startswith("app"))')
want="[[\"app\", true, $third_pid, $(cat "$tmpdir/h3.fence"), 0], [\"app/one\", true, $one_pid, $one_fence, 0], [\"app/two\", true, $two_pid, $(cat "$tmpdir/h2.fence"), 0]]"
[ "$got" = "$want" ] || fail "list --json: got $got, expected $want"

# ping: every member with its version and role, exactly one leader, quorum.
version=$(etcd --version | sed -n 's/^etcd Version: //p')
[ -n "$version" ] || fail "etcd --version does not show the version"
read -ra ports <<<"$DLOCK_TEST_ETCD_PORTS"
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping exited $rc; stdout: $out; stderr: $err"
[ -z "$err" ] || fail "ping printed on stderr: $err"
for p in "${ports[@]}"; do
  printf '%s\n' "$out" | grep "127.0.0.1:$p" | grep -q "$version" || fail "ping does not show member 127.0.0.1:$p with version $version: $out"
done
[ "$(printf '%s\n' "$out" | grep -v '^detail' | grep -cw leader)" = 1 ] || fail "ping does not show exactly one leader: $out"
printf '%s\n' "$out" | grep -qiE 'quorum:? +yes' || fail "ping does not say there is a quorum: $out"
capture "${DL[@]}" ping --json
[ "$rc" = 0 ] || fail "ping --json exited $rc"
printf '%s' "$out" >"$tmpdir/ping.json"
python3 - "$tmpdir/ping.json" "$version" "${ports[@]}" <<'PY' || fail "ping --json is wrong: $out"
import json, sys
d = json.load(open(sys.argv[1]))
version, ports = sys.argv[2], sys.argv[3:]
assert d["ok"] is True and d["quorum"] is True, d
assert [n["address"] for n in d["nodes"]] == ["http://127.0.0.1:%s" % p for p in ports], d["nodes"]
for n in d["nodes"]:
    assert n["reachable"] is True and version in n["version"], n
    assert isinstance(n["rtt_ms"], (int, float)) and n["rtt_ms"] >= 0, n
roles = [n["version"].rsplit(", ", 1)[-1] for n in d["nodes"]]
assert sorted(roles) == ["follower", "follower", "leader"], roles
PY

# One member stopped (a follower, so that nothing waits for an election):
# unreachable, the quorum kept.
leader=$(etcd_leader) || fail "no member leads"
follower=$((leader % 3 + 1))
etcd_stop "$follower"
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping with one of three members stopped exited $rc, expected 0; stdout: $out; stderr: $err"
printf '%s\n' "$out" | grep "127.0.0.1:${ports[$((follower - 1))]}" | grep -qi unreachable ||
  fail "ping does not show the stopped member $follower (port ${ports[$((follower - 1))]}) unreachable: $out"
[ "$(printf '%s\n' "$out" | grep -ci unreachable)" = 1 ] || fail "ping shows more than one member unreachable: $out"
printf '%s\n' "$out" | grep -qiE 'quorum:? +yes' || fail "ping with one of three members stopped does not say there is a quorum: $out"
is_held app/one || fail "status does not see app/one held with one member stopped"

# Two stopped: the last member has no leader, so no quorum.
other=$((follower % 3 + 1))
[ "$other" != "$leader" ] || other=$((other % 3 + 1))
etcd_stop "$other"
no_quorum() {
  capture "${DL[@]}" --connect-timeout 1s ping
  [ "$rc" = 69 ] && printf '%s\n' "$out" | grep -qiE 'quorum:? +no'
}
wait_until -t 5 no_quorum || fail "ping with two of three members stopped: exit $rc, expected 69 and 'quorum: no'; stdout: $out; stderr: $err"
etcd_start "$other"
etcd_start "$follower"

check_holders_released h
[ "$(etcd_key_count app/one)" = 0 ] || fail "the released lock left keys: $(etcd_keys dlock/app/one/)"

# A prefix selects names, not keys: list app/ shows app/one's sibling
# app/two, not the lock app (whose keys dlock/app/<id> share the key prefix).
check_list_prefix app/ "app/two:$two_pid"
pass
