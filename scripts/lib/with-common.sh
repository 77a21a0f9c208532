# shellcheck shell=bash disable=SC2154 # with_name, me and dir are the wrapper's
# What the scripts/with-* wrappers share: messages, processes, ports, the
# private directory with its cleanup and watchdog, the test CA, helper
# scripts and the peer-link relays. A wrapper sets its name and path, then
# sources this file:
#
#   with_name=with-redis
#   me=$(readlink -f "$0")
#   . "$(dirname "$me")/lib/with-common.sh"
#
#   die MSG...               "with_name: MSG" on stderr, exit 1
#   usage                    the wrapper's header comment (up to its
#                            `set -uo` line) on stdout, exit 0
#   now_ms                   wall clock in ms
#   pid_gone PID             PID is gone (a zombie counts as gone)
#   log_tail LOG [ERE]       LOG's last 15 lines on stderr (of those that
#                            match ERE, if any do)
#   need_tools HINT TOOL...  dies unless every TOOL is on PATH
#   unset_env_prefix PREFIX  unsets every variable whose name starts so
#   pick_ports COUNT         COUNT distinct free ports on 127.0.0.1
#   kill_pidfile PIDFILE     SIGCONT then SIGKILL the pid PIDFILE holds and
#                            wait (5 s) until it is gone; 1 if it is not
#   kill_pidfiles            kill_pidfile of every $dir/*.pid
#   make_private_dir         dir: a new private directory, path short enough
#                            for a unix socket inside it
#   start_cleanup            on exit (even a SIGKILL of the wrapper) runs
#                            stop_servers (the wrapper's; kill_pidfiles if
#                            it has none) and removes $dir
#   make_test_certs DIR CA_SUBJECT SERVER_SUBJECT [CLIENT_SUBJECT]
#                            a test CA in DIR, a server certificate for
#                            127.0.0.1 and localhost, and a client one
#   write_helper FILE ARGS...  FILE runs the wrapper with ARGS... "$@"
#   start_peer_links ARGS... the relays of --peer-links (peer_links.py)
#   write_peer_link_helpers PREFIX N
#                            DLOCK_TEST_PREFIX_ISOLATE_I and _HEAL scripts
#   run_command CMD...       runs CMD without the watchdog's descriptor and
#                            exits with its status

die() {
  echo "$with_name: $*" >&2
  exit 1
}

usage() {
  sed -n '2,/^set -uo/p' "$me" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
}

now_ms() { date +%s%3N; }

# A zombie counts as gone: PID 1 in a container may never reap orphans.
pid_gone() {
  local stat tasks
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  case ${stat%% *} in
  Z | X)
    # A zombie leader whose other threads are still exiting (a JVM killed
    # with SIGKILL) still holds the process's files, its listening
    # sockets among them, until the last thread is gone.
    tasks=("/proc/$1/task/"*)
    [ "${#tasks[@]}" -le 1 ]
    return
    ;;
  esac
  return 1
}

# A server's warnings and errors say why it failed; its chatter (ERE
# leaves it out) would hide them.
log_tail() {
  local log=$1 filter=${2:-}
  [ -s "$log" ] || return 0
  echo "$with_name: last lines of $log:" >&2
  if [ -n "$filter" ]; then
    { grep -E "$filter" "$log" || cat "$log"; }
  else
    cat "$log"
  fi | tail -n 15 | cut -c1-300 | sed 's/^/  /' >&2
}

need_tools() {
  local hint=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || die "$tool not found: install it ($hint)"
  done
}

unset_env_prefix() {
  local name
  while read -r name; do
    unset "$name"
  done < <(env | sed -n "s/^\\($1[A-Za-z0-9_]*\\)=.*/\\1/p")
}

# pick_ports COUNT: distinct free ports outside the kernel's ephemeral range
# (so that no outgoing connection can be holding one), chosen at random so
# that parallel invocations do not race for the same ones; fewer than COUNT
# (maybe none) if not enough were found.
pick_ports() {
  python3 - "$1" <<'PY'
import random, socket, sys
count = int(sys.argv[1])
try:
    low, high = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
except (OSError, ValueError):
    low, high = 32768, 60999
ranges = [r for r in ((10000, low - 1), (high + 1, 65535)) if r[1] - r[0] >= 1000] or [(1024, 65535)]
size = sum(b - a + 1 for a, b in ranges)
ports = []
for _ in range(2000):
    if len(ports) == count:
        break
    port = random.randrange(size)
    for a, b in ranges:
        if port <= b - a:
            port += a
            break
        port -= b - a + 1
    if port in ports:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    ports.append(port)
print(" ".join(map(str, ports)))
PY
}

kill_pidfile() {
  local pidfile=$1 pid deadline
  pid=$(cat "$pidfile" 2>/dev/null) || return 0
  [ -n "$pid" ] || return 0
  kill -CONT "$pid" 2>/dev/null
  kill -KILL "$pid" 2>/dev/null
  deadline=$(($(now_ms) + 5000))
  until pid_gone "$pid" || [ "$(now_ms)" -ge "$deadline" ]; do sleep 0.01; done
  pid_gone "$pid"
}

