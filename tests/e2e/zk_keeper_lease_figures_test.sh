#!/usr/bin/env bash
# What acquire, renew and status print about a ZooKeeper lock held by the
# acquire keeper is true even if the keeper stalls: ttl_ms and expires_at
# never reach past t0 + the negotiated session timeout (here at most 60 s,
# scripts/with-zookeeper's maxSessionTimeout), whatever --ttl asked for; the
# keeper's own window (--ttl) is printed apart, as keeper_window_ms and
# renew_by. A keeper stopped with SIGSTOP after `renew --ttl 30s` loses the
# lock when its session expires: not before the expires_at renew printed.
SCENARIO="zookeeper: the acquire keeper's printed lease is the session's"
. "$(dirname "$0")/lib.sh"
use_zookeeper

max_session_ms=60000

iso_ms() {
  python3 -c 'import datetime, sys
t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
print(int(t.timestamp() * 1000 + 0.5))' "$1"
}

# check_figures WHAT JSON LIMIT_MS WINDOW_MS AFTER: ttl_ms <= LIMIT_MS,
# expires_at <= AFTER + LIMIT_MS, keeper_window_ms <= WINDOW_MS and
# renew_by not before expires_at.
check_figures() {
  printf '%s' "$2" | python3 -c '
import datetime, json, sys
d = json.load(sys.stdin)
limit, window, after = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ms = lambda t: int(datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ")
                   .replace(tzinfo=datetime.timezone.utc).timestamp() * 1000 + 0.5)
assert 0 < d["ttl_ms"] <= limit, "ttl_ms %d beyond the %d ms session" % (d["ttl_ms"], limit)
assert ms(d["expires_at"]) <= after + limit, "expires_at %d ms from now, beyond the %d ms session" % (
    ms(d["expires_at"]) - after, limit)
assert d["keeper_window_ms"] <= window and d["keeper_window_ms"] >= d["ttl_ms"], "keeper_window_ms %r" % d
assert ms(d["renew_by"]) >= ms(d["expires_at"]), "renew_by before expires_at: %r" % d
' "$3" "$4" "$5" || fail "$1 printed $2"
}

# --ttl 5m: the keeper waits 5 minutes for a renew, but only the session's
# lease is promised.
capture "${DL[@]}" acquire long --ttl 5m --json
after=$(now_ms)
[ "$rc" = 0 ] || fail "acquire long --ttl 5m --json exited $rc; stderr: $err"
echo "acquire --ttl 5m printed $out"
check_figures "acquire --ttl 5m" "$out" "$max_session_ms" 300000 "$after"
long_token=$(printf '%s' "$out" | json 'd["token"]')
track "$(keeper_of long)"
capture "${DL[@]}" status long --json
[ "$rc" = 0 ] || fail "status long exited $rc"
[ "$(printf '%s' "$out" | json "d['ttl_left_ms'] is None or d['ttl_left_ms'] <= $max_session_ms")" = true ] ||
  fail "status shows more time left than the session can hold: $out"
capture "${DL[@]}" renew long "$long_token" --ttl 10m --json
after=$(now_ms)
[ "$rc" = 0 ] || fail "renew long --ttl 10m --json exited $rc; stderr: $err"
echo "renew --ttl 10m printed $out"
check_figures "renew --ttl 10m" "$out" "$max_session_ms" 600000 "$after"
"${DL[@]}" release long "$long_token" || fail "release long failed"

# --ttl 3s gives a 3 s session; renew --ttl 30s widens the keeper's window,
# not the session. A stalled keeper loses the lock once the session expires.
# (3 s, not 1 s: between acquire and the renew the harness looks up the
# keeper, a status call and python, which under load took most of a second.)
acquire_bg stalled --ttl 3s
capture "${DL[@]}" renew stalled "$token" --ttl 30s --json
after=$(now_ms)
[ "$rc" = 0 ] || fail "renew stalled --ttl 30s --json exited $rc; stderr: $err"
echo "renew --ttl 30s of a 3 s session printed $out"
check_figures "renew --ttl 30s of a 3 s session" "$out" 3000 30000 "$after"
expires=$(iso_ms "$(printf '%s' "$out" | json 'd["expires_at"]')")
kill -STOP "$keeper"
capture "${DL[@]}" acquire stalled --ttl 10s --wait 20s
got=$(now_ms)
kill -CONT "$keeper"
[ "$rc" = 0 ] || fail "the waiter on the stalled keeper's lock exited $rc; stderr: $err"
echo "the stalled keeper's lock went to a waiter $((got - expires)) ms after the expires_at renew printed"
[ "$expires" -le "$got" ] ||
  fail "renew printed expires_at $((expires - got)) ms after another client got the lock from the stalled keeper"
"${DL[@]}" release stalled "$out" || fail "the waiter's release failed"
wait_until -t 5 is_gone "$keeper" || fail "the keeper $keeper whose session expired is still running 5 s after SIGCONT"
pass
