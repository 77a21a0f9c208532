#!/usr/bin/env bash
# Usage errors exit 64, configuration errors 78, each with exactly one
# "dlock: ..." line on stderr and no crash; flag > env > config file.
SCENARIO="bad input"
. "$(dirname "$0")/lib.sh"

# expect CODE WHAT CMD...: CMD exits CODE with one "dlock: " line, nothing
# on stdout, and never runs the job (which would touch $tmpdir/ran).
expect() {
  local code=$1 what=$2
  shift 2
  capture "$@"
  [ "$rc" = "$code" ] || fail "$what: exit $rc, expected $code; stderr: $err"
  assert_one_line_message "$what" "$err"
  [ -z "$out" ] || fail "$what: printed on stdout: $out"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran anyway"
}

job=(-- touch "$tmpdir/ran")

# Bad names.
expect 64 "name with a space" "${DL[@]}" run 'a b' "${job[@]}"
case $err in *space* | *"' '"*) ;; *) fail "the message for 'a b' does not name the space: $err" ;; esac
expect 64 "empty name" "${DL[@]}" run '' "${job[@]}"
# An empty option value is that option's bad value, never the next word.
expect 64 "empty --max-runtime" "${DL[@]}" run --max-runtime '' x "${job[@]}"
case $err in *"'--'"* | *"'x'"*) fail "an empty --max-runtime took the next word as its value: $err" ;; esac
expect 64 "empty --wait" "${DL[@]}" run --wait '' x "${job[@]}"
expect 64 "empty --log" "${DL[@]}" run --log '' x "${job[@]}"
long=$(printf 'n%.0s' $(seq 201))
expect 64 "201-byte name" "${DL[@]}" run "$long" "${job[@]}"
case $err in *200*) ;; *) fail "the message for a 201-byte name does not state the limit 200: $err" ;; esac
ok200=$(printf 'n%.0s' $(seq 200))
capture "${DL[@]}" run "$ok200" -- true
[ "$rc" = 0 ] || fail "a 200-byte name was refused ($rc): $err"
expect 64 "name with a newline" "${DL[@]}" run $'a\nb' "${job[@]}"
case $err in *0x0a* | *0x0A* | *'\n'* | *newline* | *"line feed"*) ;; *) fail "the message for a newline in a name does not name it: $err" ;; esac
expect 64 "name with a star" "${DL[@]}" run 'a*b' "${job[@]}"
case $err in *"*"*) ;; *) fail "the message for 'a*b' does not name '*': $err" ;; esac
expect 64 "name with a non-ASCII byte" "${DL[@]}" run $'caf\xc3\xa9' "${job[@]}"
expect 64 "status of a bad name" "${DL[@]}" status 'a b'
expect 64 "acquire of a bad name" "${DL[@]}" acquire 'a b'
expect 64 "release of a bad name" "${DL[@]}" release 'a b' --force
capture "${DL[@]}" run 'aZ09._-:/@+=' -- true
[ "$rc" = 0 ] || fail "a name using every allowed punctuation character was refused ($rc): $err"

# Bad durations and options.
expect 64 "--ttl 5x" "${DL[@]}" run x --ttl 5x "${job[@]}"
expect 64 "--ttl -1" "${DL[@]}" run x --ttl -1 "${job[@]}"
expect 64 "--ttl 0" "${DL[@]}" run x --ttl 0 "${job[@]}"
expect 64 "--wait soon" "${DL[@]}" run x --wait soon "${job[@]}"
expect 64 "--max-runtime 1y" "${DL[@]}" run x --max-runtime 1y "${job[@]}"
expect 64 "acquire --ttl banana" "${DL[@]}" acquire x --ttl banana

# --limit N: 1 to 1000 holders, one way of holding at a time.
for n in 0 -1 1001 3x '' 99999999999999999999; do
  expect 64 "--limit '$n'" "${DL[@]}" run x --limit "$n" "${job[@]}"
done
expect 64 "acquire --limit banana" "${DL[@]}" acquire x --limit banana
expect 64 "--limit with --shared" "${DL[@]}" run x --limit 3 --shared "${job[@]}"
expect 64 "--shared with --exclusive" "${DL[@]}" run x -s -x "${job[@]}"
expect 64 "acquire --shared --limit 2" "${DL[@]}" acquire x --shared --limit 2
capture "${DL[@]}" run x --limit 1000 -- true
[ "$rc" = 0 ] || fail "--limit 1000 was refused ($rc): $err"
expect 64 "unknown run option" "${DL[@]}" run x --frobnicate "${job[@]}"
expect 64 "unknown global option" "${DL[@]}" --frobnicate run x "${job[@]}"
expect 64 "unknown subcommand" "${DL[@]}" frobnicate x
expect 64 "run without a command" "${DL[@]}" run x
expect 64 "-E out of range" "${DL[@]}" run x -E 300 "${job[@]}"
# Good durations are accepted.
for d in 250ms 30s 5m 2h 1h30m 1.5s 10; do
  capture "${DL[@]}" run x --ttl "$d" -- true
  [ "$rc" = 0 ] || fail "--ttl $d was refused ($rc): $err"
done

