#!/usr/bin/env bash
# status, list and ping on PostgreSQL. A held lock is a granted advisory
# lock on its key in pg_locks, by the session whose application_name is
# 'dlock:NAME' (cut to 63 bytes); status shows holder, fence (a transaction
# id: below the server's current one, increasing run to run) and the
# waiters, i.e. the ungranted requests for the key; never the token; a free
# lock exits 3. list shows every held lock of the namespace (long names in
# full) and nothing else: not other namespaces' locks, not advisory locks
# taken by other programs. ping shows the server version and the round trip.
SCENARIO="postgres: status, list and ping"
. "$(dirname "$0")/lib.sh"
use_postgres

start_holder h app/one --ttl 20s
one_pid=$HOLDER_PID
one_token=$(cat "$tmpdir/h.token")
one_fence=$(cat "$tmpdir/h.fence")
[ -n "$one_token" ] && [[ $one_fence =~ ^[0-9]+$ ]] || fail "holder did not get DLOCK_TOKEN/DLOCK_FENCE (fence '$one_fence')"
one_key=$(pg_key app/one)

# What the server shows of it.
session=$(pg_sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'dlock:app/one'")
[ -n "$session" ] || fail "no session has application_name 'dlock:app/one': $(pg_sql "SELECT pid, application_name FROM pg_stat_activity WHERE backend_type = 'client backend'")"
[ "$(pg_holder_pid "$one_key")" = "$session" ] || fail "the advisory lock on $one_key is not held by the session 'dlock:app/one' ($session): holder '$(pg_holder_pid "$one_key")'"
[ "$(pg_sql "SELECT txid_current() > $one_fence")" = t ] || fail "the fence $one_fence is not below the server's current transaction id"

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

# Waiters are the ungranted requests for the key; one that gives up takes
# its request away.
waiters=()
for i in 1 2; do
  "${DL[@]}" run app/one --wait 20s -- true </dev/null 2>/dev/null &
  waiters+=($!)
  track $!
done
two_waiting() { [ "$(pg_waiting "$one_key")" = 2 ]; }
wait_until two_waiting || fail "pg_locks never showed the two waiting runs (now $(pg_waiting "$one_key"))"
[ "$(lock_waiters app/one)" = 2 ] || fail "status --json counts $(lock_waiters app/one) waiters, pg_locks 2"
capture "${DL[@]}" status app/one
printf '%s\n' "$out" | grep -qE 'waiters: +2' || fail "status text does not show 2 waiters: $out"
kill -TERM "${waiters[@]}"
wait_exit "${waiters[0]}" 5
wait_exit "${waiters[1]}" 5
wait_until -t 3 has_no_waiter app/one || fail "the interrupted waiters are still counted"
[ "$(pg_waiting "$one_key")" = 0 ] || fail "the interrupted waiters left ungranted requests in pg_locks"

# Free locks exit 3: never used, and used before.
capture "${DL[@]}" status nothing.here
[ "$rc" = 3 ] || fail "status of a never-used lock exited $rc, expected 3; stderr: $err"
capture "${DL[@]}" status nothing.here --json
[ "$rc" = 3 ] || fail "status --json of a never-used lock exited $rc, expected 3"
[ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a never-used lock: held is not false: $out"
three=$("${DL[@]}" run app/three -- sh -c 'echo "$DLOCK_FENCE"') || fail "run app/three failed"
[ "$three" -gt "$one_fence" ] || fail "a later run's fence ($three) is not greater than an earlier holder's ($one_fence)"
capture "${DL[@]}" status app/three --json
[ "$rc" = 3 ] || fail "status of a released lock exited $rc, expected 3"
[ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a released lock: held is not false: $out"

# list: one row per held lock of the namespace, whatever else the server holds.
start_holder h2 app/two
two_pid=$HOLDER_PID
start_holder h3 other
other_pid=$HOLDER_PID
long=long/$(printf 'n%.0s' $(seq 1 90))
"${DL[@]}" acquire "$long" --ttl 60s >/dev/null || fail "acquire of a 95-byte name failed"
app_name=$(pg_sql "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'dlock:long/%'")
[ "$app_name" = "$(printf 'dlock:%s' "$long" | cut -c1-63)" ] ||
  fail "the application_name of a long name's session is '$app_name', expected 'dlock:NAME' cut to 63 bytes"
capture "${DL[@]}" --namespace elsewhere acquire app/ns --ttl 30s
[ "$rc" = 0 ] || fail "acquire in namespace elsewhere exited $rc; stderr: $err"
[ "$(pg_holder_pid "$(pg_key app/ns elsewhere)")" != "" ] || fail "--namespace elsewhere did not lock the key of 'elsewhere app/ns'"
for i in $(seq 1 10); do
  "${DL[@]}" acquire "bulk/$i" --ttl 60s >/dev/null || fail "acquire bulk/$i failed"
done
# An advisory lock that is not dlock's, in the same database.
mkfifo "$tmpdir/psql.fifo"
"$PSQL" <"$tmpdir/psql.fifo" >"$tmpdir/psql.out" 2>&1 &
track $!
exec 7>"$tmpdir/psql.fifo"
printf '%s\n' "SELECT pg_advisory_lock(12345); SELECT pg_advisory_lock(1, 2);" >&7
foreign_held() { [ "$(pg_sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid IN (12345, 2)")" = 2 ]; }
wait_until foreign_held || fail "psql did not take its own advisory locks: $(cat "$tmpdir/psql.out")"

capture "${DL[@]}" list
[ "$rc" = 0 ] || fail "list exited $rc; stderr: $err"
no_token "list" "$out$err"
for n in app/one app/two other "$long"; do
  [ "$(printf '%s\n' "$out" | grep -cE "^${n}[[:space:]]")" = 1 ] || fail "list does not show exactly one row for $n: $out"
done
case $out in *app/three* | *app/ns* | *nothing.here*) fail "list shows a lock that is not held in this namespace: $out" ;; esac
case $out in *"$one_pid"*) ;; *) fail "list does not show holder pid $one_pid: $out" ;; esac
[ "$(printf '%s\n' "$out" | grep -cE '^bulk/[0-9]+[[:space:]]')" = 10 ] || fail "list does not show all 10 bulk/N locks: $out"

capture "${DL[@]}" list app/ --json
[ "$rc" = 0 ] || fail "list app/ --json exited $rc"
no_token "list --json" "$out"
got=$(printf '%s' "$out" | json 'sorted((x["name"], x["held"], x["holder"]["pid"]) for x in d) if isinstance(d, list) else "not an array"')
want="[[\"app/one\", true, $one_pid], [\"app/two\", true, $two_pid]]"
[ "$got" = "$want" ] || fail "list app/ --json: got $got, expected $want"
capture "${DL[@]}" list --json
[ "$(printf '%s' "$out" | json 'len(d)')" = 14 ] || fail "list --json does not hold 14 locks: $(printf '%s' "$out" | json '[x["name"] for x in d]')"
[ "$(printf '%s' "$out" | json '[x["fence"] for x in d if x["name"] == "app/one"]')" = "[$one_fence]" ] ||
  fail "list --json does not show app/one's fence $one_fence: $out"
capture "${DL[@]}" --namespace elsewhere list --json
[ "$(printf '%s' "$out" | json '[x["name"] for x in d]')" = '["app/ns"]' ] || fail "list in namespace elsewhere: $out"
capture "${DL[@]}" list zzz --json
[ "$rc" = 0 ] && [ "$(printf '%s' "$out" | json 'd')" = "[]" ] || fail "list with no match is not an empty array ($rc): $out"
[ "$other_pid" -gt 0 ] || fail "no pid for holder h3"
exec 7>&-

# ping: version and round trip.
version=$DLOCK_TEST_PG_VERSION
capture "${DL[@]}" ping
[ "$rc" = 0 ] || fail "ping exited $rc; stdout: $out; stderr: $err"
case $out in *"$version"*) ;; *) fail "ping does not show the server version $version: $out" ;; esac
printf '%s\n' "$out" | grep -qE '[0-9.]+ ?(ms|µs|us)' || fail "ping does not show a round-trip time: $out"
[ -z "$err" ] || fail "ping printed on stderr: $err"
capture "${DL[@]}" ping --json
[ "$rc" = 0 ] || fail "ping --json exited $rc"
printf '%s' "$out" >"$tmpdir/ping.json"
python3 - "$tmpdir/ping.json" "$version" "$DLOCK_TEST_PG_PORT" <<'PY' || fail "ping --json is wrong: $out"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True, d
node = d["nodes"][0]
assert node["reachable"] is True, node
assert sys.argv[2] in node["version"], node
assert sys.argv[3] in node["address"], node
assert isinstance(node["rtt_ms"], (int, float)) and 0 <= node["rtt_ms"] < 2000, node
PY

release_holder h
release_holder h2
release_holder h3
wait_exit "$one_pid"
[ "$rc" = 0 ] || fail "holder h exited $rc"
is_free app/one || fail "app/one is still held after its holder ended"
[ -z "$(pg_holder_pid "$one_key")" ] || fail "the advisory lock on $one_key is still held after its holder ended"
pass
