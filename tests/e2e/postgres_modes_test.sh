#!/usr/bin/env bash
# PostgreSQL's shared locks and semaphores, against psql and each other.
# `--shared` is pg_advisory_lock_shared on the documented key of NAME:
# psql holding pg_advisory_lock(key) makes `dlock run --shared` busy (75);
# psql holding pg_advisory_lock_shared(key) lets readers in and keeps an
# exclusive `dlock run` out (75); a dlock reader lets psql share the key
# and keeps its exclusive lock out. `--limit N` holds the key shared plus
# slot K's key, the key of 'NS NAME K' (0 <= K < N, DLOCK_SLOT=K): psql
# sees that slot taken, and an exclusive lock on the name is refused (78),
# as are another limit, a reader beside a semaphore and a semaphore beside
# a reader. A signal ends a wait for a slot and leaves nothing behind.
# acquire --shared / --limit 3 go through the keeper: renew and release
# with the token work. Six contenders with --limit 2
# --wait 10s never have more than two in the section at once, and all
# finish.
SCENARIO="postgres: shared locks and semaphores, with psql and among themselves"
. "$(dirname "$0")/lib.sh"
use_postgres

name=reports/modes
key=$(pg_key "$name") || fail "could not compute the key of $name"

# A psql session that lives through the test (psql_send SQL), backend
# pid $backend.
start_psql_session modes-psql
# psql_holds KEY MODE: the psql session holds KEY in MODE (ExclusiveLock, ShareLock), or nothing ("").
psql_holds() {
  [ "$("$PSQL" -c "SELECT string_agg(mode, ',') FROM pg_locks WHERE $_pg_key_match = $1 AND granted AND pid = $backend")" = "$2" ]
}

# psql's exclusive lock keeps a reader out.
psql_send "SELECT pg_advisory_lock($key);"
wait_until psql_holds "$key" ExclusiveLock || fail "psql did not get pg_advisory_lock($key): $(cat "$tmpdir/psql.out")"
capture "${DL[@]}" run --shared "$name" -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "run --shared while psql holds pg_advisory_lock($key) exited $rc, expected 75; stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "dlock ran a reader's job while psql held the exclusive lock"
assert_one_line_message "run --shared while psql holds the lock" "$err"
psql_send "SELECT pg_advisory_unlock($key);"
wait_until psql_holds "$key" "" || fail "psql did not let go of pg_advisory_lock($key)"

# psql's shared lock lets a reader in and keeps a writer out.
psql_send "SELECT pg_advisory_lock_shared($key);"
wait_until psql_holds "$key" ShareLock || fail "psql did not get pg_advisory_lock_shared($key)"
capture "${DL[@]}" run --shared "$name" -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run --shared while psql holds pg_advisory_lock_shared($key) exited $rc, expected 0; stderr: $err"
[[ $out =~ ^[0-9]+$ ]] || fail "the reader's job printed DLOCK_FENCE '$out', expected a number"
capture "${DL[@]}" run "$name" -- touch "$tmpdir/ran"
[ "$rc" = 75 ] || fail "an exclusive run while psql holds pg_advisory_lock_shared($key) exited $rc, expected 75; stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "dlock ran a writer's job while psql held the shared lock"
psql_send "SELECT pg_advisory_unlock_shared($key);"
wait_until psql_holds "$key" "" || fail "psql did not let go of pg_advisory_lock_shared($key)"

# A dlock reader: psql may share the key, not take it alone.
start_holder r "$name" --shared --ttl 30s
[ "$(pg_sql "SELECT pg_try_advisory_lock($key)")" = f ] || fail "psql's pg_try_advisory_lock($key) succeeded beside a dlock reader"
[ "$(pg_sql "SELECT pg_try_advisory_lock_shared($key)")" = t ] || fail "psql's pg_try_advisory_lock_shared($key) failed beside a dlock reader"
capture "${DL[@]}" status "$name" --json
[ "$rc" = 0 ] || fail "status of a name held by a reader exited $rc; stderr: $err"
printf '%s' "$out" | json 'd["mode"] == "shared" and len(d["holders"]) == 1 and d["holders"][0]["fence"] > 0 and d["holder"] is None' |
  grep -qx true || fail "status --json of a name held by one reader: $out"
release_holder r
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the reader exited $rc; stderr: $(cat "$tmpdir/r.err")"

