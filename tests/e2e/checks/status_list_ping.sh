# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The status, list and ping checks (lib.sh sources this file): the
# scenario the server backends' *_status_list_ping tests share. Holder h
# holds app/one (start_status_holder); the test adds its backend's own checks
# (what the server stores, what ping shows of a cluster) around these.

# The forms of the release token that nothing may print (assert_no_token):
# start_status_holder puts DLOCK_TOKEN here, a test may add others (e.g. the
# raw value the server keeps).
SECRET_TOKENS=()

# start_status_holder [TOKEN_RE [FENCE_RE]]: start_holder h app/one --ttl 20s.
# Sets one_pid (its dlock), one_token and one_fence (the DLOCK_TOKEN and
# DLOCK_FENCE its child saw: they must match TOKEN_RE and FENCE_RE, default
# anything not empty) and SECRET_TOKENS=(one_token).
# shellcheck disable=SC2034 # one_token and one_fence are for the caller
start_status_holder() {
  local token_re=${1:-.} fence_re=${2:-.}
  start_holder h app/one --ttl 20s
  one_pid=$HOLDER_PID
  one_token=$(cat "$tmpdir/h.token")
  one_fence=$(cat "$tmpdir/h.fence")
  [[ $one_token =~ $token_re ]] && [[ $one_fence =~ $fence_re ]] ||
    fail "holder did not get DLOCK_TOKEN/DLOCK_FENCE (token '$one_token', fence '$one_fence')"
  SECRET_TOKENS=("$one_token")
}

# assert_no_token WHAT TEXT: TEXT shows none of SECRET_TOKENS.
assert_no_token() {
  local secret
  for secret in "${SECRET_TOKENS[@]}"; do
    [ -n "$secret" ] || continue
    case $2 in *"$secret"*) fail "$1 prints the release token: $2" ;; esac
  done
}

# check_held_status_text NAME PID FENCE: `dlock status NAME` exits 0 and
# shows the holder PID, the FENCE and this host, never the token. Leaves the
# output in $out and $err for the backend's own checks (the lease left).
check_held_status_text() {
  capture "${DL[@]}" status "$1"
  [ "$rc" = 0 ] || fail "status of a held lock exited $rc, expected 0; stderr: $err"
  case $out in *"$2"*) ;; *) fail "status does not show the holder pid $2: $out" ;; esac
  case $out in *"$3"*) ;; *) fail "status does not show the fence $3: $out" ;; esac
  case $out in *"$(hostname)"*) ;; *) fail "status does not show the holder's host: $out" ;; esac
  assert_no_token "status" "$out$err"
}

# check_held_status_json NAME PID FENCE TTL_LEFT_OK: `dlock status NAME
# --json` exits 0 without the token: name NAME, held, holder {pid PID, this
# host and user, a command that is start_holder's, since}, fence FENCE, no
# waiters; TTL_LEFT_OK is the backend's condition (Python) on ttl_left_ms,
# bound to t (None if absent), e.g. 'isinstance(t, int) and 0 < t <= 20000'.
check_held_status_json() {
  capture "${DL[@]}" status "$1" --json
  [ "$rc" = 0 ] || fail "status --json of a held lock exited $rc; stderr: $err"
  assert_no_token "status --json" "$out$err"
  printf '%s' "$out" >"$tmpdir/status.json"
  python3 - "$tmpdir/status.json" "$1" "$2" "$3" "$(hostname)" "$(id -un)" "$4" <<'PY' || fail "status --json is wrong: $out"
import json, sys
path, name, pid, fence, host, user, ttl_left_ok = sys.argv[1:]
d = json.load(open(path))
def check(cond, what):
    if not cond:
        sys.exit("status --json: " + what)
check(d.get("name") == name, "name is %r" % d.get("name"))
check(d.get("held") is True, "held is %r" % d.get("held"))
h = d.get("holder")
check(isinstance(h, dict), "holder is not an object")
check(h.get("pid") == int(pid), "holder.pid %r != dlock's pid %s" % (h.get("pid"), pid))
check(h.get("host") == host, "holder.host %r != %s" % (h.get("host"), host))
check(h.get("user") == user, "holder.user %r != %s" % (h.get("user"), user))
check(isinstance(h.get("command"), str) and "holder" in h["command"], "holder.command %r" % h.get("command"))
check(isinstance(h.get("since"), str) and h["since"][:2] == "20", "holder.since %r" % h.get("since"))
check(d.get("fence") == int(fence), "fence %r != the job's DLOCK_FENCE %s" % (d.get("fence"), fence))
check(d.get("waiters") == 0, "waiters %r" % d.get("waiters"))
t = d.get("ttl_left_ms")
check(eval(ttl_left_ok), "ttl_left_ms %r, expected %s" % (t, ttl_left_ok))
PY
}

