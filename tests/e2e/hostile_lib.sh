# shellcheck shell=bash
# What the hostile-server tests share (tests/hostile/fake_server.py on
# loopback). Source it after lib.sh (SCENARIO set):
#
#   start_fake MODE [ARGS...]     start fake_server.py MODE PORTFILE [ARGS...]
#                                 (an upstream port, --listeners N, --hold-ms MS);
#                                 sets FAKE_PID, FAKE_PORTS (array), FAKE_PORT (the first)
#   check_command WHAT EXPECT URL COMMAND...
#                                 dlock -b URL --connect-timeout 1s COMMAND...
#                                 exits EXPECT within 1s + HOSTILE_MARGIN_MS
#                                 (1500), with peak RSS under 32 MiB, and prints
#                                 "WHAT, COMMAND: exit N after T ms, peak RSS K KiB".
#                                 A failure (EXPECT not 0) says so on one
#                                 `dlock:` line (ping: on stdout, with at most
#                                 one such line on stderr) and never runs
#                                 the job (it touches $tmpdir/ran); a success
#                                 prints nothing on stderr. Sets out.
#   check_hostile_commands WHAT URL [TOKEN_EXPECT]
#                                 run, acquire, status, list, ping and
#                                 release --force exit 69; renew and release
#                                 with a token no server knows exit
#                                 TOKEN_EXPECT (default 69; 3 on ZooKeeper
#                                 and PostgreSQL, where such a token names
#                                 no acquire keeper and no server is asked)
#
# Turning a proxy hostile under a running job (the server's own wrapper,
# with-redis and the like, started the real server):
#   start_turn_proxy PROTO MODE UPSTREAM_PORT HOLD_MS
#                                 fake_server.py turn-PROTO-MODE; sets
#                                 PROXY_PID, PROXY_PORT
#   check_turn WHAT TTL_MS PROXY_URL REAL_URL NAME
#                                 `dlock run --ttl TTL_MS` through the proxy,
#                                 with a blocking job; once wait_renewal (the
#                                 caller's function: a renewal through the
#                                 proxy reached the server) returns, the proxy
#                                 turns; the job must be gone and dlock exit 76
#                                 with one line within TTL_MS of the turn, and
#                                 a `dlock run --wait` on REAL_URL, started at
#                                 the turn, must not start its job while the
#                                 first one still runs. Prints "WHAT: exit N,
#                                 job gone T ms after the turn, peak RSS K KiB".

# shellcheck disable=SC2154 # tmpdir, rc, out, err come from lib.sh

HOSTILE_FAKE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../hostile" && pwd)/fake_server.py
[ -x /usr/bin/time ] || fail "/usr/bin/time is needed to measure the peak RSS"
HOSTILE_MARGIN_MS=${HOSTILE_MARGIN_MS:-1500}

start_fake() {
  local mode=$1
  shift
  rm -f "$tmpdir/fake.port"
  python3 "$HOSTILE_FAKE" "$mode" "$tmpdir/fake.port" "$@" &
  FAKE_PID=$!
  track "$FAKE_PID"
  wait_until -t 10 test -s "$tmpdir/fake.port" || fail "$mode: the fake server did not start"
  read -r -a FAKE_PORTS <"$tmpdir/fake.port"
  FAKE_PORT=${FAKE_PORTS[0]}
}

stop_fake() { kill "$FAKE_PID" 2>/dev/null; }

# The peak RSS /usr/bin/time wrote to FILE, in KiB.
_peak_rss() { sed -n 's/^rss //p' "$1" | tail -1; }

check_command() {
  local what=$1 expect=$2 url=$3 started elapsed rss limit
  shift 3
  rm -f "$tmpdir/ran"
  started=$(now_ms)
  capture /usr/bin/time -f 'rss %M' -o "$tmpdir/time.out" timeout -s KILL 30 \
    "$DLOCK_BIN" -b "$url" --connect-timeout 1s "$@"
  elapsed=$(($(now_ms) - started))
  rss=$(_peak_rss "$tmpdir/time.out")
  err=$(printf '%s\n' "$err" | grep -v '^Command terminated by signal\|^Command exited with non-zero status')
  echo "$what, $1: exit $rc after $elapsed ms, peak RSS ${rss:-?} KiB"
  [ "$rc" = "$expect" ] || fail "$what, $1: exit $rc, expected $expect; stdout: $out; stderr: $err"
  if [ "$expect" = 0 ]; then
    [ -z "$err" ] || fail "$what, $1: succeeded but printed on stderr: $err"
  elif [ "$1" = ping ]; then
    [ -z "$err" ] || assert_one_line_message "$what, $1" "$err"
  else
    assert_one_line_message "$what, $1" "$err"
    [ ! -e "$tmpdir/ran" ] || fail "$what, $1: the job ran"
  fi
  limit=$((1000 + HOSTILE_MARGIN_MS))
  [ "$elapsed" -lt "$limit" ] || fail "$what, $1: took $elapsed ms, more than --connect-timeout 1s + ${HOSTILE_MARGIN_MS} ms"
  check_peak_rss "$what, $1" "$rss"
}

