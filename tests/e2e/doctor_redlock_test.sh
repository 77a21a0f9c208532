#!/usr/bin/env bash
# dlock doctor on Redlock: three independent masters with persistence are
# all ok (their clocks, one machine's, agree); a node made the replica of
# another is found (redlock.independent-nodes unsafe, exit 78), a node whose
# clock is 10 s ahead (libfaketime) too (redlock.clocks warning); a node
# that is gone leaves a majority (redlock.quorum warning).
# Run under scripts/with-redis --nodes 3.
SCENARIO="doctor: Redlock nodes that replicate each other"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/doctor_lib.sh"
[ "${DLOCK_TEST_NODES:-}" = 3 ] || fail "run this test under scripts/with-redis --nodes 3"
use_redlock
for i in 1 2 3; do
  cli=DLOCK_TEST_NODE_CLI_$i
  "${!cli}" CONFIG SET appendonly yes >/dev/null
done

doctor
expect_all_ok
expect_check redlock.independent-nodes ok
expect_check redlock.clocks ok "agree"

"$DLOCK_TEST_NODE_CLI_3" REPLICAOF 127.0.0.1 "${NODE_PORTS[0]}" >/dev/null
doctor
expect_rc 78 "node 3 a replica of node 1"
expect_check redlock.independent-nodes unsafe "127.0.0.1:${NODE_PORTS[2]} is a replica of node 127.0.0.1:${NODE_PORTS[0]}"
expect_text_line redlock.independent-nodes unsafe
"$DLOCK_TEST_NODE_CLI_3" REPLICAOF NO ONE >/dev/null

# Node 3's clock 10 s ahead: libfaketime (FAKETIME=+10), under which node 3
# is started again. Debian's redis-server allocates with jemalloc, which
# hangs libfaketime's start-up; glibc's malloc debug library, preloaded
# first, gives malloc back to glibc.
faketime_lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
malloc_shim=$(ls /lib/*/libc_malloc_debug.so.0 /usr/lib/*/libc_malloc_debug.so.0 2>/dev/null | head -1)
[ -n "$faketime_lib" ] || fail "libfaketime.so.1 not found (Debian: faketime, scripts/install-deps)"
mkdir "$tmpdir/fake"
cat >"$tmpdir/fake/redis-server" <<SH
#!/bin/sh
exec env LD_PRELOAD='$malloc_shim $faketime_lib' FAKETIME=+10 FAKETIME_DONT_FAKE_MONOTONIC=1 '$(command -v redis-server)' "\$@"
SH
chmod +x "$tmpdir/fake/redis-server"
PATH=$tmpdir/fake:$PATH "$DLOCK_TEST_NODE_RESTART_3" >/dev/null || fail "node 3 did not start again under libfaketime"
grep -q libfaketime "/proc/$(redlock_server_pids 3)/maps" || fail "node 3 does not run under libfaketime"
doctor
expect_rc 0 "one node's clock 10 s ahead (a warning)"
expect_check redlock.clocks warning "differ by "
# 10 s, give or take the halfway estimate of a round trip under load (9.999s)
printf '%s' "$out" | json '[c["found"] for c in d["checks"] if c["id"] == "redlock.clocks"][0]' |
  grep -Eq 'differ by (9\.9[0-9]*|10(\.0[0-9]*)?)s' || fail "redlock.clocks does not give an offset of about 10 s: $out"
"$DLOCK_TEST_NODE_RESTART_3" >/dev/null || fail "node 3 did not start again"

redlock_server_kill 2
doctor
expect_rc 0 "one node of three gone"
expect_check redlock.quorum warning "2 of 3 nodes answer"
pass
