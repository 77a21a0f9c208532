#!/usr/bin/env bash
# PostgreSQL: lock NAME in namespace NS is the session advisory lock on the
# documented key, the first 8 bytes (big-endian, signed) of sha256('NS
# NAME'), so psql and dlock exclude each other. psql holding
# pg_advisory_lock(key) (or the shared lock) makes `dlock run NAME` busy
# (75); a `dlock run NAME --wait` blocks server-side (an ungranted request
# in pg_locks) and gets the lock right after psql's pg_advisory_unlock;
# while dlock holds NAME, psql's pg_try_advisory_lock(key) is false. The
# namespace is part of the key.
SCENARIO="postgres: psql's advisory locks and dlock exclude each other"
. "$(dirname "$0")/lib.sh"
use_postgres

name=app/nightly-report@db:1+x=y_z.v
key=$(pg_key "$name") || fail "could not compute the key of $name"
want=$(python3 -c 'import hashlib, struct, sys
print(struct.unpack(">q", hashlib.sha256(("dlock " + sys.argv[1]).encode()).digest()[:8])[0])' "$name")
[ "$key" = "$want" ] || fail "the documented SQL gives key $key for '$name', sha256 gives $want"

# A psql session that lives through the test (psql_send SQL), backend
# pid $backend.
start_psql_session interop-psql
held_by() { [ "$(pg_holder_pid "$1")" = "$2" ]; }

# psql holds the lock: dlock is busy, and does not run its job.
psql_send "SELECT pg_advisory_lock($key);"
wait_until held_by "$key" "$backend" || fail "psql did not get pg_advisory_lock($key): $(cat "$tmpdir/psql.out")"
capture "${DL[@]}" run "$name" -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "run $name while psql holds pg_advisory_lock($key) exited $rc, expected 75; stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "dlock ran its job while psql held the lock"
assert_one_line_message "run $name while psql holds the lock" "$err"
capture "${DL[@]}" -q run "$name" -- touch "$tmpdir/ran"
[ "$rc" = 75 ] && [ -z "$err" ] || fail "run -q $name while psql holds the lock: exit $rc, stderr '$err' (expected 75, silent)"
capture "${DL[@]}" status "$name" --json
[ "$rc" = 0 ] || fail "status $name while psql holds the lock exited $rc, expected 0 (held); stderr: $err"
[ "$(printf '%s' "$out" | json 'd["held"]')" = true ] || fail "status --json while psql holds the lock: held is not true: $out"

# A waiting dlock blocks server-side and gets the lock right after psql lets go.
"${DL[@]}" run "$name" --wait 10s -- sh -c 'date +%s%3N >"$1.tmp"; mv "$1.tmp" "$1"; echo "$DLOCK_FENCE" >"$1.fence"' \
  sh "$tmpdir/got" </dev/null >/dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
one_waiting() { [ "$(pg_waiting "$key")" = 1 ]; }
wait_until one_waiting || fail "the waiting dlock never blocked in pg_advisory_lock (no ungranted request for $key); stderr: $(cat "$tmpdir/waiter.err")"
[ ! -e "$tmpdir/got" ] || fail "the waiter ran its job while psql held the lock"
is_alive "$waiter" || fail "the waiter ended while psql held the lock; stderr: $(cat "$tmpdir/waiter.err")"
unlocked=$(now_ms)
psql_send "SELECT pg_advisory_unlock($key);"
wait_until -t 5 test -s "$tmpdir/got" || fail "the waiter did not get the lock within 5 s of psql's unlock; stderr: $(cat "$tmpdir/waiter.err")"
elapsed=$(($(cat "$tmpdir/got") - unlocked))
echo "the waiting dlock ran its job ${elapsed} ms after psql's pg_advisory_unlock"
[ "$elapsed" -lt 2000 ] || fail "the waiter got the lock only ${elapsed} ms after psql's unlock"
wait_exit "$waiter" 5
[ "$rc" = 0 ] || fail "the waiter exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(pg_waiting "$key")" = 0 ] || fail "ungranted requests for $key are left after the waiter ended"

# dlock holds the lock: psql cannot take it.
start_holder h "$name" --ttl 30s
[ -n "$(pg_holder_pid "$key")" ] || fail "pg_locks shows no holder of $key while dlock holds $name"
[ "$(pg_sql "SELECT pg_try_advisory_lock($key)")" = f ] || fail "psql's pg_try_advisory_lock($key) succeeded while dlock holds $name"
[ "$(pg_sql "SELECT pg_try_advisory_lock_shared($key)")" = f ] || fail "psql's pg_try_advisory_lock_shared($key) succeeded while dlock holds $name"
release_holder h
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the holder exited $rc; stderr: $(cat "$tmpdir/h.err")"
[ "$(pg_sql "SELECT pg_try_advisory_lock($key)")" = t ] || fail "psql's pg_try_advisory_lock($key) failed after dlock released $name"

# A shared advisory lock held by psql excludes dlock too.
psql_send "SELECT pg_advisory_lock_shared($key);"
wait_until held_by "$key" "$backend" || fail "psql did not get pg_advisory_lock_shared($key)"
capture "${DL[@]}" run "$name" -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "run $name while psql holds the shared lock exited $rc, expected 75; stderr: $err"
psql_send "SELECT pg_advisory_unlock_shared($key);"
wait_until held_by "$key" "" || fail "psql did not let go of the shared lock"

# The namespace is part of the key.
other_key=$(pg_key "$name" other)
[ "$other_key" != "$key" ] || fail "namespaces dlock and other give the same key $key"
psql_send "SELECT pg_advisory_lock($other_key);"
wait_until held_by "$other_key" "$backend" || fail "psql did not get pg_advisory_lock($other_key)"
capture "${DL[@]}" --namespace other run "$name" -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "run $name in namespace other while psql holds its key exited $rc, expected 75; stderr: $err"
capture "${DL[@]}" run "$name" -- true
[ "$rc" = 0 ] || fail "run $name in namespace dlock while psql holds namespace other's key exited $rc; stderr: $err"
psql_send "SELECT pg_advisory_unlock($other_key);"
capture "${DL[@]}" --namespace other run "$name" --wait 5s -- true
[ "$rc" = 0 ] || fail "run $name in namespace other after psql's unlock exited $rc; stderr: $err"

exec 7>&-
wait_exit "$psql_pid" 5
[ "$rc" = 0 ] || fail "the psql session failed: $(cat "$tmpdir/psql.out")"
pass
