# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The etcd adapter (lib.sh sources it): the etcd server (or cluster) that
# scripts/with-etcd started for the test (DLOCK_TEST_ETCD_*).
#
#   use_etcd [URL]             switch the test to it: BACKEND, DL and
#                              DLOCK_BACKEND name URL (default:
#                              $DLOCK_TEST_ETCD_URL, with the user dlock in it
#                              under --auth, its password then in
#                              DLOCK_PASSWORD, and ?cacert= of the test CA
#                              under --tls). Fails, never skips, when the test
#                              is not run under with-etcd or dlock lacks the
#                              etcd backend (a module, dlock-etcd.so). Sets
#                              ETCDCTL (etcdctl against every member, as root
#                              under --auth: "$ETCDCTL" get --prefix dlock/).
#                              etcd locks are not session-bound: acquire leaves
#                              no keeper, so there are no holders for the
#                              cleanup to kill (the holder pid of an acquired
#                              lock is the finished acquire's)
#   etcd_url HOSTS             the URL of use_etcd's default for HOSTS
#                              (host:port[,host:port...])
#   etcd_keys PREFIX           JSON array of the keys under PREFIX by create
#                              revision: key, create_revision, lease (hex),
#                              value
#   etcd_key_count NAME [NS]   how many contender keys lock NAME has (the
#                              direct children of NS/NAME/, NS default dlock)
#   etcd_lease_count           how many leases etcd has
#   etcd_stop I / etcd_start I stop (SIGKILL) / start member I again, waiting
#                              until it is gone / healthy
#   etcd_member_pid I          member I's pid
#   etcd_leader                the number I of the member that leads
#   etcd_renewals [I]          lease keep-alives that member I (default: the
#                              leader) has seen as leader
#   etcd_wait_renewed          wait (3 s) until a keep-alive lands on the
#                              leader; fails if none does. Sets
#                              ETCD_RENEWED_AFTER: a now_ms reading before
#                              that keep-alive landed (so the lease it renewed
#                              lasts at least until then + T)
#   etcd_server_pids [I]       member I's pid (default 1)  (see server_freeze)
#   etcd_server_kill [I]       SIGKILL member I (etcd_stop)
#   etcd_server_start [I]      start member I again with its data, wait until
#                              it is healthy (etcd_start)
#   etcd_server_restart [I]    both: its data survives
use_etcd() {
  [ -n "${DLOCK_TEST_ETCD_URL:-}" ] ||
    fail "DLOCK_TEST_ETCD_URL is not set: run this test as scripts/with-etcd [options] -- bash $0"
  use_server etcd DLOCK_TEST_ETCD_URL "scripts/with-etcd [options]" etcd "${1:-$(etcd_url "${DLOCK_TEST_ETCD_URL#*://}")}"
  [ -n "${DLOCK_TEST_ETCD_PASSWORD:-}" ] && export DLOCK_PASSWORD=$DLOCK_TEST_ETCD_PASSWORD
  # shellcheck disable=SC2034 # ETCDCTL is for the caller
  ETCDCTL=$DLOCK_TEST_ETCD_CTL
}

etcd_url() {
  local url=${DLOCK_TEST_ETCD_URL%%://*}://
  [ -n "${DLOCK_TEST_ETCD_USER:-}" ] && url+=$DLOCK_TEST_ETCD_USER@
  url+=$1
  [ -n "${DLOCK_TEST_ETCD_CACERT:-}" ] && url+="?cacert=$DLOCK_TEST_ETCD_CACERT"
  printf '%s\n' "$url"
}

etcd_keys() {
  "$DLOCK_TEST_ETCD_CTL" get --prefix "$1" -w json | python3 -c 'import base64, json, sys
kvs = json.load(sys.stdin).get("kvs") or []
out = [{"key": base64.b64decode(kv["key"]).decode(), "create_revision": kv.get("create_revision", 0),
        "lease": "%x" % kv.get("lease", 0), "value": base64.b64decode(kv.get("value", "")).decode(errors="replace")}
       for kv in kvs]
print(json.dumps(sorted(out, key=lambda kv: kv["create_revision"])))'
}

etcd_key_count() {
  local prefix=${2:-dlock}/$1/
  etcd_keys "$prefix" | json "len([k for k in d if '/' not in k['key'][${#prefix}:]])"
}

etcd_lease_count() {
  "$DLOCK_TEST_ETCD_CTL" lease list -w json | json 'len(d.get("leases") or [])'
}

etcd_stop() {
  local stop=DLOCK_TEST_ETCD_STOP_$1
  "${!stop}" || fail "could not stop etcd member $1"
}

etcd_start() {
  local start=DLOCK_TEST_ETCD_START_$1
  "${!start}" || fail "etcd member $1 did not start again"
}

etcd_member_pid() {
  local pidfile=DLOCK_TEST_ETCD_PIDFILE_$1
  cat "${!pidfile}"
}

etcd_leader() { "$DLOCK_TEST_ETCD_LEADER"; }

etcd_renewals() {
  local i=${1:-} member_ports
  [ -n "$i" ] || i=$(etcd_leader) || return 1
  read -ra member_ports <<<"$DLOCK_TEST_ETCD_PORTS"
  curl -sf --noproxy '*' --max-time 2 ${DLOCK_TEST_ETCD_CACERT:+--cacert "$DLOCK_TEST_ETCD_CACERT"} \
    ${DLOCK_TEST_ETCD_CERT:+--cert "$DLOCK_TEST_ETCD_CERT" --key "$DLOCK_TEST_ETCD_KEY"} \
    "${DLOCK_TEST_ETCD_ENDPOINTS%%://*}://127.0.0.1:${member_ports[$((i - 1))]}/metrics" |
    awk '$1 == "etcd_debugging_lease_renewed_total" { printf "%d\n", $2 + 0; found = 1 } END { exit !found }'
}

# shellcheck disable=SC2034 # ETCD_RENEWED_AFTER is for the caller
etcd_wait_renewed() {
  local leader within=${1:-3}
  leader=$(etcd_leader) || fail "no etcd member leads"
  ETCD_RENEWED_AFTER=$(now_ms)
  _etcd_renewed=$(etcd_renewals "$leader") || fail "could not read member $leader's lease metrics"
  wait_until -t "$within" _etcd_renewals_rose "$leader" ||
    fail "no lease keep-alive reached the leader (member $leader) within $within s (renewals seen: $_etcd_renewed)"
}

# shellcheck disable=SC2034 # ETCD_RENEWED_AFTER is for the caller
_etcd_renewals_rose() {
  local n started
  started=$(now_ms)
  n=$(etcd_renewals "$1") || return 1
  [ "$n" -gt "$_etcd_renewed" ] && return 0
  ETCD_RENEWED_AFTER=$started
  return 1
}

etcd_server_pids() { etcd_member_pid "${1:-1}"; }
etcd_server_kill() { etcd_stop "${1:-1}"; }
etcd_server_start() { etcd_start "${1:-1}"; }
etcd_server_restart() {
  local restart=DLOCK_TEST_ETCD_RESTART_${1:-1}
  "${!restart}" || fail "etcd member ${1:-1} could not be restarted"
}
