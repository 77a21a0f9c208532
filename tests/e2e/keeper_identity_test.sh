#!/usr/bin/env bash
# An acquire keeper's token is honoured only for the lock it was handed out
# for: renew and release with the right token but another namespace, another
# backend URL or another name exit 3 ("no longer owns") and leave the lock
# held; the keeper goes on and the right lock identity still works.
SCENARIO="a keeper token works only for its own backend, namespace and name"
. "$(dirname "$0")/lib.sh"

acquire_bg one --ttl 30s
[ "$(cat "$tmpdir/acq.rc")" = 0 ] || fail "acquire one exited $(cat "$tmpdir/acq.rc"): $(cat "$tmpdir/acq.err")"

# check_refused WHAT CMD...: CMD exits 3 with one message line, and the lock
# is still held by its keeper.
check_refused() {
  local what=$1
  shift
  capture "$@"
  [ "$rc" = 3 ] || fail "$what exited $rc, expected 3 (not the owner); stderr: $err"
  assert_one_line_message "$what" "$err"
  is_held one || fail "lock one is no longer held after $what"
  is_alive "$keeper" || fail "the keeper ended after $what"
}

check_refused "release with another --namespace" "${DL[@]}" --namespace other release one "$token"
check_refused "renew with another --namespace" "${DL[@]}" --namespace other renew one "$token" --ttl 30s
check_refused "release with DLOCK_NAMESPACE=other" env DLOCK_NAMESPACE=other "${DL[@]}" release one "$token"
# Another backend altogether: the token must not reach this keeper's lock.
check_refused "release with a redis backend" "$DLOCK_BIN" -b redis://127.0.0.1:1 release one "$token"
check_refused "renew with a redis backend" "$DLOCK_BIN" -b redis://127.0.0.1:1 renew one "$token" --ttl 30s
check_refused "release with an etcd backend" "$DLOCK_BIN" -b etcd://127.0.0.1:1 release one "$token"
mkdir -p "$tmpdir/elsewhere"
check_refused "release in another lock directory" "$DLOCK_BIN" -b "file://$tmpdir/elsewhere" release one "$token"
check_refused "renew in another lock directory" "$DLOCK_BIN" -b "file://$tmpdir/elsewhere" renew one "$token"
check_refused "release of another name" "${DL[@]}" release two "$token"

capture "${DL[@]}" renew one "$token" --ttl 30s
[ "$rc" = 0 ] || fail "renew with the lock's own backend, namespace and name exited $rc; stderr: $err"
capture "${DL[@]}" release one "$token"
[ "$rc" = 0 ] || fail "release with the lock's own backend, namespace and name exited $rc; stderr: $err"
is_free one || fail "lock one is held after its release"
wait_until -t 2 is_gone "$keeper" || fail "the keeper $keeper outlived the release by 2 s"

# The same in a namespace of its own: the default namespace is another lock.
"${DL[@]}" --namespace app acquire one --ttl 30s >"$tmpdir/app.token" </dev/null 2>"$tmpdir/app.err" ||
  fail "acquire one in namespace app failed: $(cat "$tmpdir/app.err")"
app_token=$(cat "$tmpdir/app.token")
app_keeper=$("${DL[@]}" --namespace app status one --json | json 'd["holder"]["pid"]')
track "$app_keeper"
capture "${DL[@]}" release one "$app_token"
[ "$rc" = 3 ] || fail "release in namespace dlock of a lock taken in namespace app exited $rc, expected 3"
"${DL[@]}" --namespace app status one >/dev/null || fail "lock app/one is no longer held after a release in namespace dlock"
capture "${DL[@]}" --namespace app release one "$app_token"
[ "$rc" = 0 ] || fail "release in namespace app exited $rc; stderr: $err"
pass
