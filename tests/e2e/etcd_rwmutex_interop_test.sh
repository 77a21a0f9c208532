#!/usr/bin/env bash
# dlock's --shared on etcd is the layout of etcd's RWMutex recipe
# (client/v3/experimental/recipes): readers put NS/NAME/read/<x>, writers
# NS/NAME/write/<x>, each under a lease; a reader holds when no writer has
# a lower create revision, a writer when nothing has. The keys a Go
# service's RWMutex would write are written here with etcdctl put under a
# lease (no Go toolchain is needed to check the layout): a writer's keeps
# dlock's readers and writers out, a reader's lets dlock's readers in and
# keeps dlock's writers and `etcdctl lock` (concurrency.Mutex) out, and a
# queued writer keeps later readers out while earlier ones hold.
SCENARIO="etcd: the RWMutex recipe's readers and writers and dlock --shared"
. "$(dirname "$0")/lib.sh"
use_etcd

# put_key KEY: KEY under a fresh lease of 30 s, as RWMutex's newUniqueKV
# does; prints the lease ID.
put_key() {
  local lease
  lease=$("$ETCDCTL" lease grant 30 | awk '{print $2}')
  [ -n "$lease" ] || fail "etcdctl lease grant failed"
  "$ETCDCTL" put --lease="$lease" "$1" "" >/dev/null || fail "etcdctl put $1 failed"
  echo "$lease"
}

# A Go RWMutex writer holds: dlock's reader and writer are busy.
w=$(put_key dlock/rw/write/1700000000000000001)
capture "${DL[@]}" run --shared rw -- true
[ "$rc" = 75 ] || fail "run --shared beside an RWMutex writer exited $rc, expected 75; stderr: $err"
capture "${DL[@]}" run rw -- true
[ "$rc" = 75 ] || fail "run (exclusive) beside an RWMutex writer exited $rc, expected 75"
"$ETCDCTL" lease revoke "$w" >/dev/null
"${DL[@]}" run --shared rw -- true || fail "run --shared did not get rw once the RWMutex writer left"

# A Go RWMutex reader holds: dlock's reader runs beside it and is listed
# with it; dlock's writer and etcdctl lock are kept out.
r=$(put_key dlock/rw/read/1700000000000000002)
# shellcheck disable=SC2016 # expanded by the job's shell
"${DL[@]}" run --shared rw -- sh -c '"$@" status rw --json >"$0"' "$tmpdir/status.json" "${DL[@]}" ||
  fail "run --shared beside an RWMutex reader failed"
[ "$(json 'd["mode"] + " " + str(len(d["holders"]))' <"$tmpdir/status.json")" = "shared 2" ] ||
  fail "status from inside a reader's job does not show two readers: $(cat "$tmpdir/status.json")"
capture "${DL[@]}" run rw -- true
[ "$rc" = 75 ] || fail "run (exclusive) beside an RWMutex reader exited $rc, expected 75"
capture timeout 2 "$ETCDCTL" lock dlock/rw -- true
[ "$rc" = 124 ] || fail "etcdctl lock got dlock/rw beside an RWMutex reader (exit $rc)"

# A writer queued behind the reader keeps later readers out, and gets the
# lock once the reader leaves.
"${DL[@]}" run rw --wait 10s -- touch "$tmpdir/writer.ran" </dev/null 2>"$tmpdir/writer.err" &
writer=$!
track "$writer"
wait_until has_waiter rw || fail "the writer never queued behind the RWMutex reader: $(cat "$tmpdir/writer.err")"
capture "${DL[@]}" run --shared rw -- true
[ "$rc" = 75 ] || fail "a reader got rw past a queued writer (exit $rc): no writer preference"
"$ETCDCTL" lease revoke "$r" >/dev/null
wait_exit "$writer"
[ "$rc" = 0 ] && [ -e "$tmpdir/writer.ran" ] || fail "the queued writer did not run once the reader left: $rc $(cat "$tmpdir/writer.err")"

# dlock's reader key is where an RWMutex writer looks: under dlock/rw/read/.
# shellcheck disable=SC2016
"${DL[@]}" run --shared rw -- sh -c '"$0" get --prefix --keys-only dlock/rw/ >"$1"' "$ETCDCTL" "$tmpdir/keys" ||
  fail "run --shared rw failed"
grep -q '^dlock/rw/read/[0-9a-f]*$' "$tmpdir/keys" || fail "dlock's reader key is not under dlock/rw/read/: $(cat "$tmpdir/keys")"
pass
