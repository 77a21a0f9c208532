#!/usr/bin/env bash
# PostgreSQL: the server frees the lock of a client that vanished once its
# TCP keepalives (and tcp_user_timeout) give up on the connection, so they
# are what bounds the lease T. They must follow the T dlock promises:
#   - set for dlock's session whatever the role says (ALTER ROLE dlock SET
#     tcp_keepalives_idle = 1, ... would free a vanished client's lock
#     after about 2 s, whatever --ttl);
#   - set anew by a renewal that asks for a longer T (renew --ttl): with
#     acquire --ttl 12s the first probe goes out after 6 s of silence; after
#     renew --ttl 60s, after 30 s (it stayed at 6 s: the server could free
#     the lock 12 s after a keeper vanished while renew had promised 60 s);
#   - not cut at once by a renewal that asks for a shorter T, while the
#     longer promise made before still runs (that renewal's answer may never
#     come, and the keeper then still counts on the longer one).
# The server's end of the keeper's connection is read with ss(8): its
# keepalive timer shows the time left to the next probe.
SCENARIO="postgres: the server's keepalives follow the ttl a renewal asks for"
. "$(dirname "$0")/lib.sh"
use_postgres
command -v ss >/dev/null || fail "ss not found (iproute2)"

pg_sql "ALTER ROLE dlock SET tcp_keepalives_idle = 1" >/dev/null
pg_sql "ALTER ROLE dlock SET tcp_keepalives_interval = 1" >/dev/null
pg_sql "ALTER ROLE dlock SET tcp_keepalives_count = 1" >/dev/null
pg_sql "ALTER ROLE dlock SET tcp_user_timeout = 1500" >/dev/null

# keepalive_left: seconds to the next keepalive probe on the server's end
# of the keeper's connection (empty while ss shows no keepalive timer, e.g.
# while an answer waits for its ACK). ss writes 1min5sec, 5.976ms (5.976 s),
# 5sec, 180ms.
keepalive_left() {
  local client_port
  client_port=$("$DLOCK_TEST_PG_PSQL" -c "SELECT client_port FROM pg_stat_activity WHERE application_name = 'dlock:x'")
  [ -n "$client_port" ] || return 0
  ss -tnoH state established "( sport = :$DLOCK_TEST_PG_PORT and dport = :$client_port )" |
    sed -n 's/.*timer:(keepalive,\([^,]*\),.*/\1/p' | head -1 |
    python3 -c 'import re, sys
t = sys.stdin.read().strip()
m = re.fullmatch(r"(?:(\d+)min)?(?:(\d+)(?:sec|\.))?(?:(\d+)ms)?", t)
if t and m:
    mins, secs, ms = (int(g or 0) for g in m.groups())
    print(mins * 60 + secs + ms / 1000)'
}
# at_least SECONDS: the next probe is SECONDS or more away.
at_least() {
  local left
  left=$(keepalive_left)
  [ -n "$left" ] && awk -v l="$left" -v m="$1" 'BEGIN { exit !(l >= m) }'
}

capture "${DL[@]}" acquire x --ttl 12s
[ "$rc" = 0 ] || fail "acquire x --ttl 12s exited $rc; stderr: $err"
token=$out
keeper=$(keeper_of x)
track "$keeper"
# T = 12s: probes 2 s apart after 6 s of silence; renewals every 4 s, so
# the next probe is 2 s or more away, never the role's 1 s.
wait_until -t 3 at_least 1.5 || fail "acquire --ttl 12s: the server's first keepalive probe is due in '$(keepalive_left)' s, expected 2 to 6 (the role's tcp_keepalives_idle = 1 won?)"

capture "${DL[@]}" renew x "$token" --ttl 60s --json
[ "$rc" = 0 ] || fail "renew x TOKEN --ttl 60s exited $rc; stderr: $err"
granted=$(printf '%s' "$out" | json 'd["ttl_ms"]')
# ttl_ms is what is left of the granted lease when it is printed.
[ "$granted" -le 60000 ] && [ "$granted" -ge 55000 ] || fail "renew --ttl 60s --json printed ttl_ms $granted"
# T = 60s: probes 10 s apart after 30 s; the keeper renews every 20 s.
wait_until -t 3 at_least 9 || fail "after renew --ttl 60s the server's next keepalive probe is due in '$(keepalive_left)' s, expected 10 to 30: its keepalives still follow acquire's --ttl 12s"

capture "${DL[@]}" renew x "$token" --ttl 3s
[ "$rc" = 0 ] || fail "renew x TOKEN --ttl 3s exited $rc; stderr: $err"
wait_until -t 3 at_least 9 || fail "right after renew --ttl 3s the server's next keepalive probe is due in '$(keepalive_left)' s: the keepalives were cut while the 60 s promised before still ran"

capture "${DL[@]}" release x "$token"
[ "$rc" = 0 ] || fail "release x TOKEN exited $rc; stderr: $err"
pass
