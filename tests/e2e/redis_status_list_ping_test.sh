#!/usr/bin/env bash
# status, list and ping on Redis: holder, fence, lease left and waiters,
# never the token; list finds every held lock by SCAN (not KEYS) and nothing
# else; ping shows the server version and role and warns about an eviction
# policy that could drop locks.
SCENARIO="redis status, list and ping"
. "$(dirname "$0")/lib.sh"
use_redis

start_holder h app/one --ttl 20s
one_pid=$HOLDER_PID
one_token=$(cat "$tmpdir/h.token")
one_fence=$(cat "$tmpdir/h.fence")
[ -n "$one_token" ] && [ -n "$one_fence" ] || fail "holder did not get DLOCK_TOKEN/DLOCK_FENCE"
raw_token=$("$RCLI" GET "$(redis_key app/one lock)")
[[ $raw_token =~ ^[0-9a-f]{32}$ ]] || fail "the lock key holds '$raw_token', not a 32-hex token"
[ "$("$RCLI" HGET "$(redis_key app/one info)" fence)" = "$one_fence" ] || fail "the info hash's fence is not the job's DLOCK_FENCE $one_fence"

# no_token WHAT TEXT: TEXT shows neither form of the token.
no_token() {
  case $2 in *"$one_token"* | *"$raw_token"*) fail "$1 prints the release token: $2" ;; esac
}

capture "${DL[@]}" status app/one
[ "$rc" = 0 ] || fail "status of a held lock exited $rc, expected 0; stderr: $err"
case $out in *"$one_pid"*) ;; *) fail "status does not show the holder pid $one_pid: $out" ;; esac
case $out in *"$one_fence"*) ;; *) fail "status does not show the fence $one_fence: $out" ;; esac
case $out in *"$(hostname)"*) ;; *) fail "status does not show the holder's host: $out" ;; esac
printf '%s\n' "$out" | grep -qiE 'lease|left' || fail "status does not show the time left: $out"
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
check(isinstance(d.get("ttl_left_ms"), int) and 0 < d["ttl_left_ms"] <= 20000, "ttl_left_ms %r" % d.get("ttl_left_ms"))
check(d.get("waiters") == 0, "waiters %r" % d.get("waiters"))
PY

# A waiter shows up in waiters (PUBSUB NUMSUB of the released channel).
"${DL[@]}" run app/one --wait 20s -- true </dev/null 2>/dev/null &
waiter=$!
track "$waiter"
wait_until has_waiter app/one || fail "status --json never counted the waiting run as a waiter"
capture "${DL[@]}" status app/one
printf '%s\n' "$out" | grep -qE 'waiters: +1' || fail "status text does not show 1 waiter: $out"
kill -TERM "$waiter"
wait_exit "$waiter" 5
wait_until -t 3 has_no_waiter app/one || fail "the interrupted waiter is still counted"

# Free locks: exit 3, also one that was held before (its fence key remains).
capture "${DL[@]}" status nothing.here
[ "$rc" = 3 ] || fail "status of a never-used lock exited $rc, expected 3"
"${DL[@]}" run app/three -- true || fail "run app/three failed"
capture "${DL[@]}" status app/three --json
[ "$rc" = 3 ] || fail "status of a released lock exited $rc, expected 3"
[ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a released lock: held is not false: $out"

# list: one row per held lock, whatever else lives in the database.
start_holder h2 app/two
two_pid=$HOLDER_PID
start_holder h3 other
other_pid=$HOLDER_PID
"$RCLI" SET unrelated:key value >/dev/null
"$RCLI" SET '{dlock:fake}:fence' 12 >/dev/null
capture "${DL[@]}" --namespace elsewhere acquire app/ns --ttl 30s
[ "$rc" = 0 ] || fail "acquire in namespace elsewhere exited $rc; stderr: $err"
[ "$("$RCLI" EXISTS "$(redis_key app/ns lock elsewhere)")" = 1 ] || fail "--namespace elsewhere did not use the key $(redis_key app/ns lock elsewhere)"
# Enough locks that SCAN needs several round trips.
for i in $(seq 1 40); do
  "${DL[@]}" acquire "bulk/$i" --ttl 60s >/dev/null || fail "acquire bulk/$i failed"
done

"$RCLI" CONFIG RESETSTAT >/dev/null
capture "${DL[@]}" list
[ "$rc" = 0 ] || fail "list exited $rc; stderr: $err"
no_token "list" "$out$err"
for n in app/one app/two other; do
  [ "$(printf '%s\n' "$out" | grep -cE "^${n}[[:space:]]")" = 1 ] || fail "list does not show exactly one row for $n: $out"
done
case $out in *app/three* | *fake* | *unrelated* | *app/ns*) fail "list shows a lock that is not held in this namespace: $out" ;; esac
case $out in *"$one_pid"*) ;; *) fail "list does not show holder pid $one_pid: $out" ;; esac
[ "$(printf '%s\n' "$out" | grep -cE '^bulk/[0-9]+[[:space:]]')" = 40 ] || fail "list does not show all 40 bulk/N locks"
commandstats=$("$RCLI" INFO commandstats | tr -d '\r')
printf '%s\n' "$commandstats" | grep -q '^cmdstat_keys:' && fail "list used KEYS (it must SCAN)"
printf '%s\n' "$commandstats" | grep -q '^cmdstat_scan:' || fail "list did not SCAN: $commandstats"

