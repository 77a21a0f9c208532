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
# Run under scripts/with-etcd --cluster 3.
SCENARIO="etcd: status, list and ping"
. "$(dirname "$0")/lib.sh"
use_etcd

[ "${DLOCK_TEST_ETCD_CLUSTER:-1}" = 3 ] || fail "run this test under scripts/with-etcd --cluster 3"

start_holder h app/one --ttl 20s
one_pid=$HOLDER_PID
one_token=$(cat "$tmpdir/h.token")
one_fence=$(cat "$tmpdir/h.fence")
[[ $one_token =~ ^[0-9a-f]+$ ]] && [[ $one_fence =~ ^[0-9]+$ ]] ||
  fail "holder did not get DLOCK_TOKEN/DLOCK_FENCE (token '$one_token', fence '$one_fence')"

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

# no_token WHAT TEXT: TEXT does not show the token.
no_token() {
  case $2 in *"$one_token"*) fail "$1 prints the release token: $2" ;; esac
}

capture "${DL[@]}" status app/one
[ "$rc" = 0 ] || fail "status of a held lock exited $rc, expected 0; stderr: $err"
case $out in *"$one_pid"*) ;; *) fail "status does not show the holder pid $one_pid: $out" ;; esac
case $out in *"$one_fence"*) ;; *) fail "status does not show the fence $one_fence: $out" ;; esac
case $out in *"$(hostname)"*) ;; *) fail "status does not show the holder's host: $out" ;; esac
printf '%s\n' "$out" | grep -qE '^lease: +(1[0-9]|20)(\.[0-9]+)?s left' || fail "status does not show the 10-20 s left on the lease: $out"
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
check(isinstance(d.get("ttl_left_ms"), int) and 10000 <= d["ttl_left_ms"] <= 20000, "ttl_left_ms %r" % d.get("ttl_left_ms"))
PY

# A waiter is a queued key behind the holder's; one that gives up revokes
# its lease, which takes its key away.
"${DL[@]}" run app/one --wait 20s -- true </dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
one_waiter() { [ "$(lock_waiters app/one)" = 1 ]; }
wait_until one_waiter || fail "status --json never counted the waiting run (now $(lock_waiters app/one)); stderr: $(cat "$tmpdir/waiter.err")"
[ "$(etcd_key_count app/one)" = 2 ] || fail "dlock/app/one/ does not hold 2 keys with 1 waiter: $(etcd_keys dlock/app/one/)"
capture "${DL[@]}" status app/one
printf '%s\n' "$out" | grep -qE '^waiters: +1$' || fail "status text does not show 1 waiter: $out"
no_token "status with a waiter" "$out$err"
kill -TERM "$waiter"
wait_exit "$waiter" 5
[ "$rc" = 143 ] || fail "the waiter ended with $rc after SIGTERM, expected 143; stderr: $(cat "$tmpdir/waiter.err")"
wait_until -t 3 has_no_waiter app/one || fail "the interrupted waiter is still counted"
[ "$(etcd_key_count app/one)" = 1 ] || fail "the interrupted waiter left its key: $(etcd_keys dlock/app/one/)"

