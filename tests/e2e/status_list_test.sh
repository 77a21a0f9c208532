#!/usr/bin/env bash
# status and list, text and --json, while held and when free; never the token.
SCENARIO="status and list"
. "$(dirname "$0")/lib.sh"

start_holder h app/one --ttl 20s
one_pid=$HOLDER_PID
one_token=$(cat "$tmpdir/h.token")
one_fence=$(cat "$tmpdir/h.fence")
[ -n "$one_token" ] && [ -n "$one_fence" ] || fail "holder did not get DLOCK_TOKEN/DLOCK_FENCE"

# Text form.
capture "${DL[@]}" status app/one
[ "$rc" = 0 ] || fail "status of a held lock exited $rc, expected 0; stderr: $err"
case $out in *"$one_pid"*) ;; *) fail "status does not show the holder pid $one_pid: $out" ;; esac
case $out in *holder*) ;; *) fail "status does not show the holder's command: $out" ;; esac
case $out in *"$one_fence"*) ;; *) fail "status does not show the fence $one_fence: $out" ;; esac
case $out in *"$one_token"*) fail "status prints the release token" ;; esac
case $err in *"$one_token"*) fail "status prints the release token on stderr" ;; esac

# JSON form.
capture "${DL[@]}" status app/one --json
[ "$rc" = 0 ] || fail "status --json of a held lock exited $rc; stderr: $err"
case $out in *"$one_token"*) fail "status --json prints the release token" ;; esac
printf '%s' "$out" >"$tmpdir/status.json"
python3 - "$tmpdir/status.json" "$one_pid" "$one_fence" "$(hostname)" "$(id -un)" <<'PY' || fail "status --json is wrong: $out"
import json, sys
path, pid, fence, host, user = sys.argv[1:]
d = json.load(open(path))
def check(cond, what):
    if not cond:
        sys.exit("status --json: " + what)
for key in ("name", "held", "holder", "fence", "ttl_left_ms", "waiters"):
    check(key in d, "missing key " + key)
check(d["name"] == "app/one", "name is %r" % d["name"])
check(d["held"] is True, "held is %r" % d["held"])
h = d["holder"]
check(isinstance(h, dict), "holder is not an object")
for key in ("pid", "command", "host", "user", "since"):
    check(key in h, "missing key holder." + key)
check(h["pid"] == int(pid), "holder.pid %r != dlock's pid %s" % (h["pid"], pid))
check(isinstance(h["command"], str) and "holder" in h["command"], "holder.command %r" % h["command"])
check(h["host"] == host, "holder.host %r != %s" % (h["host"], host))
check(h["user"] == user, "holder.user %r != %s" % (h["user"], user))
check(isinstance(h["since"], str) and h["since"][:2] == "20", "holder.since %r" % h["since"])
check(isinstance(d["fence"], int) and d["fence"] == int(fence), "fence %r != child's DLOCK_FENCE %s" % (d["fence"], fence))
check(isinstance(d["ttl_left_ms"], int) and 0 < d["ttl_left_ms"] <= 20000, "ttl_left_ms %r" % d["ttl_left_ms"])
check(isinstance(d["waiters"], int) and d["waiters"] == 0, "waiters %r" % d["waiters"])
PY
printf '%s' "$out" | grep -qiE '"token"' && fail "status --json has a token key: $out"

# A waiter shows up in waiters.
"${DL[@]}" run app/one --wait 20s -- true </dev/null 2>/dev/null &
waiter=$!
track "$waiter"
wait_until has_waiter app/one || fail "status --json never counted the waiting run as a waiter"
kill -TERM "$waiter"
wait_exit "$waiter" 5