# check_waiters NAME COUNT [QUEUED_CHECK [GONE_CHECK]]: COUNT runs of `dlock
# run NAME --wait 20s` queue behind NAME's holder: status --json counts COUNT
# waiters, QUEUED_CHECK runs (a command checking the backend's own view of the
# queue, failing the test), status text shows "waiters: COUNT" and no token.
# Then SIGTERM: each waiter exits 143, status --json counts none and
# GONE_CHECK runs (the backend's view again: the waiters left nothing behind).
check_waiters() {
  local name=$1 count=$2 queued=${3:-} gone=${4:-} i pids=()
  for ((i = 1; i <= count; i++)); do
    "${DL[@]}" run "$name" --wait 20s -- true </dev/null 2>"$tmpdir/waiter$i.err" &
    pids+=($!)
    track $!
  done
  wait_until _counts_waiters "$name" "$count" ||
    fail "status --json never counted the $count waiting run(s) (now $(lock_waiters "$name")); stderr: $(cat "$tmpdir"/waiter*.err)"
  [ -z "$queued" ] || "$queued" || fail "$queued (with $count waiter(s) queued) failed"
  capture "${DL[@]}" status "$name"
  printf '%s\n' "$out" | grep -qE "^waiters: +$count\$" || fail "status text does not show $count waiter(s): $out"
  assert_no_token "status with $count waiter(s)" "$out$err"
  kill -TERM "${pids[@]}"
  for ((i = 1; i <= count; i++)); do
    wait_exit "${pids[i - 1]}" 5
    [ "$rc" = 143 ] || fail "waiter $i ended with $rc after SIGTERM, expected 143; stderr: $(cat "$tmpdir/waiter$i.err")"
  done
  wait_until -t 3 has_no_waiter "$name" || fail "the interrupted waiters are still counted (now $(lock_waiters "$name"))"
  [ -z "$gone" ] || "$gone" || fail "$gone (after the waiters were interrupted) failed"
}

_counts_waiters() { [ "$(lock_waiters "$1")" = "$2" ]; }

# check_free_status: free locks exit 3 and status --json says held false:
# nothing.here, never used, and app/three, which a run takes and releases
# first (three_fence is the DLOCK_FENCE that run saw).
# shellcheck disable=SC2034 # three_fence is for the caller
check_free_status() {
  capture "${DL[@]}" status nothing.here
  [ "$rc" = 3 ] || fail "status of a never-used lock exited $rc, expected 3; stderr: $err"
  capture "${DL[@]}" status nothing.here --json
  [ "$rc" = 3 ] || fail "status --json of a never-used lock exited $rc, expected 3"
  [ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a never-used lock: held is not false: $out"
  three_fence=$("${DL[@]}" run app/three -- sh -c 'echo "$DLOCK_FENCE"' </dev/null) || fail "run app/three failed"
  capture "${DL[@]}" status app/three --json
  [ "$rc" = 3 ] || fail "status of a released lock exited $rc, expected 3"
  [ "$(printf '%s' "$out" | json 'd["held"]')" = false ] || fail "status --json of a released lock: held is not false: $out"
}

# start_list_locks BULK THIRD: the locks the list checks find besides
# app/one: holders h2 of app/two and h3 of THIRD (two_pid and third_pid are
# their dlocks), app/ns acquired in namespace elsewhere and bulk/1 ...
# bulk/BULK acquired here.
# shellcheck disable=SC2034 # two_pid and third_pid are for the caller
start_list_locks() {
  local i
  start_holder h2 app/two
  two_pid=$HOLDER_PID
  start_holder h3 "$2"
  third_pid=$HOLDER_PID
  [ "$third_pid" -gt 0 ] || fail "no pid for holder h3"
  capture "${DL[@]}" --namespace elsewhere acquire app/ns --ttl 30s
  [ "$rc" = 0 ] || fail "acquire in namespace elsewhere exited $rc; stderr: $err"
  for ((i = 1; i <= $1; i++)); do
    "${DL[@]}" acquire "bulk/$i" --ttl 60s </dev/null >/dev/null || fail "acquire bulk/$i failed"
  done
}

# check_list_rows BULK "NOT_LISTED..." HELD...: `dlock list` exits 0 without
# the token and shows exactly one row for each lock HELD, one_pid, BULK rows
# bulk/N, and none of the (space-separated) NOT_LISTED: locks that are free,
# of another namespace or not dlock's.
check_list_rows() {
  local bulk=$1 not_listed n
  read -ra not_listed <<<"$2"
  shift 2
  capture "${DL[@]}" list
  [ "$rc" = 0 ] || fail "list exited $rc; stderr: $err"
  assert_no_token "list" "$out$err"
  for n in "$@"; do
    [ "$(printf '%s\n' "$out" | grep -cE "^${n}[[:space:]]")" = 1 ] || fail "list does not show exactly one row for $n: $out"
  done
  for n in "${not_listed[@]}"; do
    case $out in *"$n"*) fail "list shows $n, a lock that is not held in this namespace: $out" ;; esac
  done
  case $out in *"$one_pid"*) ;; *) fail "list does not show holder pid $one_pid: $out" ;; esac
  [ "$(printf '%s\n' "$out" | grep -cE '^bulk/[0-9]+[[:space:]]')" = "$bulk" ] || fail "list does not show all $bulk bulk/N locks: $out"
}