capture "${DL[@]}" list app/ --json
[ "$rc" = 0 ] || fail "list app/ --json exited $rc"
no_token "list --json" "$out"
got=$(printf '%s' "$out" | json 'sorted((x["name"], x["held"], x["holder"]["pid"]) for x in d) if isinstance(d, list) else "not an array"')
want="[[\"app/one\", true, $one_pid], [\"app/two\", true, $two_pid]]"
[ "$got" = "$want" ] || fail "list app/ --json: got $got, expected $want"
capture "${DL[@]}" list --json
[ "$(printf '%s' "$out" | json 'len(d)')" = 43 ] || fail "list --json does not hold 43 locks: $(printf '%s' "$out" | json '[x["name"] for x in d]')"
capture "${DL[@]}" --namespace elsewhere list --json
[ "$(printf '%s' "$out" | json '[x["name"] for x in d]')" = '["app/ns"]' ] || fail "list in namespace elsewhere: $out"
capture "${DL[@]}" list zzz --json
[ "$rc" = 0 ] && [ "$(printf '%s' "$out" | json 'd')" = "[]" ] || fail "list with no match is not an empty array ($rc): $out"
[ "$other_pid" -gt 0 ] || fail "no pid for holder h3"

# ping: version and role, round trip.
version=$("$RCLI" INFO server | tr -d '\r' | sed -n 's/^redis_version://p')
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping exited $rc; stdout: $out; stderr: $err"
case $out in *"$version"*) ;; *) fail "ping does not show the server version $version: $out" ;; esac
printf '%s\n' "$out" | grep -qi master || fail "ping does not show the role master: $out"
[ -z "$err" ] || fail "ping printed on stderr under the default eviction policy: $err"
capture "${DL[@]}" ping --json
[ "$rc" = 0 ] || fail "ping --json exited $rc"
printf '%s' "$out" >"$tmpdir/ping.json"
python3 - "$tmpdir/ping.json" "$version" "$DLOCK_TEST_REDIS_PORT" <<'PY' || fail "ping --json is wrong: $out"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True, d
node = d["nodes"][0]
assert node["reachable"] is True, node
assert sys.argv[2] in node["version"], node
assert sys.argv[3] in node["address"], node
assert isinstance(node["rtt_ms"], (int, float)) and node["rtt_ms"] >= 0, node
PY

"$RCLI" CONFIG SET maxmemory-policy allkeys-lru >/dev/null
capture "${DL[@]}" ping
printf '%s\n' "$err" | grep -qi 'allkeys-lru' && printf '%s\n' "$err" | grep -qiE 'warn|evict' ||
  fail "ping does not warn (on stderr) about maxmemory-policy allkeys-lru: stdout: $out; stderr: $err"
"$RCLI" CONFIG SET maxmemory-policy noeviction >/dev/null

release_holder h
release_holder h2
release_holder h3
wait_exit "$one_pid"
[ "$rc" = 0 ] || fail "holder h exited $rc"
is_free app/one || fail "app/one is still held after its holder ended"
pass