check_hostile_commands() {
  local what=$1 url=$2 token_expect=${3:-69}
  check_command "$what" 69 "$url" run u -- touch "$tmpdir/ran"
  check_command "$what" 69 "$url" acquire u
  check_command "$what" "$token_expect" "$url" renew u 00000000075bcd15
  check_command "$what" "$token_expect" "$url" release u 00000000075bcd15
  check_command "$what" 69 "$url" release u --force
  check_command "$what" 69 "$url" status u
  check_command "$what" 69 "$url" list
  check_command "$what" 69 "$url" ping
}

start_turn_proxy() {
  local proto=$1 mode=$2 upstream=$3 hold=$4
  rm -f "$tmpdir/proxy.port" "$tmpdir/proxy.port.turned"
  python3 "$HOSTILE_FAKE" "turn-$proto-$mode" "$tmpdir/proxy.port" "$upstream" --hold-ms "$hold" &
  PROXY_PID=$!
  track "$PROXY_PID"
  wait_until -t 10 test -s "$tmpdir/proxy.port" || fail "turn-$proto-$mode: the proxy did not start"
  PROXY_PORT=$(cat "$tmpdir/proxy.port")
}

# The contender's job: records when it started and whether the first job
# (pid $2) was still alive then (a zombie counts as gone).
# shellcheck disable=SC2016 # expanded by the job's shell
_contender_job='state=$(sed "s/.*) //" "/proc/$2/stat" 2>/dev/null | cut -c1)
case $state in ""|Z|X) alive=no ;; *) alive=yes ;; esac
echo "$(date +%s%3N) $alive" >"$1/contender.tmp" && mv "$1/contender.tmp" "$1/contender"'

check_turn() {
  local what=$1 ttl_ms=$2 proxy_url=$3 real_url=$4 name=$5 turned gone rss contender_pid started alive run_rc
  rm -f "$tmpdir/contender" "$tmpdir/run.time"
  DL=("$DLOCK_BIN" -b "$proxy_url")
  RUN_PREFIX=(/usr/bin/time -f 'rss %M' -o "$tmpdir/run.time")
  start_job "$name" --ttl "${ttl_ms}ms"
  wait_renewal "$name"
  kill -USR1 "$PROXY_PID"
  wait_until -t 5 test -s "$tmpdir/proxy.port.turned" || fail "$what: the proxy did not turn"
  turned=$(cat "$tmpdir/proxy.port.turned")
  "$DLOCK_BIN" -b "$real_url" run --wait 20s "$name" -- sh -c "$_contender_job" sh "$tmpdir" "$JOB_PID" \
    </dev/null >/dev/null 2>"$tmpdir/contender.err" &
  contender_pid=$!
  track "$contender_pid"
  wait_until -t 10 is_gone "$JOB_PID" || fail "$what: the job still ran 10 s after the turn (ttl ${ttl_ms} ms)"
  gone=$(($(now_ms) - turned))
  wait_until -t 10 test -e "$tmpdir/dlock.rc" || fail "$what: dlock had not exited 10 s after the turn"
  run_rc=$(cat "$tmpdir/dlock.rc")
  rss=$(_peak_rss "$tmpdir/run.time")
  err=$(grep -v '^Command terminated by signal\|^Command exited with non-zero status' "$tmpdir/job.err")
  echo "$what: exit $run_rc, job gone $gone ms after the turn, dlock exited $(($(cat "$tmpdir/dlock.exit_ms") - turned)) ms after it, peak RSS ${rss:-?} KiB"
  wait_exit "$contender_pid" 25
  [ "$run_rc" = 76 ] || fail "$what: dlock exited $run_rc after the turn, expected 76; stderr: $err"
  assert_one_line_message "$what" "$err"
  [ "$gone" -lt "$ttl_ms" ] || fail "$what: the job was gone only $gone ms after the turn, past the ${ttl_ms} ms lease"
  check_peak_rss "$what" "$rss"
  [ -s "$tmpdir/contender" ] || fail "$what: the contender on the real server never ran its job (exit $rc): $(cat "$tmpdir/contender.err")"
  read -r started alive <"$tmpdir/contender"
  [ "$alive" = no ] || fail "$what: the contender's job started $((started - turned)) ms after the turn while the first job still ran"
  RUN_PREFIX=()
}
