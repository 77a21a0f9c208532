#!/usr/bin/env bash
# status, list and ping on PostgreSQL. A held lock is a granted advisory
# lock on its key in pg_locks, by the session whose application_name is
# 'dlock:NAME' (cut to 63 bytes); status shows holder, fence (a transaction
# id: below the server's current one, increasing run to run) and the
# waiters, i.e. the ungranted requests for the key; never the token; a free
# lock exits 3. list shows every held lock of the namespace (long names in
# full) and nothing else: not other namespaces' locks, not advisory locks
# taken by other programs. ping shows the server version and the round trip.
# The checks all server backends share are in lib.sh (start_status_holder
# and what follows it).
SCENARIO="postgres: status, list and ping"
. "$(dirname "$0")/lib.sh"
use_postgres

start_status_holder . '^[0-9]+$'
one_key=$(pg_key app/one)

# What the server shows of it.
session=$(pg_sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'dlock:app/one'")
[ -n "$session" ] || fail "no session has application_name 'dlock:app/one': $(pg_sql "SELECT pid, application_name FROM pg_stat_activity WHERE backend_type = 'client backend'")"
[ "$(pg_holder_pid "$one_key")" = "$session" ] || fail "the advisory lock on $one_key is not held by the session 'dlock:app/one' ($session): holder '$(pg_holder_pid "$one_key")'"
[ "$(pg_sql "SELECT txid_current() > $one_fence")" = t ] || fail "the fence $one_fence is not below the server's current transaction id"

check_held_status_text app/one "$one_pid" "$one_fence"
check_held_status_json app/one "$one_pid" "$one_fence" 't is None or isinstance(t, int)'

# Waiters are the ungranted requests for the key; one that gives up takes
# its request away.
two_waiting() {
  [ "$(pg_waiting "$one_key")" = 2 ] || fail "pg_locks shows $(pg_waiting "$one_key") ungranted requests for $one_key, status --json 2 waiters"
}
none_waiting() {
  [ "$(pg_waiting "$one_key")" = 0 ] || fail "the interrupted waiters left ungranted requests in pg_locks"
}
check_waiters app/one 2 two_waiting none_waiting

# Free locks exit 3: never used, and used before.
check_free_status
[ "$three_fence" -gt "$one_fence" ] || fail "a later run's fence ($three_fence) is not greater than an earlier holder's ($one_fence)"

# list: one row per held lock of the namespace, whatever else the server holds.
long=long/$(printf 'n%.0s' $(seq 1 90))
"${DL[@]}" acquire "$long" --ttl 60s >/dev/null || fail "acquire of a 95-byte name failed"
app_name=$(pg_sql "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'dlock:long/%'")
[ "$app_name" = "$(printf 'dlock:%s' "$long" | cut -c1-63)" ] ||
  fail "the application_name of a long name's session is '$app_name', expected 'dlock:NAME' cut to 63 bytes"
start_list_locks 10 other
[ "$(pg_holder_pid "$(pg_key app/ns elsewhere)")" != "" ] || fail "--namespace elsewhere did not lock the key of 'elsewhere app/ns'"
# An advisory lock that is not dlock's, in the same database.
mkfifo "$tmpdir/psql.fifo"
"$PSQL" <"$tmpdir/psql.fifo" >"$tmpdir/psql.out" 2>&1 &
track $!
exec 7>"$tmpdir/psql.fifo"
printf '%s\n' "SELECT pg_advisory_lock(12345); SELECT pg_advisory_lock(1, 2);" >&7
foreign_held() { [ "$(pg_sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid IN (12345, 2)")" = 2 ]; }
wait_until foreign_held || fail "psql did not take its own advisory locks: $(cat "$tmpdir/psql.out")"

check_list_rows 10 "app/three app/ns nothing.here" app/one app/two other "$long"
check_list_prefix app/ "app/one:$one_pid" "app/two:$two_pid"
check_list_json 14
[ "$(printf '%s' "$out" | json '[x["fence"] for x in d if x["name"] == "app/one"]')" = "[$one_fence]" ] ||
  fail "list --json does not show app/one's fence $one_fence: $out"
exec 7>&-

# ping: version and round trip.
check_ping "$DLOCK_TEST_PG_VERSION" "$DLOCK_TEST_PG_PORT"
[ "$(printf '%s' "$out" | json 'd["nodes"][0]["rtt_ms"] < 2000')" = true ] || fail "ping --json: a round trip of 2 s or more: $out"

check_holders_released h h2 h3
[ -z "$(pg_holder_pid "$one_key")" ] || fail "the advisory lock on $one_key is still held after its holder ended"
pass
