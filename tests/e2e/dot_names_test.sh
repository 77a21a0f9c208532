#!/usr/bin/env bash
# Names and namespaces made only of dots are usage errors (64) on every
# backend, checked before anything is opened or connected: on the file
# backend '--namespace ..' put lock files into the lock directory's parent
# (with the default, straight into /run/lock, over other tools' NAME.lock)
# and '--namespace .' made x.lock of namespace '.' the directory of
# namespace 'x.lock'. (0e9552c accepted both on every backend but ZooKeeper.)
SCENARIO="names made only of dots"
. "$(dirname "$0")/lib.sh"

parent=$tmpdir # $LOCKDIR's parent: nothing may appear in it
# Unreachable servers: the name check must come before any connection.
port=$(free_port)
backends=("$BACKEND" "redis://127.0.0.1:$port" "etcd://127.0.0.1:$port" "postgres://127.0.0.1:$port/x"
  "redlock://127.0.0.1:$port,127.0.0.1:$port,127.0.0.1:$port" "zk://127.0.0.1:$port")
before=$(ls -A "$parent")

# expect_usage WHAT CMD...: exit 64, one line that says why, no job.
expect_usage() {
  local what=$1
  shift
  rm -f "$tmpdir/ran"
  capture timeout 20 "$@"
  [ "$rc" = 64 ] || fail "$what: exit $rc, expected 64; stderr: $err"
  assert_one_line_message "$what" "$err"
  case $err in *"only of dots"*) ;; *) fail "$what: the message does not say why: $err" ;; esac
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran"
}

for url in "${backends[@]}"; do
  for dots in . .. ...; do
    expect_usage "--namespace $dots on $url" "$DLOCK_BIN" -b "$url" --namespace "$dots" run x -- touch "$tmpdir/ran"
    expect_usage "DLOCK_NAMESPACE=$dots on $url" env DLOCK_NAMESPACE="$dots" "$DLOCK_BIN" -b "$url" acquire x
    expect_usage "name $dots on $url (run)" "$DLOCK_BIN" -b "$url" run "$dots" -- touch "$tmpdir/ran"
    expect_usage "name $dots on $url (acquire)" "$DLOCK_BIN" -b "$url" acquire "$dots"
    expect_usage "name $dots on $url (status)" "$DLOCK_BIN" -b "$url" status "$dots"
    expect_usage "name $dots on $url (release --force)" "$DLOCK_BIN" -b "$url" release "$dots" --force
  done
done
printf 'namespace = ..\n' >"$tmpdir/config"
capture "$DLOCK_BIN" --config "$tmpdir/config" run x -- touch "$tmpdir/ran"
[ "$rc" = 78 ] || fail "namespace = .. in a config file: exit $rc, expected 78 (a config error); stderr: $err"
[ ! -e "$tmpdir/ran" ] || fail "namespace = .. in a config file: the job ran"
rm -f "$tmpdir/config" "$tmpdir/.capture.out" "$tmpdir/.capture.err"
[ "$(ls -A "$parent")" = "$before" ] || fail "something was made beside the lock directory: $(ls -A "$parent")"

# Dots among other characters are ordinary names, and a list prefix of dots
# only selects names.
capture "${DL[@]}" --namespace ..x run .hidden -- true
[ "$rc" = 0 ] || fail "namespace ..x, name .hidden: exit $rc: $err"
[ -e "$LOCKDIR/..x/.hidden.lock" ] || fail "no lock file $LOCKDIR/..x/.hidden.lock"
capture "${DL[@]}" --namespace ..x list .
[ "$rc" = 0 ] || fail "list with prefix '.': exit $rc: $err"

pass