# A semaphore's slot K is the key of 'dlock NAME K'.
sem=reports/slots
start_holder s "$sem" --limit 3 --ttl 30s
slot=$(tr '\0' '\n' <"/proc/$CHILD_PID/environ" | sed -n 's/^DLOCK_SLOT=//p')
[[ $slot =~ ^[012]$ ]] || fail "the job of a --limit 3 holder has DLOCK_SLOT '$slot', expected 0, 1 or 2"
# slot_key NAME K: the key of slot K of semaphore NAME, by the documented SQL.
slot_key() {
  printf '%s\n' "SELECT ('x' || left(encode(sha256(convert_to('dlock ' || :'name' || ' ' || :'slot', 'UTF8')), 'hex'), 16))::bit(64)::bigint;" |
    "$PSQL" -v name="$1" -v slot="$2"
}
slot_key=$(slot_key "$sem" "$slot")
[ -n "$(pg_holder_pid "$slot_key")" ] || fail "pg_locks shows no holder of slot $slot's key $slot_key ('dlock $sem $slot')"
[ "$(pg_sql "SELECT pg_try_advisory_lock($slot_key)")" = f ] || fail "psql took slot $slot's key $slot_key while dlock holds it"
[ "$(pg_sql "SELECT pg_try_advisory_lock($(pg_key "$sem"))")" = f ] || fail "psql's exclusive lock on the key of $sem succeeded beside a slot holder"
capture "${DL[@]}" run "$sem" -- true
[ "$rc" = 78 ] || fail "an exclusive run on a name held by a --limit 3 holder exited $rc, expected 78; stderr: $err"
assert_one_line_message "an exclusive run beside a semaphore" "$err"
capture "${DL[@]}" run --limit 2 "$sem" -- true
[ "$rc" = 78 ] || fail "run --limit 2 on a name held with --limit 3 exited $rc, expected 78; stderr: $err"
case $err in *"--limit 3"*) ;; *) fail "the refusal of --limit 2 does not name the --limit 3 that holds it: $err" ;; esac
capture "${DL[@]}" run --limit 3 "$sem" -- sh -c 'echo "$DLOCK_SLOT"'
[ "$rc" = 0 ] && [[ $out =~ ^[012]$ ]] && [ "$out" != "$slot" ] ||
  fail "a second --limit 3 run exited $rc with DLOCK_SLOT '$out' (the first holds slot $slot); stderr: $err"
release_holder s
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the slot holder exited $rc; stderr: $(cat "$tmpdir/s.err")"

# A reader is refused beside a semaphore, and a semaphore beside a reader.
start_holder s "$sem" --limit 3 --ttl 30s
capture "${DL[@]}" run --shared "$sem" -- true
[ "$rc" = 78 ] || fail "run --shared on a name held with --limit 3 exited $rc, expected 78; stderr: $err"
release_holder s
wait_exit "$HOLDER_PID"
start_holder r "$sem" --shared --ttl 30s
capture "${DL[@]}" run --limit 3 "$sem" -- true
[ "$rc" = 78 ] || fail "run --limit 3 on a name held by a reader exited $rc, expected 78; stderr: $err"
case $err in *"shared"*) ;; *) fail "the refusal of --limit 3 beside a reader does not say the name is shared: $err" ;; esac
release_holder r
wait_exit "$HOLDER_PID"

# A signal ends a wait for a slot, takes nothing and leaves no request
# behind.
start_holder w waitsig --limit 1 --ttl 30s
"${DL[@]}" run --limit 1 --wait 20s waitsig -- touch "$tmpdir/sig.ran" </dev/null >/dev/null 2>"$tmpdir/sig.err" &
waiter=$!
track "$waiter"
sig_slot=$(slot_key waitsig 0)
slot_waited() { [ "$(pg_waiting "$sig_slot")" = 1 ]; }
wait_until slot_waited || fail "run --limit 1 --wait never blocked on the slot's key; stderr: $(cat "$tmpdir/sig.err")"
for i in 1 2 3 4 5; do
  [ "$(lock_waiters waitsig)" = 1 ] || fail "status shows $(lock_waiters waitsig) waiters for a semaphore with one waiting, expected 1 (look $i)"