# check_list_prefix PREFIX NAME:PID...: `dlock list PREFIX --json` exits 0
# without the token and holds exactly the locks NAME (in sort order), each
# held by PID.
check_list_prefix() {
  local prefix=$1 want="" got held
  shift
  capture "${DL[@]}" list "$prefix" --json
  [ "$rc" = 0 ] || fail "list $prefix --json exited $rc; stderr: $err"
  assert_no_token "list $prefix --json" "$out"
  got=$(printf '%s' "$out" | json 'sorted((x["name"], x["held"], x["holder"]["pid"]) for x in d) if isinstance(d, list) else "not an array"')
  for held in "$@"; do
    want+="${want:+, }[\"${held%:*}\", true, ${held##*:}]"
  done
  want="[$want]"
  [ "$got" = "$want" ] || fail "list $prefix --json: got $got, expected $want"
}

# check_list_json TOTAL: `list --json` shows app/ns alone in namespace
# elsewhere (start_list_locks) and an empty array for a prefix nothing
# has; `dlock list --json` exits 0 without the token and holds TOTAL locks.
# Leaves that document in $out.
check_list_json() {
  capture "${DL[@]}" --namespace elsewhere list --json
  [ "$(printf '%s' "$out" | json '[x["name"] for x in d]')" = '["app/ns"]' ] || fail "list in namespace elsewhere: $out"
  capture "${DL[@]}" list zzz --json
  [ "$rc" = 0 ] && [ "$(printf '%s' "$out" | json 'd')" = "[]" ] || fail "list with no match is not an empty array ($rc): $out"
  capture "${DL[@]}" list --json
  [ "$rc" = 0 ] || fail "list --json exited $rc; stderr: $err"
  assert_no_token "list --json" "$out"
  [ "$(printf '%s' "$out" | json 'len(d)')" = "$1" ] ||
    fail "list --json does not hold $1 locks: $(printf '%s' "$out" | json '[x["name"] for x in d]')"
}

# check_ping VERSION PORT [ROLE]: `dlock ping` of a single server exits 0,
# prints nothing on stderr and shows the server's VERSION, its ROLE (e.g.
# master, standalone) and a round-trip time; ping --json says ok, the node
# reachable at an address with PORT, with VERSION and ROLE, and a round trip.
# Leaves the document in $out.
check_ping() {
  local version=$1 port=$2 role=${3:-}
  capture "${DL[@]}" ping
  [ "$rc" = 0 ] || fail "ping exited $rc; stdout: $out; stderr: $err"
  case $out in *"$version"*) ;; *) fail "ping does not show the server version $version: $out" ;; esac
  [ -z "$role" ] || printf '%s\n' "$out" | grep -qi "$role" || fail "ping does not show the role $role: $out"
  printf '%s\n' "$out" | grep -qE '[0-9.]+ ?(ms|µs|us)' || fail "ping does not show a round-trip time: $out"
  [ -z "$err" ] || fail "ping printed on stderr: $err"
  capture "${DL[@]}" ping --json
  [ "$rc" = 0 ] || fail "ping --json exited $rc; stderr: $err"
  printf '%s' "$out" >"$tmpdir/ping.json"
  python3 - "$tmpdir/ping.json" "$version" "$port" "$role" <<'PY' || fail "ping --json is wrong: $out"
import json, sys
d = json.load(open(sys.argv[1]))
version, port, role = sys.argv[2:]
assert d["ok"] is True, d
node = d["nodes"][0]
assert node["reachable"] is True, node
assert version in node["version"], node
assert role in json.dumps(node), node
assert port in node["address"], node
assert isinstance(node["rtt_ms"], (int, float)) and node["rtt_ms"] >= 0, node
PY
}

# check_holders_released ID...: release_holder each ID (h among them): h's
# dlock exits 0 and app/one is free.
check_holders_released() {
  local id
  for id in "$@"; do release_holder "$id"; done
  wait_exit "$one_pid"
  [ "$rc" = 0 ] || fail "holder h exited $rc; stderr: $(cat "$tmpdir/h.err")"
  is_free app/one || fail "app/one is still held after its holder ended"
}
