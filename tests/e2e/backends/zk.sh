# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The zk adapter (lib.sh sources it): the ZooKeeper server (or ensemble)
# that scripts/with-zookeeper started for the test (DLOCK_TEST_ZK_*).
#
#   use_zookeeper [URL]        switch the test to it: BACKEND, DL and
#                              DLOCK_BACKEND name URL (default
#                              $DLOCK_TEST_ZK_URL). Fails, never skips, when the
#                              test is not run under with-zookeeper or dlock
#                              lacks the zk backend. Sets ZKCLI (kazoo znode
#                              tool: "$ZKCLI" ls PATH, ..., see
#                              scripts/with-zookeeper) and ZK4 ("$ZK4" WORD
#                              [PORT]: a four-letter word). Holders of locks on
#                              URL (acquire's keepers) are killed on exit
#   ZK_NODE_RE                 the name of a lock node (Curator's protected
#                              _c_<uuid>-lock-<10-digit sequence>), a regex
#   zk_children PATH           JSON array of PATH's children with their stat
#                              (name, czxid, ephemeralOwner, ...), [] if none
#   zk_child_count PATH        how many children PATH has (0 if it is absent)
#   zk_session_timeout_ms FILE the session timeout dlock -v reported in FILE
#   zk_wait_pinged             wait (3 s) until a session that was connected
#                              when it was called sends the server a request
#   zk_wakeups FILE...         how many "woken by ZooKeeper" lines FILEs hold
#   zk_server_pids [I]         member I's pid (default 1)  (see server_freeze)
#   zk_server_kill [I]         SIGKILL member I
#   zk_server_start [I]        start member I again with its data, wait until
#                              it serves
#   zk_server_restart [I]      both: its sessions and ephemeral nodes survive
# shellcheck disable=SC2034 # for the caller
ZK_NODE_RE='^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$'

use_zookeeper() {
  use_server zk DLOCK_TEST_ZK_URL "scripts/with-zookeeper [options]" zk "${1:-${DLOCK_TEST_ZK_URL:-}}"
  _cleanup_backends+=("$BACKEND")
  # shellcheck disable=SC2034 # ZKCLI and ZK4 are for the caller
  ZKCLI=$DLOCK_TEST_ZK_CLI
  # shellcheck disable=SC2034
  ZK4=$DLOCK_TEST_ZK_FOURLW
}

zk_children() { "$DLOCK_TEST_ZK_CLI" children "$1"; }

zk_child_count() { zk_children "$1" | json 'len(d)'; }

# zk_session_timeout_ms FILE: from dlock -v's "session 0x... on HOST:PORT,
# timeout 2s (asked 2s)" line in FILE, the negotiated timeout in ms; fails
# the test when there is none.
zk_session_timeout_ms() {
  local ms
  ms=$(python3 - "$1" <<'PY'
import re, sys
units = {"ms": 1, "s": 1000, "m": 60000}
# The last session line: with -v a waiting run looks at the holder first
# (status, a session of its own) and then opens the lock's session.
found = None
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"session .*timeout ([0-9.]+)(ms|s|m)\b", line)
    if m:
        found = int(round(float(m.group(1)) * units[m.group(2)]))
if found is not None:
    print(found)
PY
  )
  [ -n "$ms" ] || fail "dlock -v did not report the negotiated session timeout ('session ..., timeout T'): $(head -3 "$1")"
  echo "$ms"
}

# zk_wait_pinged: waits up to 3 s until one of the client sessions the
# server has now (see the four-letter word cons) sends it another request: a
# renewal or a ping has landed. Fails if none does.
zk_wait_pinged() {
  local before
  before=$(_zk_session_requests)
  [ -n "$before" ] || fail "cons shows no client session on the server"
  wait_until -t 3 _zk_session_requests_rose "$before" ||
    fail "no session sent the server a request within 3 s (cons: $("$ZK4" cons | tr '\n' ' '))"
}

# "sid recved" per client session cons lists.
_zk_session_requests() {
  "$ZK4" cons | sed -n 's/.*recved=\([0-9]*\),.*sid=\(0x[0-9a-f]*\).*/\2 \1/p'
}

_zk_session_requests_rose() {
  local sid count old
  while read -r sid count; do
    old=$(printf '%s\n' "$1" | awk -v s="$sid" '$1 == s { print $2 }')
    [ -n "$old" ] && [ "$count" -gt "$old" ] && return 0
  done <<<"$(_zk_session_requests)"
  return 1
}

zk_wakeups() { cat "$@" 2>/dev/null | grep -c 'woken by ZooKeeper'; }

zk_server_pids() {
  local pidfile=DLOCK_TEST_ZK_PIDFILE_${1:-1}
  cat "${!pidfile}"
}
zk_server_kill() { _zk_member_script STOP "stop ZooKeeper member" "${1:-1}"; }
zk_server_start() { _zk_member_script START "start ZooKeeper member" "${1:-1}"; }
zk_server_restart() { _zk_member_script RESTART "restart ZooKeeper member" "${1:-1}"; }
_zk_member_script() {
  local script=DLOCK_TEST_ZK_$1_$3
  run_server_script "$2 $3" "${!script}"
}
