#!/usr/bin/env bash
# Every backend is built into the one binary, and the client libraries that
# are costly to load (OpenSSL, libpq) are mapped only when a URL needs them;
# the binary needs no file beside it in the build tree nor after
# `cmake --install`.
set -euo pipefail
: "${DLOCK_BIN:?}" "${DLOCK_BUILD_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL install: $*" >&2; exit 1; }

# The file backend maps neither OpenSSL, nor libpq, nor any backend module.
maps=$("$DLOCK_BIN" -b "file://$tmp/locks" run m -- sh -c 'cat /proc/$PPID/maps')
grep -qE 'dlock-.*\.so|libssl|libcrypto|libpq' <<<"$maps" &&
  fail "a library was loaded for the file backend: $(grep -oE '[^ /]*(dlock-|libssl|libcrypto|libpq)[^ ]*' <<<"$maps" | sort -u | tr '\n' ' ')"

# dlock version lists every backend as built in.
out=$("$DLOCK_BIN" version) || fail "dlock version failed"
for scheme in file redis redlock zk postgres etcd; do
  grep -A1 -E "^  $scheme " <<<"$out" | grep -q '; built in$' || fail "dlock version does not list $scheme as built in: $out"
done

# The etcd backend runs from the binary alone: port 1 of loopback refuses
# the connection, and the error is about the server.
rc=0
out=$("$DLOCK_BIN" -b etcd://127.0.0.1:1 --connect-timeout 2s ping 2>&1) || rc=$?
[ "$rc" = 69 ] && grep -q 'cannot connect to etcd' <<<"$out" || fail "the etcd backend did not run (exit $rc): $out"

# After cmake --install the binary runs on its own, and the man page and
# completions are where man and shells look.
cmake --install "$DLOCK_BUILD_DIR" --prefix "$tmp/prefix" >/dev/null
installed="$tmp/prefix/bin/dlock"
[ -x "$installed" ] || fail "no installed binary"
"$installed" -b "file://$tmp/locks" run demo -- true || fail "installed binary cannot run"
rc=0
out=$("$installed" -b etcd://127.0.0.1:1 --connect-timeout 2s ping 2>&1) || rc=$?
[ "$rc" = 69 ] && grep -q 'cannot connect to etcd' <<<"$out" || fail "the installed etcd backend did not run (exit $rc): $out"
[ -z "$(find "$tmp/prefix" -name '*.so*')" ] || fail "a shared library was installed: $(find "$tmp/prefix" -name '*.so*')"
[ -f "$tmp/prefix/share/man/man1/dlock.1" ] || fail "man page not installed"
[ -f "$tmp/prefix/share/bash-completion/completions/dlock" ] || fail "bash completion not installed"
[ -f "$tmp/prefix/share/zsh/site-functions/_dlock" ] || fail "zsh completion not installed"
[ -f "$tmp/prefix/share/fish/vendor_completions.d/dlock.fish" ] || fail "fish completion not installed"
echo "PASS install"
