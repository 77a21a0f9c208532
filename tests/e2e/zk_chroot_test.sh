#!/usr/bin/env bash
# A chroot in a zk:// URL (zk://host:port/some/chroot) puts every path dlock
# uses below it: the lock NAME is /some/chroot/NS/NAME on the server, the
# chroot is created when it does not exist yet, locks of the same name
# under another chroot or none are other locks, and status, list, release
# --force and DLOCK_BACKEND keep the chroot.
SCENARIO="zookeeper: chroot in the URL"
. "$(dirname "$0")/lib.sh"
use_zookeeper

root_url=$DLOCK_TEST_ZK_URL
chroot_url=$DLOCK_TEST_ZK_URL/some/chroot
"$ZKCLI" create /some/chroot || fail "could not create /some/chroot"
use_zookeeper "$chroot_url"

start_holder h c
nodes=$(zk_children /some/chroot/dlock/c)
[ "$(printf '%s' "$nodes" | json 'len(d)')" = 2 ] || fail "/some/chroot/dlock/c does not hold exactly the holder's two nodes: $nodes"
node=$(printf '%s' "$nodes" | json '[n for n in d if "-lock-" in n["name"]][0]["name"]')
[[ $node =~ $ZK_NODE_RE ]] || fail "the lock node '$node' is not named like Curator's"
[ "$(printf '%s' "$nodes" | json '[n for n in d if "-lock-" in n["name"]][0]["czxid"]')" = "$(cat "$tmpdir/h.fence")" ] || fail "the fence is not the czxid of the node under the chroot"
"$ZKCLI" exists /dlock && fail "dlock created /dlock outside the chroot"
[ "$(zk_child_count /dlock/c)" = 0 ] || fail "a lock node exists at /dlock/c, outside the chroot"

# The job's DLOCK_BACKEND keeps the chroot.
capture "${DL[@]}" run env.check -- sh -c 'echo "$DLOCK_BACKEND"'
[ "$rc" = 0 ] || fail "run env.check under the chroot exited $rc; stderr: $err"
[ "$out" = "$chroot_url" ] || fail "the job's DLOCK_BACKEND is '$out', expected '$chroot_url'"

is_held c || fail "status through the chroot URL does not see the lock"
capture "${DL[@]}" list --json
[ "$(printf '%s' "$out" | json '[x["name"] for x in d]')" = '["c"]' ] || fail "list through the chroot URL: $out"

# Without the chroot, or under another one, c is another, free lock.
capture "$DLOCK_BIN" -b "$root_url" status c
[ "$rc" = 3 ] || fail "status c without the chroot exited $rc, expected 3 (the lock lives under the chroot)"
capture "$DLOCK_BIN" -b "$root_url" list --json
[ "$rc" = 0 ] && [ "$(printf '%s' "$out" | json 'd')" = "[]" ] || fail "list without the chroot is not empty ($rc): $out"
capture "$DLOCK_BIN" -b "$root_url" run c -- true
[ "$rc" = 0 ] || fail "run c without the chroot exited $rc, expected 0 (another lock); stderr: $err"
capture "$DLOCK_BIN" -b "$DLOCK_TEST_ZK_URL/some" run c -- true
[ "$rc" = 0 ] || fail "run c under the chroot /some exited $rc, expected 0 (another lock); stderr: $err"
capture "${DL[@]}" run c -- true
[ "$rc" = 75 ] || fail "run c under the same chroot exited $rc, expected 75 (busy)"

# A waiter through the chroot is woken by the release.
"${DL[@]}" run c --wait 20s -- sh -c 'echo "$DLOCK_FENCE" >"$1"' sh "$tmpdir/waiter.fence" </dev/null 2>"$tmpdir/waiter.err" &
waiter=$!
track "$waiter"
wait_until has_waiter c || fail "the waiter through the chroot never queued; stderr: $(cat "$tmpdir/waiter.err")"
release_holder h
wait_exit "$HOLDER_PID"
[ "$rc" = 0 ] || fail "the holder exited $rc"
wait_exit "$waiter" 10
[ "$rc" = 0 ] || fail "the waiter through the chroot exited $rc; stderr: $(cat "$tmpdir/waiter.err")"
[ "$(cat "$tmpdir/waiter.fence")" -gt "$(cat "$tmpdir/h.fence")" ] || fail "the waiter's fence is not greater than the holder's"

# release --force through the chroot.
t=$("${DL[@]}" acquire c --ttl 30s) || fail "acquire c under the chroot failed"
track "$("${DL[@]}" status c --json | json 'd["holder"]["pid"]')"
capture "$DLOCK_BIN" -b "$root_url" release c --force
[ "$rc" = 3 ] || fail "release c --force without the chroot exited $rc, expected 3 (nothing held there)"
is_held c || fail "release --force without the chroot broke the lock under it"
capture "${DL[@]}" release c --force
[ "$rc" = 0 ] || fail "release c --force through the chroot exited $rc; stderr: $err"
is_free c || fail "the lock is held after release --force through the chroot"
[ -n "$t" ] || fail "acquire printed no token"

# A chroot that does not exist yet is created.
"$ZKCLI" exists /fresh && fail "/fresh exists before the test made it"
capture "$DLOCK_BIN" -b "$DLOCK_TEST_ZK_URL/fresh/root" run c -- sh -c 'echo "$DLOCK_FENCE"'
[ "$rc" = 0 ] || fail "run under the chroot /fresh/root that did not exist exited $rc; stderr: $err"
"$ZKCLI" exists /fresh/root/dlock/c || fail "the lock did not live under the new chroot /fresh/root"
pass