# Backends.
expect 78 "unknown scheme" "$DLOCK_BIN" -b foo://x run x "${job[@]}"
case $err in *file*) ;; *) fail "the unknown-scheme message does not list the known schemes: $err" ;; esac
case $err in *redis*) ;; *) fail "the unknown-scheme message does not list redis among the known schemes: $err" ;; esac
# Every backend is built in: a copy of the binary with nothing beside it
# runs etcd too, and port 1 of loopback refuses it (69, about the server).
mkdir -p "$tmpdir/bare/bin"
cp "$DLOCK_BIN" "$tmpdir/bare/bin/dlock"
expect 69 "etcd scheme from a lone copy of the binary" "$tmpdir/bare/bin/dlock" -b etcd://127.0.0.1:1 --connect-timeout 2s run x "${job[@]}"
case $err in *"cannot connect to etcd"*) ;; *) fail "the lone binary's etcd backend did not try the server: $err" ;; esac
# etcd URLs: no path, only the TLS options, and a password needs a user.
expect 78 "etcd URL with a path" "$DLOCK_BIN" -b etcd://127.0.0.1:1/x run x "${job[@]}"
expect 78 "etcd URL with an unknown option" "$DLOCK_BIN" -b 'etcd://127.0.0.1:1?colour=blue' run x "${job[@]}"
expect 78 "etcd (not etcds) URL with a CA" "$DLOCK_BIN" -b 'etcd://127.0.0.1:1?cacert=/x' run x "${job[@]}"
expect 78 "etcd password without a user" env DLOCK_PASSWORD=secret "$DLOCK_BIN" -b etcd://127.0.0.1:1 run x "${job[@]}"
expect 78 "file: URL with a relative directory" "$DLOCK_BIN" -b file:relative/dir run x "${job[@]}"

# Config files.
expect 78 "--config /nonexistent" "${DL[@]}" --config /nonexistent run x "${job[@]}"
expect 78 "DLOCK_CONFIG=/nonexistent" env DLOCK_CONFIG=/nonexistent "${DL[@]}" run x "${job[@]}"
printf '# a comment\nttl = banana\n' >"$tmpdir/banana.conf"
expect 78 "config ttl = banana" "${DL[@]}" --config "$tmpdir/banana.conf" run x "${job[@]}"
case $err in *banana*) ;; *) fail "the bad-ttl config message does not quote the value: $err" ;; esac
printf 'colour = blue\n' >"$tmpdir/unknown.conf"
expect 78 "config with an unknown key" "${DL[@]}" --config "$tmpdir/unknown.conf" run x "${job[@]}"
case $err in *colour*) ;; *) fail "the unknown-key message does not name the key: $err" ;; esac
printf 'just some words\n' >"$tmpdir/garbage.conf"
expect 78 "config line without '='" "${DL[@]}" --config "$tmpdir/garbage.conf" run x "${job[@]}"
# Every value of the file is checked, even one a flag overrides (the file
# has an error: 78); a bad flag with a good file is 64.
expect 78 "config ttl = banana under --ttl 5s" "${DL[@]}" --config "$tmpdir/banana.conf" run x --ttl 5s "${job[@]}"
printf 'ttl = 5s\n' >"$tmpdir/good.conf"
expect 64 "bad --ttl flag with a good config" "${DL[@]}" --config "$tmpdir/good.conf" run x --ttl 5x "${job[@]}"

# Precedence for the namespace: flag > DLOCK_NAMESPACE > config file.
printf '# namespace from the file\nnamespace = fromconfig\n' >"$tmpdir/ns.conf"
namespaces() { (cd "$LOCKDIR" && find . -name p.lock | sort | tr '\n' ' '); }
rm -rf "$LOCKDIR"
capture "${DL[@]}" --config "$tmpdir/ns.conf" run p -- true
[ "$rc" = 0 ] || fail "run with namespace from the config file failed: $err"
[ "$(namespaces)" = "./fromconfig/p.lock " ] || fail "namespace from the config file: lock files are $(namespaces)"
capture env DLOCK_NAMESPACE=fromenv "${DL[@]}" --config "$tmpdir/ns.conf" run p -- true
[ "$(namespaces)" = "./fromconfig/p.lock ./fromenv/p.lock " ] || fail "DLOCK_NAMESPACE does not override the config file: $(namespaces)"
capture env DLOCK_NAMESPACE=fromenv "${DL[@]}" --config "$tmpdir/ns.conf" --namespace fromflag run p -- true
[ "$(namespaces)" = "./fromconfig/p.lock ./fromenv/p.lock ./fromflag/p.lock " ] ||
  fail "--namespace does not override DLOCK_NAMESPACE and the config file: $(namespaces)"
# The same seen through status --json while held.
start_holder h p --namespace fromflag
detail=$(env DLOCK_NAMESPACE=fromenv "${DL[@]}" --config "$tmpdir/ns.conf" --namespace fromflag status p --json | json 'd.get("detail") or ""')
case $detail in */fromflag/*) ;; *) fail "status --json detail does not show the flag's namespace: $detail" ;; esac
capture env DLOCK_NAMESPACE=fromenv "${DL[@]}" --config "$tmpdir/ns.conf" status p
[ "$rc" = 3 ] || fail "lock p held in namespace fromflag shows as held ($rc) in namespace fromenv"
release_holder h
wait_exit "$HOLDER_PID"
# DLOCK_CONFIG is read like --config; --config beats it.
capture env DLOCK_CONFIG="$tmpdir/ns.conf" "${DL[@]}" run q -- true
[ -e "$LOCKDIR/fromconfig/q.lock" ] || fail "DLOCK_CONFIG was not used: $(cd "$LOCKDIR" && find . -name q.lock)"
printf 'namespace = other\n' >"$tmpdir/other.conf"
capture env DLOCK_CONFIG="$tmpdir/ns.conf" "${DL[@]}" --config "$tmpdir/other.conf" run r -- true
[ -e "$LOCKDIR/other/r.lock" ] || fail "--config does not override DLOCK_CONFIG: $(cd "$LOCKDIR" && find . -name r.lock)"
expect 64 "bad namespace flag" "${DL[@]}" --namespace 'a b' run x "${job[@]}"
printf 'namespace = a b\n' >"$tmpdir/badns.conf"
expect 78 "bad namespace in the config file" "${DL[@]}" --config "$tmpdir/badns.conf" run x "${job[@]}"

pass