kill_pidfiles() {
  local f
  for f in "$dir"/*.pid; do
    [ -e "$f" ] && kill_pidfile "$f"
  done
  return 0
}

# The unix socket path below the directory must stay short (108 bytes) and
# URL-safe: an odd or long TMPDIR is passed over for /tmp.
make_private_dir() {
  local base=${TMPDIR:-/tmp}
  if ! [[ $base =~ ^[A-Za-z0-9/._-]+$ ]] || [ ${#base} -gt 60 ] || [ ! -d "$base" ]; then base=/tmp; fi
  dir=$(mktemp -d "$base/$with_name.XXXXXX") || die "mktemp -d failed in $base"
  chmod 0700 "$dir"
}

# The watchdog: should the wrapper die without running its trap (SIGKILL, a
# ctest timeout), the end of file on the fifo it holds open on descriptor 9
# wakes the watchdog to do the cleanup. Double-forked, so that killing the
# wrapper's process tree spares it.
start_cleanup() {
  declare -F stop_servers >/dev/null || stop_servers() { kill_pidfiles; }
  trap _with_cleanup EXIT
  trap 'exit 129' HUP
  trap 'exit 130' INT
  trap 'exit 143' TERM
  mkfifo "$dir/.alive" || die "mkfifo failed in $dir"
  (
    (
      exec </dev/null >/dev/null 2>&1
      read -r _ <"$dir/.alive"
      [ -d "$dir" ] || exit 0
      stop_servers
      rm -rf "$dir"
    ) &
  )
  exec 9>"$dir/.alive"
}

# shellcheck disable=SC2317 # invoked by the EXIT trap
_with_cleanup() {
  stop_servers
  rm -rf "$dir"
}

# make_test_certs DIR CA_SUBJECT SERVER_SUBJECT [CLIENT_SUBJECT]: DIR/ca.crt
# (and .key), DIR/server.crt for 127.0.0.1 and localhost, with
# CLIENT_SUBJECT DIR/client.crt (clientAuth), all signed by that CA and
# valid for 2 days, keys readable by their owner only. Dies (with openssl's
# log) if openssl fails.
make_test_certs() {
  local t=$1 ca_subject=$2 server_subject=$3 client_subject=${4:-}
  local newkey=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  mkdir -m 0700 "$t" || die "could not make $t"
  {
    openssl req -x509 "${newkey[@]}" -keyout "$t/ca.key" -out "$t/ca.crt" -days 2 -subj "$ca_subject" &&
      _sign_cert "$t" server "$server_subject" serverAuth,clientAuth "subjectAltName=IP:127.0.0.1,DNS:localhost" &&
      if [ -n "$client_subject" ]; then _sign_cert "$t" client "$client_subject" clientAuth; fi
  } </dev/null >"$t.log" 2>&1 9>&- || {
    log_tail "$t.log"
    die "openssl could not make the test certificates"
  }
  chmod 0600 "$t"/*.key
}

# _sign_cert DIR NAME SUBJECT EXTENDED_KEY_USAGE [EXTENSION...]
_sign_cert() {
  local t=$1 name=$2 subject=$3 usage=$4 newkey=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  shift 4
  openssl req -new "${newkey[@]}" -keyout "$t/$name.key" -out "$t/$name.csr" -subj "$subject" &&
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=$usage" "$@" >"$t/$name.ext" &&
    openssl x509 -req -in "$t/$name.csr" -CA "$t/ca.crt" -CAkey "$t/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
      -days 2 -extfile "$t/$name.ext" -out "$t/$name.crt"
}

write_helper() {
  local file=$1
  shift
  {
    printf '#!/bin/bash\nexec bash %q' "$me"
    printf ' %q' "$@"
    printf ' "$@"\n'
  } >"$file"
  chmod 0700 "$file"
}

# start_peer_links ARGS...: starts scripts/peer_links.py serve with ARGS
# (--link and --pidfile options), controlled through $dir/links.sock, and
# waits until it listens. Returns 1 if a relay port was taken meanwhile (it
# is stopped then); dies if it fails otherwise.
start_peer_links() {
  local links_py pid deadline
  links_py=$(dirname "$me")/peer_links.py
  rm -f "$dir/links.sock"
  python3 "$links_py" serve --control "$dir/links.sock" "$@" </dev/null >>"$dir/links.log" 2>&1 9>&- &
  pid=$!
  disown "$pid" 2>/dev/null
  echo "$pid" >"$dir/links.pid"
  deadline=$(($(now_ms) + 10000))
  until [ -S "$dir/links.sock" ]; do
    if pid_gone "$pid" || [ "$(now_ms)" -ge "$deadline" ]; then
      kill_pidfile "$dir/links.pid"
      grep -q 'address already in use' "$dir/links.log" && return 1
      tail -n 5 "$dir/links.log" >&2
      die "$links_py did not start"
    fi
    sleep 0.02
  done
}

# write_peer_link_helpers PREFIX N: exports DLOCK_TEST_PREFIX_ISOLATE_I
# (I = 1..N: cut member I off from every peer) and DLOCK_TEST_PREFIX_HEAL
# (end every cut), scripts in $dir.
write_peer_link_helpers() {
  local prefix=$1 n=$2 i links_py
  links_py=$(dirname "$me")/peer_links.py
  for ((i = 1; i <= n; i++)); do
    printf '#!/bin/bash\nexec python3 %q isolate %q %d\n' "$links_py" "$dir/links.sock" "$i" >"$dir/isolate-$i"
    chmod 0700 "$dir/isolate-$i"
    export "DLOCK_TEST_${prefix}_ISOLATE_$i=$dir/isolate-$i"
  done
  printf '#!/bin/bash\nexec python3 %q heal %q\n' "$links_py" "$dir/links.sock" >"$dir/heal"
  chmod 0700 "$dir/heal"
  export "DLOCK_TEST_${prefix}_HEAL=$dir/heal"
}

run_command() {
  "$@" 9>&-
  exit $?
}
