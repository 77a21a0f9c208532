#!/usr/bin/env bash
# dlock doctor on etcd: a healthy member is ok but for a release with a
# known lease bug (Debian 12's 3.4.23: etcd issue #15247, a warning); an
# unreachable member in the URL is found (etcd.members warning), a URL of
# unreachable members only is 69; a URL naming the members of two clusters
# (a second one started here) is unsafe; this host's clock 30 s ahead of or
# behind the member's (libfaketime) is an etcd.clock warning. Run under
# scripts/with-etcd.
SCENARIO="doctor: etcd with an unreachable member in the URL"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/doctor_lib.sh"
use_etcd
version=$("$DLOCK_TEST_ETCD_CTL" endpoint status -w json | json 'd[0]["Status"]["version"]')
[ -n "$version" ] || fail "etcdctl endpoint status gave no version"

doctor --ttl 2s
expect_all_ok etcd.version
expect_check etcd.members ok "1 of 1 members healthy"
expect_check etcd.one-cluster ok
expect_check etcd.clock ok "agrees with the members'"
if [ "$version" = 3.4.23 ]; then
  expect_check etcd.version warning "#15247"
  expect_text_line etcd.version warning
else
  expect_check etcd.version ok "$version"
fi

# This host's clock 30 s off the member's (libfaketime moves dlock's
# clocks only): a warning either way, with the offset and its direction.
command -v faketime >/dev/null || fail "faketime is not installed (scripts/install-deps installs it)"
real_dl=("${DL[@]}")
for shift in +30s -30s; do
  # (an ASan build wants its runtime first; libfaketime is preloaded)
  DL=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" faketime -f "$shift" "${real_dl[@]}")
  doctor --ttl 2s
  expect_rc 0 "a clock $shift off (a warning)"
  if [ "$shift" = +30s ]; then want="ahead of"; else want="behind"; fi
  expect_check etcd.clock warning "$want that of http://127.0.0.1:$DLOCK_TEST_ETCD_PORT"
  printf '%s' "$out" | json '[c["found"] for c in d["checks"] if c["id"] == "etcd.clock"][0]' | grep -Eq 'at least (29|30)(\.[0-9]+)?s' ||
    fail "doctor under faketime $shift does not give the offset (29-30 s): $out"
done
expect_text_line etcd.clock warning
DL=("${real_dl[@]}")

use_etcd "etcd://127.0.0.1:$DLOCK_TEST_ETCD_PORT,127.0.0.1:1"
doctor --ttl 2s
expect_rc 0 "one of two members unreachable (a warning)"
expect_check etcd.members warning "127.0.0.1:1"
expect_text_line etcd.members warning

# A URL that names the members of two clusters: a second one, started here.
cat >"$tmpdir/second.sh" <<'SH'
"$DLOCK_BIN" -b "etcd://127.0.0.1:$FIRST_PORT,127.0.0.1:$DLOCK_TEST_ETCD_PORT" doctor --json >"$RESULT.out"
echo "$?" >"$RESULT.rc"
SH
FIRST_PORT=$DLOCK_TEST_ETCD_PORT RESULT=$tmpdir/second bash "$(dirname "$0")/../../scripts/with-etcd" -- \
  bash "$tmpdir/second.sh" >"$tmpdir/second.log" 2>&1 || fail "a second etcd did not run: $(tail -5 "$tmpdir/second.log")"
out=$(cat "$tmpdir/second.out") rc=$(cat "$tmpdir/second.rc")
_doctor_args=(--json)
expect_rc 78 "a URL that names the members of two clusters"
expect_check etcd.one-cluster unsafe "2 clusters"

use_etcd "etcd://127.0.0.1:1"
capture "${DL[@]}" --connect-timeout 1s doctor
[ "$rc" = 69 ] || fail "doctor with no member exited $rc, expected 69; stderr: $err"
assert_one_line_message "doctor with no member" "$err"
pass
