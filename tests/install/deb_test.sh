#!/usr/bin/env bash
# The Debian package: `cpack -G DEB` on the build directory makes a .deb
# that lintian finds no error in (its warnings are printed); `dpkg -i`
# installs it, and then `dlock version`, `man dlock`, the completions, a
# lock on the file backend and the etcd module (an etcd URL with nothing
# listening is 69, not 78 "no module") work from /usr; `dpkg -r` removes it
# and leaves none of its files behind. Needs root (dpkg), and no dlock
# package or /usr/bin/dlock on the machine beforehand: the test fails,
# never skips, rather than touch one.
#
#   DLOCK_BUILD_DIR=build tests/install/deb_test.sh
set -euo pipefail
: "${DLOCK_BUILD_DIR:?}"
build=$(realpath "$DLOCK_BUILD_DIR")
fail() { echo "FAIL debian package: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }
as_root true 2>/dev/null || fail "needs root or passwordless sudo (dpkg -i)"
for tool in cpack dpkg-deb lintian man; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/install-deps)"
done
if dpkg-query -W -f='${Status}' dlock 2>/dev/null | grep -q 'installed'; then
  fail "a dlock package is already installed on this machine; remove it first (dpkg -r dlock)"
fi
[ ! -e /usr/bin/dlock ] || fail "/usr/bin/dlock exists outside any package; move it away first"

tmp=$(mktemp -d)
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then as_root dpkg -r dlock >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

(cd "$build" && cpack -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1) || fail "cpack -G DEB failed: $(tail -5 "$tmp/cpack.log")"
deb=$(ls "$tmp"/out/dlock_*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || fail "cpack made no dlock_*.deb: $(tail -5 "$tmp/cpack.log")"
echo "package: $(basename "$deb"), $(stat -c %s "$deb") bytes"
dpkg-deb -I "$deb" | sed -n 's/^ \(Depends\|Recommends\|Installed-Size\):/  \1:/p'

# lintian exits non-zero on an error; its warnings and notes are shown.
# (As root it says so on stderr; that line is dropped.)
if ! lintian --info --display-info "$deb" >"$tmp/lintian.log" 2>"$tmp/lintian.err"; then
  cat "$tmp/lintian.log" >&2
  fail "lintian reports errors (above)"
fi
grep -E '^[EWI]: ' "$tmp/lintian.log" | sed 's/^/  lintian: /' || echo "  lintian: no tags"
grep -q '^E: ' "$tmp/lintian.log" && fail "lintian reports errors"

as_root dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { installed=1; fail "dpkg -i failed: $(tail -5 "$tmp/dpkg.log")"; }
installed=1
dpkg-query -W -f='${Status}' dlock | grep -q 'install ok installed' || fail "dpkg does not list dlock as installed"
dpkg -L dlock >"$tmp/files"

[ "$(command -v dlock)" = /usr/bin/dlock ] || fail "dlock on PATH is $(command -v dlock), not /usr/bin/dlock"
version=$(/usr/bin/dlock version) || fail "dlock version failed"
grep -q 'etcd' <<<"$version" || fail "dlock version names no etcd backend: $version"
page=$(man -w dlock) || fail "man -w dlock finds no page"
[ "$page" = /usr/share/man/man1/dlock.1.gz ] || fail "man -w dlock gives $page"
MANWIDTH=80 man -P cat dlock 2>/dev/null | grep -q 'dlock run' || fail "man dlock does not render"
for f in /usr/share/bash-completion/completions/dlock /usr/share/zsh/vendor-completions/_dlock \
  /usr/share/fish/vendor_completions.d/dlock.fish /usr/share/doc/dlock/copyright \
  /usr/share/doc/dlock/changelog.Debian.gz /usr/share/doc/dlock/examples/systemd/nightly-report.service; do
  [ -s "$f" ] || fail "$f is missing"
done
out=$(/usr/bin/dlock -b "file://$tmp/locks" run deb-test -- sh -c 'echo "fence $DLOCK_FENCE"') ||
  fail "dlock run on the file backend failed"
[[ $out =~ ^fence\ [1-9][0-9]*$ ]] || fail "dlock run printed '$out', expected 'fence N'"
rc=0
/usr/bin/dlock -b etcd://127.0.0.1:1 --connect-timeout 300ms status x >/dev/null 2>"$tmp/etcd.err" || rc=$?
[ "$rc" = 69 ] || fail "an etcd URL with nothing listening exited $rc (the module?): $(cat "$tmp/etcd.err")"

as_root dpkg -r dlock >"$tmp/dpkg.log" 2>&1 || fail "dpkg -r failed: $(tail -5 "$tmp/dpkg.log")"
installed=0
if dpkg-query -W -f='${Status}' dlock 2>/dev/null | grep -qv 'not-installed'; then
  fail "after dpkg -r, dpkg still knows dlock: $(dpkg-query -W -f='${Status}' dlock)"
fi
left=()
while read -r f; do
  [ -d "$f" ] && continue # directories shared with other packages stay
  [ -e "$f" ] || [ -L "$f" ] && left+=("$f")
done <"$tmp/files"
((${#left[@]} == 0)) || fail "dpkg -r left ${left[*]}"
for d in /usr/lib/dlock /usr/share/doc/dlock; do
  [ ! -e "$d" ] || fail "dpkg -r left the directory $d"
done
echo "PASS debian package: lintian without errors, installed, used and removed without a trace"
