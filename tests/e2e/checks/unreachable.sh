# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The unreachable-server checks (lib.sh sources this file), which the server
# backends' *_unreachable tests share: an unreachable server
# is 69 with one line, never a hang; a malformed URL is 78. Jobs touch
# $tmpdir/ran, which must not appear.

# free_port: a TCP port on 127.0.0.1 that nothing listens on (bound once by
# the kernel's choice, then closed).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_silent_listener: a listener on 127.0.0.1 that accepts connections and
# never writes a byte; sets SILENT_PORT.
# shellcheck disable=SC2034 # SILENT_PORT is for the caller
start_silent_listener() {
  rm -f "$tmpdir/silent.port"
  python3 - "$tmpdir/silent.port" <<'PY' &
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
while True:
    conn, _ = s.accept()
    held.append(conn)  # kept open, never answered
PY
  track $!
  wait_until test -s "$tmpdir/silent.port" || fail "the silent listener did not start"
  SILENT_PORT=$(cat "$tmpdir/silent.port")
}

# check_unavailable WHAT LIMIT_MS CMD...: CMD exits 69 with one line within
# LIMIT_MS and never runs the job.
check_unavailable() {
  local what=$1 limit=$2 started elapsed
  shift 2
  rm -f "$tmpdir/ran"
  started=$(now_ms)
  capture "$@"
  elapsed=$(($(now_ms) - started))
  [ "$rc" = 69 ] || fail "$what: exit $rc, expected 69; stderr: $err"
  assert_one_line_message "$what" "$err"
  [ ! -e "$tmpdir/ran" ] || fail "$what: the job ran"
  [ "$elapsed" -lt "$limit" ] || fail "$what: took ${elapsed} ms (limit $limit ms)"
  echo "$what: 69 after ${elapsed} ms"
}

# check_ping_unreachable WHAT LIMIT_MS CMD...: CMD (a ping) exits 69 within
# LIMIT_MS and reports the node unreachable on stdout.
check_ping_unreachable() {
  local what=$1 limit=$2 started elapsed
  shift 2
  started=$(now_ms)
  capture "$@"
  elapsed=$(($(now_ms) - started))
  [ "$rc" = 69 ] || fail "$what: exit $rc, expected 69; stdout: $out; stderr: $err"
  printf '%s\n' "$out" | grep -qi unreachable || fail "$what: ping does not report the node unreachable: $out"
  [ "$elapsed" -lt "$limit" ] || fail "$what: took ${elapsed} ms (limit $limit ms)"
}

# check_unavailable_commands WHERE LIMIT_MS URL [OPTIONS...]: with URL, where
# no server answers (WHERE says why, e.g. "nothing listening"), and global
# OPTIONS, run, run --wait 10s, acquire, status, list and release --force
# exit 69 with one line and ping reports the node unreachable, each within
# LIMIT_MS.
check_unavailable_commands() {
  local where=$1 limit=$2 url=$3 opts
  shift 3
  opts=${*:+ $*}
  local dl=("$DLOCK_BIN" -b "$url" "$@")
  check_unavailable "run$opts, $where" "$limit" "${dl[@]}" run u -- touch "$tmpdir/ran"
  check_unavailable "run --wait 10s$opts, $where" "$limit" "${dl[@]}" run u --wait 10s -- touch "$tmpdir/ran"
  check_unavailable "acquire$opts, $where" "$limit" "${dl[@]}" acquire u
  check_unavailable "status$opts, $where" "$limit" "${dl[@]}" status u
  check_unavailable "list$opts, $where" "$limit" "${dl[@]}" list
  # With --json a script reading stdout gets an error document, not nothing.
  local command
  for command in status list; do
    # shellcheck disable=SC2046 # status takes the name u
    check_unavailable "$command --json$opts, $where" "$limit" "${dl[@]}" $command $([ $command = status ] && echo u) --json
    [ "$(printf '%s' "$out" | json 'd["error"]["code"]')" = 69 ] && [ -n "$(printf '%s' "$out" | json 'd["error"]["message"]')" ] ||
      fail "$command --json$opts, $where: stdout is not an error document with code 69: '$out'"
  done
  check_unavailable "release --force$opts, $where" "$limit" "${dl[@]}" release u --force
  check_ping_unreachable "ping$opts, $where" "$limit" "${dl[@]}" ping
}

# check_silent_server URL LIMIT_MS DEFAULT_LIMIT_MS: with URL, a server that
# accepts connections and never answers (start_silent_listener), run,
# acquire, status (--connect-timeout before and after the command) and ping
# with --connect-timeout 500ms fail within LIMIT_MS, a run without it (the
# 2 s default) within DEFAULT_LIMIT_MS: 69 with one line, ping reporting the
# node unreachable.
check_silent_server() {
  local url=$1 limit=$2 default_limit=$3 where="silent server"
  check_unavailable "run --connect-timeout 500ms, $where" "$limit" \
    "$DLOCK_BIN" -b "$url" --connect-timeout 500ms run u -- touch "$tmpdir/ran"
  check_unavailable "acquire --connect-timeout 500ms, $where" "$limit" \
    "$DLOCK_BIN" -b "$url" --connect-timeout 500ms acquire u
  check_unavailable "status --connect-timeout 500ms, $where" "$limit" \
    "$DLOCK_BIN" -b "$url" --connect-timeout 500ms status u
  check_unavailable "status u --connect-timeout 500ms (the option after the command), $where" "$limit" \
    "$DLOCK_BIN" -b "$url" status u --connect-timeout 500ms
  check_ping_unreachable "ping --connect-timeout 500ms, $where" "$limit" \
    "$DLOCK_BIN" -b "$url" --connect-timeout 500ms ping
  check_unavailable "run with the default connect timeout, $where" "$default_limit" \
    "$DLOCK_BIN" -b "$url" run u -- touch "$tmpdir/ran"
}

# check_malformed_urls URL...: with each URL, run exits 78 (a configuration
# error, not "unavailable") with one line and never runs the job.
check_malformed_urls() {
  local url
  for url in "$@"; do
    rm -f "$tmpdir/ran"
    capture "$DLOCK_BIN" -b "$url" run u -- touch "$tmpdir/ran"
    [ "$rc" = 78 ] || fail "the malformed URL $url: exit $rc, expected 78; stderr: $err"
    assert_one_line_message "the malformed URL $url" "$err"
    [ ! -e "$tmpdir/ran" ] || fail "the malformed URL $url: the job ran"
  done
}