# Free lock: exit 3, held false.
capture "${DL[@]}" status nothing.here
[ "$rc" = 3 ] || fail "status of a free lock exited $rc, expected 3"
capture "${DL[@]}" status nothing.here --json
[ "$rc" = 3 ] || fail "status --json of a free lock exited $rc, expected 3"
[ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a free lock: held is not false: $out"
[ "$(printf '%s' "$out" | json 'd["name"]')" = nothing.here ] || fail "status --json of a free lock: wrong name: $out"

# list: one row per held lock, PREFIX filters.
start_holder h2 app/two
two_pid=$HOLDER_PID
two_token=$(cat "$tmpdir/h2.token")
start_holder h3 other
other_pid=$HOLDER_PID
# A lock that was used and is free again must not be listed.
"${DL[@]}" run app/three -- true || fail "run app/three failed"

capture "${DL[@]}" list
[ "$rc" = 0 ] || fail "list exited $rc; stderr: $err"
for n in app/one app/two other; do
  [ "$(printf '%s\n' "$out" | grep -cE "^${n}[[:space:]]")" = 1 ] || fail "list does not show exactly one row for $n: $out"
done
case $out in *app/three*) fail "list shows the free lock app/three: $out" ;; esac
case $out in *"$one_token"* | *"$two_token"*) fail "list prints a release token" ;; esac
rows=$(printf '%s\n' "$out" | grep -cE '^(app/one|app/two|other)[[:space:]]')
[ "$rows" = 3 ] || fail "list shows $rows lock rows, expected 3: $out"
case $out in *"$one_pid"*) ;; *) fail "list does not show holder pid $one_pid: $out" ;; esac

capture "${DL[@]}" list app/
[ "$rc" = 0 ] || fail "list app/ exited $rc"
printf '%s\n' "$out" | grep -qE '^other[[:space:]]' && fail "list app/ shows 'other': $out"
[ "$(printf '%s\n' "$out" | grep -cE '^app/(one|two)[[:space:]]')" = 2 ] || fail "list app/ does not show app/one and app/two: $out"

capture "${DL[@]}" list --json
[ "$rc" = 0 ] || fail "list --json exited $rc"
case $out in *"$one_token"* | *"$two_token"*) fail "list --json prints a release token" ;; esac
got=$(printf '%s' "$out" | json 'sorted((x["name"], x["held"], x["holder"]["pid"]) for x in d) if isinstance(d, list) else "not an array"')
want="[[\"app/one\", true, $one_pid], [\"app/two\", true, $two_pid], [\"other\", true, $other_pid]]"
[ "$got" = "$want" ] || fail "list --json: got $got, expected $want"

capture "${DL[@]}" list app --json
got=$(printf '%s' "$out" | json 'sorted(x["name"] for x in d)')
[ "$got" = '["app/one", "app/two"]' ] || fail "list app --json: got $got"

capture "${DL[@]}" list zzz --json
[ "$rc" = 0 ] || fail "list with no match exited $rc"
[ "$(printf '%s' "$out" | json 'd')" = "[]" ] || fail "list --json with no match is not an empty array: $out"

release_holder h
release_holder h2
release_holder h3
wait_exit "$one_pid"
capture "${DL[@]}" status app/one --json
[ "$rc" = 3 ] || fail "status after the holder ended exited $rc, expected 3"
[ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "held is not false after release: $out"
wait_exit "$two_pid"
wait_exit "$other_pid"
capture "${DL[@]}" list --json
[ "$(printf '%s' "$out" | json 'd')" = "[]" ] || fail "list --json after all holders ended is not empty: $out"

# Names may start with '.' (an allowed character): such locks are listed too.
start_holder h4 .dot
capture "${DL[@]}" status .dot
[ "$rc" = 0 ] || fail "status .dot of a held lock exited $rc"
capture "${DL[@]}" list --json
got=$(printf '%s' "$out" | json '[x["name"] for x in d]')
[ "$got" = '[".dot"]' ] || fail "list --json does not show the held lock '.dot': $got"
capture "${DL[@]}" list .
printf '%s\n' "$out" | grep -qE '^\.dot[[:space:]]' || fail "list . does not show the held lock '.dot': $out"
release_holder h4
wait_exit "$HOLDER_PID"
pass
