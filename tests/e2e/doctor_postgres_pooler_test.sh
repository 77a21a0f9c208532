#!/usr/bin/env bash
# dlock doctor through Debian's pgbouncer in transaction mode, which hands
# consecutive statements of one client to different server sessions
# (server_round_robin over two warm server connections): postgres.pooler
# unsafe, exit 78; ping warns too. pgbouncer refuses the startup options of
# dlock's lock sessions, or, told to ignore them
# (ignore_startup_parameters = options, so that ping gets through), drops
# them: postgres.session-options unsafe, in session mode too, where
# postgres.pooler is ok. Run under scripts/with-postgres; pgbouncer (scripts/install-deps) is
# run as nobody, since it refuses to run as root.
SCENARIO="doctor: PostgreSQL behind a transaction-mode pooler"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/checks/unreachable.sh"
use_postgres
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || fail "pgbouncer is not installed (scripts/install-deps)"
pgbouncer_bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
[ "$(id -u)" = 0 ] || fail "this test starts pgbouncer as nobody: run it as root"

chmod 0711 "$tmpdir"
pgb=$tmpdir/pgbouncer
mkdir -m 0700 "$pgb"
chown nobody "$pgb"

# start_pgbouncer MODE [IGNORED]: pgbouncer in pool_mode MODE on a free
# port, ignoring the startup parameters IGNORED (default: options), ready
# once it answers; sets PGB_PORT, PGB_PID.
start_pgbouncer() {
  PGB_PORT=$(free_port)
  cat >"$pgb/pgbouncer.ini" <<INI
[databases]
dlock = host=127.0.0.1 port=$DLOCK_TEST_PG_PORT dbname=dlock user=dlock password=$DLOCK_TEST_PG_PASSWORD
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = trust
auth_file = $pgb/userlist.txt
pool_mode = $1
server_round_robin = 1
ignore_startup_parameters = ${2-options}
default_pool_size = 4
logfile = $pgb/pgbouncer.log
pidfile = $pgb/pgbouncer.pid
INI
  echo '"dlock" "unused"' >"$pgb/userlist.txt"
  chown nobody "$pgb/pgbouncer.ini" "$pgb/userlist.txt"
  setpriv --reuid=nobody --regid=nogroup --clear-groups "$pgbouncer_bin" -q "$pgb/pgbouncer.ini" </dev/null >>"$tmpdir/pgbouncer.out" 2>&1 &
  PGB_PID=$!
  track "$PGB_PID"
  _pgb_ready() { PGCONNECT_TIMEOUT=2 psql -X -A -t -q "postgresql://dlock@127.0.0.1:$PGB_PORT/dlock" -c 'SELECT 1' >/dev/null 2>&1; }
  wait_until _pgb_ready || fail "pgbouncer did not answer on port $PGB_PORT: $(cat "$tmpdir/pgbouncer.out" "$pgb/pgbouncer.log" 2>/dev/null | tail -5)"
  # Two server connections, so that round robin hands consecutive
  # transactions to different ones.
  local warm=()
  for _ in 1 2; do
    PGCONNECT_TIMEOUT=2 psql -X -A -t -q "postgresql://dlock@127.0.0.1:$PGB_PORT/dlock" -c 'SELECT pg_sleep(0.3)' >/dev/null 2>&1 &
    warm+=($!)
  done
  wait "${warm[@]}"
}

stop_pgbouncer() {
  kill -KILL "$PGB_PID" 2>/dev/null
  wait_until is_gone "$PGB_PID" || fail "pgbouncer (pid $PGB_PID) did not die"
}

start_pgbouncer transaction
pooled="postgresql://dlock@127.0.0.1:$PGB_PORT/dlock"
DL=("$DLOCK_BIN" -b "$pooled")
doctor
expect_rc 78 "behind a transaction-mode pooler"
expect_check postgres.pooler unsafe "different server sessions"
expect_text_line postgres.pooler unsafe
capture "${DL[@]}" ping
printf '%s\n' "$out" | grep -q 'warning: consecutive statements ran in different server sessions' ||
  fail "ping through a transaction-mode pooler does not warn: $out; stderr: $err"
stop_pgbouncer

start_pgbouncer session
DL=("$DLOCK_BIN" -b "postgresql://dlock@127.0.0.1:$PGB_PORT/dlock")
doctor
expect_rc 78 "behind a session-mode pooler that drops dlock's session options"
expect_check postgres.pooler ok
expect_check postgres.session-options unsafe "do not reach the server"
stop_pgbouncer

start_pgbouncer session ""
DL=("$DLOCK_BIN" -b "postgresql://dlock@127.0.0.1:$PGB_PORT/dlock")
doctor
expect_rc 78 "behind a pooler that refuses dlock's session options"
expect_check postgres.session-options unsafe "unsupported startup parameter"
stop_pgbouncer

# PostgreSQL itself: the options arrive.
use_postgres
doctor
expect_check postgres.session-options ok "reach the server"
pass
