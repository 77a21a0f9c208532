#!/usr/bin/env bash
# An acquire keeper cannot be silenced through its socket. Any local user can
# connect to an abstract UNIX socket: a flood of silent connections, from the
# keeper's own user and from another one, must not delay `renew` past its
# normal time, and a connection from another user (here nobody, through
# setpriv) is refused before the keeper reads a byte of it: its renew and
# release exit 77 and the lock stays held, even with the right token.
SCENARIO="a flood of silent connections does not silence the acquire keeper; other users are refused"
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || fail "this test needs root (it runs clients as nobody with setpriv)"
command -v setpriv >/dev/null || fail "setpriv (util-linux) is missing"
# nobody must be able to run the binary wherever the build tree is: a copy
# in a directory it may enter (the scratch directory only lets it pass).
chmod 0711 "$tmpdir"
mkdir -m 0755 "$tmpdir/bin"
cp "$DLOCK_BIN" "$tmpdir/bin/dlock"
nobody_dlock=$tmpdir/bin/dlock
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups env -i PATH=/usr/bin:/bin HOME=/nonexistent)

acquire_bg x --ttl 30s
[ "$(cat "$tmpdir/acq.rc")" = 0 ] || fail "acquire x exited $(cat "$tmpdir/acq.rc"): $(cat "$tmpdir/acq.err")"
socket_name="dlock-keeper-${token%%-*}"

# flood [PREFIX...]: in the background, open up to 300 connections to the
# keeper (as PREFIX, e.g. another user) and keep them open and silent;
# "$tmpdir/flood.N" gets their number once they are open.
flood_count=0
flood() {
  flood_count=$((flood_count + 1))
  "$@" python3 -c '
import socket, sys, time
name = sys.argv[1]
held = []
deadline = time.monotonic() + 5
while len(held) < 300 and time.monotonic() < deadline:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect("\0" + name)
        held.append(s)
    except BlockingIOError:  # the backlog is full: the keeper is busy
        s.close()
        time.sleep(0.001)
print(len(held), flush=True)
time.sleep(60)
' "$socket_name" >"$tmpdir/flood.$flood_count" &
  track $!
  wait_until -t 10 test -s "$tmpdir/flood.$flood_count" || fail "the flood of connections did not start"
  echo "flood $flood_count: $(cat "$tmpdir/flood.$flood_count") silent connections open"
}

# timed_renew WHAT: renew from root must answer as fast as ever.
timed_renew() {
  local started elapsed
  started=$(now_ms)
  capture "${DL[@]}" renew x "$token" --ttl 30s
  elapsed=$(($(now_ms) - started))
  echo "renew $1 took ${elapsed} ms"
  [ "$rc" = 0 ] || fail "renew $1 exited $rc, expected 0; stderr: $err"
  [ "$elapsed" -lt 1500 ] || fail "renew $1 took ${elapsed} ms: silent connections delayed it"
}

flood
timed_renew "beside silent connections of the keeper's own user"
flood "${as_nobody[@]}"
timed_renew "beside silent connections of another user"

# Another user is answered "refused" without sending anything: the keeper
# did not wait to read from it.
capture "${as_nobody[@]}" python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(0.5)
s.connect("\0" + sys.argv[1])
print(s.recv(4096).decode().strip())
' "$socket_name"
[ "$rc" = 0 ] || fail "a silent connection from nobody got no answer within 0.5 s (rc $rc): $err"
case $out in *refused*) ;; *) fail "a silent connection from nobody was answered '$out', expected a refusal" ;; esac

# Even with the token, nobody may neither renew nor release root's lock.
capture "${as_nobody[@]}" "$nobody_dlock" -b "$BACKEND" renew x "$token" --ttl 30s
[ "$rc" = 77 ] || fail "renew from nobody exited $rc, expected 77 (refused); stderr: $err"
assert_one_line_message "renew from nobody" "$err"
capture "${as_nobody[@]}" "$nobody_dlock" -b "$BACKEND" release x "$token"
[ "$rc" = 77 ] || fail "release from nobody exited $rc, expected 77 (refused); stderr: $err"
is_held x || fail "lock x is no longer held after a release from nobody"
is_alive "$keeper" || fail "the keeper ended after the flood"

capture "${DL[@]}" release x "$token"
[ "$rc" = 0 ] || fail "release x TOKEN exited $rc; stderr: $err"
wait_until -t 2 is_gone "$keeper" || fail "the keeper $keeper outlived the release by 2 s"

# dlock believes only a keeper of its own user or of root, root's dlock too:
# anyone can bind the abstract name of a keeper that has gone.
mkdir -m 0700 "$tmpdir/nobody"
chown nobody:nogroup "$tmpdir/nobody"
nobody_backend=file://$tmpdir/nobody/locks
nobody_token=$("${as_nobody[@]}" "$nobody_dlock" -b "$nobody_backend" acquire n --ttl 30s </dev/null) ||
  fail "acquire as nobody failed"
nobody_keeper=$("${as_nobody[@]}" "$nobody_dlock" -b "$nobody_backend" status n --json | json 'd["holder"]["pid"]')
[[ $nobody_keeper =~ ^[0-9]+$ ]] || fail "status as nobody shows no holder pid"
track "$nobody_keeper"
capture "${DL[@]}" -b "$nobody_backend" renew n "$nobody_token"
[ "$rc" = 77 ] || fail "root's renew of nobody's keeper exited $rc, expected 77; stderr: $err"
assert_one_line_message "root's renew of nobody's keeper" "$err"
capture "${as_nobody[@]}" "$nobody_dlock" -b "$nobody_backend" release n "$nobody_token"
[ "$rc" = 0 ] || fail "nobody's release of its own lock exited $rc; stderr: $err"
pass