done
kill -TERM "$waiter"
wait_exit "$waiter" 5
[ "$rc" = 143 ] || fail "SIGTERM to a run waiting for a slot: exit $rc, expected 143; stderr: $(cat "$tmpdir/sig.err")"
[ ! -e "$tmpdir/sig.ran" ] || fail "the interrupted wait for a slot ran its job"
only_holder() { [ "$(pg_sessions waitsig)" = 1 ] && [ "$(pg_waiting "$sig_slot")" = 0 ]; }
wait_until -t 2 only_holder || fail "the interrupted wait for a slot left a session or a request behind"
release_holder w
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the holder of waitsig exited $rc; stderr: $(cat "$tmpdir/w.err")"

# acquire --shared and --limit 3 leave a keeper; renew and release work
# through it. (The keeper is every mode's first holder.) The lease is
# long, as no expiry is tested here: under load the calls between acquire
# and renew took longer than a 3 s lease.
keeper_of() { "${DL[@]}" status "$1" --json 2>/dev/null | json 'd["holders"][0]["pid"]'; }
for mode in --shared "--limit 3"; do
  # shellcheck disable=SC2086 # two words for --limit 3
  acquire_bg kept $mode --ttl 20s
  first=$token
  # shellcheck disable=SC2086
  acquire_bg kept $mode --ttl 20s
  second=$token
  capture "${DL[@]}" status kept --json
  printf '%s' "$out" | json 'len(d["holders"]) == 2' | grep -qx true || fail "status after two acquire $mode: $out"
  capture "${DL[@]}" run kept -- true
  [ "$rc" = 75 ] || [ "$rc" = 78 ] || fail "an exclusive run beside two acquire $mode exited $rc, expected 75 or 78"
  capture "${DL[@]}" renew kept "$first" --ttl 20s
  [ "$rc" = 0 ] || fail "renew of acquire $mode exited $rc; stderr: $err"
  capture "${DL[@]}" release kept "$first"
  [ "$rc" = 0 ] || fail "release of acquire $mode exited $rc; stderr: $err"
  capture "${DL[@]}" release kept "$first"
  [ "$rc" = 3 ] || fail "a second release of acquire $mode exited $rc, expected 3"
  capture "${DL[@]}" status kept --json
  printf '%s' "$out" | json 'len(d["holders"]) == 1' | grep -qx true || fail "status after one of two acquire $mode was released: $out"
  "${DL[@]}" release kept "$second" || fail "release of the second acquire $mode failed"
  is_free kept || fail "kept is held after both acquire $mode were released"
done

# Six contenders, two slots: never more than two inside, all get in.
cat >"$tmpdir/section.sh" <<'SCRIPT'
d=$1
mkdir "$d/slot.$DLOCK_SLOT" 2>/dev/null || echo "slot $DLOCK_SLOT taken twice" >>"$d/overlaps"
n=$(flock "$d/count.lock" sh -c 'read n <"$1"; n=$((n + 1)); echo $n >"$1"; echo $n >>"$1.seen"; echo $n' sh "$d/count")
[ "$n" -le 2 ] || echo "$n inside at once" >>"$d/overlaps"
sleep 0.3
flock "$d/count.lock" sh -c 'read n <"$1"; echo $((n - 1)) >"$1"' sh "$d/count"
rmdir "$d/slot.$DLOCK_SLOT"
SCRIPT
echo 0 >"$tmpdir/count"
: >"$tmpdir/overlaps"
pids=()
for i in 1 2 3 4 5 6; do
  "${DL[@]}" run --limit 2 --wait 10s pool -- sh "$tmpdir/section.sh" "$tmpdir" </dev/null >/dev/null 2>"$tmpdir/pool.$i.err" &
  pids+=($!)
done
track "${pids[@]}"
i=0
for pid in "${pids[@]}"; do
  i=$((i + 1))
  wait_exit "$pid" 20
  [ "$rc" = 0 ] || fail "contender $i (--limit 2 --wait 10s) exited $rc; stderr: $(cat "$tmpdir/pool.$i.err")"
done
[ ! -s "$tmpdir/overlaps" ] || fail "the semaphore of 2 let too many in: $(head -3 "$tmpdir/overlaps")"
[ "$(wc -l <"$tmpdir/count.seen")" = 6 ] || fail "$(wc -l <"$tmpdir/count.seen") of 6 contenders entered the section"
grep -qx 2 "$tmpdir/count.seen" || fail "never two contenders inside at once: the semaphore of 2 acted as a mutex"
is_free pool || fail "pool is held after every contender ended"

exec 7>&-
wait_exit "$psql_pid" 5
[ "$rc" = 0 ] || fail "the psql session failed: $(cat "$tmpdir/psql.out")"
pass
