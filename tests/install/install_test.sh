#!/usr/bin/env bash
# Backend modules are loaded only when their backend is used, and are found
# beside the binary in the build tree and in lib/dlock after `cmake --install`.
set -euo pipefail
: "${DLOCK_BIN:?}" "${DLOCK_BUILD_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL install: $*" >&2; exit 1; }

# The file backend is built in: no module is mapped while a job runs.
maps=$("$DLOCK_BIN" -b "file://$tmp/locks" run m -- sh -c 'cat /proc/$PPID/maps')
grep -q 'dlock-.*\.so' <<<"$maps" && fail "a backend module was loaded for the file backend"

# A module backend is found in the build tree and mapped only then.
out=$("$DLOCK_BIN" -b test-memory: ping) || fail "test-memory ping failed in the build tree: $out"
grep -q 'loaded from a module' <<<"$out" || fail "ping did not come from the module: $out"
maps=$("$DLOCK_BIN" -b test-memory: run m -- sh -c 'cat /proc/$PPID/maps') || fail "run on the module backend failed"
grep -q 'dlock-testmemory\.so' <<<"$maps" || fail "the module was not mapped while its backend was used"

# Hidden from users: not in the version listing nor in the unknown-scheme message.
"$DLOCK_BIN" version | grep -q test-memory && fail "test module listed by dlock version"

# After cmake --install the binary finds modules in ../lib/dlock, and the
# man page and completions are where man and shells look.
cmake --install "$DLOCK_BUILD_DIR" --prefix "$tmp/prefix" >/dev/null
cmake --install "$DLOCK_BUILD_DIR" --prefix "$tmp/prefix" --component test >/dev/null
installed="$tmp/prefix/bin/dlock"
[ -x "$installed" ] || fail "no installed binary"
"$installed" -b "file://$tmp/locks" run demo -- true || fail "installed binary cannot run"
out=$("$installed" -b test-memory: ping) || fail "installed binary cannot load the module: $out"
[ -f "$tmp/prefix/share/man/man1/dlock.1" ] || fail "man page not installed"
[ -f "$tmp/prefix/share/bash-completion/completions/dlock" ] || fail "bash completion not installed"
[ -f "$tmp/prefix/share/zsh/site-functions/_dlock" ] || fail "zsh completion not installed"
[ -f "$tmp/prefix/share/fish/vendor_completions.d/dlock.fish" ] || fail "fish completion not installed"
echo "PASS install"