# Free locks: exit 3, also one that was held before.
capture "${DL[@]}" status nothing.here
[ "$rc" = 3 ] || fail "status of a never-used lock exited $rc, expected 3; stderr: $err"
capture "${DL[@]}" status nothing.here --json
[ "$rc" = 3 ] || fail "status --json of a never-used lock exited $rc, expected 3"
[ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a never-used lock: held is not false: $out"
"${DL[@]}" run app/three -- true || fail "run app/three failed"
capture "${DL[@]}" status app/three --json
[ "$rc" = 3 ] || fail "status of a released lock exited $rc, expected 3"
[ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a released lock: held is not false: $out"

# list: one row per held lock, whatever else lives on the server. The lock
# "app" lives beside app/one: neither counts the other's keys.
start_holder h2 app/two
two_pid=$HOLDER_PID
start_holder h3 app
app_pid=$HOLDER_PID
"$ETCDCTL" put dlock/not/a/lock data >/dev/null || fail "could not put an unrelated key"
"$ETCDCTL" put elsewhere/thing data >/dev/null || fail "could not put an unrelated key"
capture "${DL[@]}" --namespace elsewhere acquire app/ns --ttl 30s
[ "$rc" = 0 ] || fail "acquire in namespace elsewhere exited $rc; stderr: $err"
[ "$(etcd_key_count app/ns elsewhere)" = 1 ] || fail "--namespace elsewhere did not put the lock under elsewhere/app/ns/: $(etcd_keys elsewhere/)"
for i in $(seq 1 10); do
  "${DL[@]}" acquire "bulk/$i" --ttl 60s >/dev/null || fail "acquire bulk/$i failed"
done
capture "${DL[@]}" list
[ "$rc" = 0 ] || fail "list exited $rc; stderr: $err"
no_token "list" "$out$err"
for n in app app/one app/two; do
  [ "$(printf '%s\n' "$out" | grep -cE "^${n}[[:space:]]")" = 1 ] || fail "list does not show exactly one row for $n: $out"
done
case $out in *app/three* | *not/a/lock* | *app/ns* | *nothing.here* | *thing*) fail "list shows a lock that is not held in this namespace: $out" ;; esac
case $out in *"$one_pid"*) ;; *) fail "list does not show holder pid $one_pid: $out" ;; esac
[ "$(printf '%s\n' "$out" | grep -cE '^bulk/[0-9]+[[:space:]]')" = 10 ] || fail "list does not show all 10 bulk/N locks: $out"

capture "${DL[@]}" list --json
[ "$rc" = 0 ] || fail "list --json exited $rc"
no_token "list --json" "$out"
[ "$(printf '%s' "$out" | json 'len(d)')" = 13 ] || fail "list --json does not hold 13 locks: $(printf '%s' "$out" | json '[x["name"] for x in d]')"
# The keys of a nested name are no contenders: no waiters anywhere.
got=$(printf '%s' "$out" | json 'sorted((x["name"], x["held"], x["holder"]["pid"], x["fence"], x["waiters"]) for x in d if x["name"].startswith("app"))')
want="[[\"app\", true, $app_pid, $(cat "$tmpdir/h3.fence"), 0], [\"app/one\", true, $one_pid, $one_fence, 0], [\"app/two\", true, $two_pid, $(cat "$tmpdir/h2.fence"), 0]]"
[ "$got" = "$want" ] || fail "list --json: got $got, expected $want"
capture "${DL[@]}" --namespace elsewhere list --json
[ "$(printf '%s' "$out" | json '[x["name"] for x in d]')" = '["app/ns"]' ] || fail "list in namespace elsewhere: $out"
capture "${DL[@]}" list zzz --json
[ "$rc" = 0 ] && [ "$(printf '%s' "$out" | json 'd')" = "[]" ] || fail "list with no match is not an empty array ($rc): $out"

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

release_holder h
wait_exit "$one_pid"
[ "$rc" = 0 ] || fail "holder h exited $rc; stderr: $(cat "$tmpdir/h.err")"
is_free app/one || fail "app/one is still held after its holder ended"
[ "$(etcd_key_count app/one)" = 0 ] || fail "the released lock left keys: $(etcd_keys dlock/app/one/)"

# A prefix selects names, not keys: list app/ shows app/one's sibling
# app/two, not the lock app (whose keys dlock/app/<id> share the key prefix).
capture "${DL[@]}" list app/ --json
[ "$rc" = 0 ] || fail "list app/ --json exited $rc; stderr: $err"
got=$(printf '%s' "$out" | json 'sorted(x["name"] for x in d) if isinstance(d, list) else "not an array"')
[ "$got" = '["app/two"]' ] || fail "list app/ --json: got $got, expected [\"app/two\"]"
pass
