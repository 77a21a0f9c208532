#!/usr/bin/env bash
# dlock doctor on a hot standby (pg_basebackup -R of the with-postgres
# server, started on a port of its own): postgres.standby unsafe, exit 78;
# the primary is ok. Run under scripts/with-postgres, as root (the standby
# runs as the user the primary runs as, postgres).
SCENARIO="doctor: a PostgreSQL hot standby"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/checks/unreachable.sh"
use_postgres
[ "$(id -u)" = 0 ] || fail "this test starts a standby as postgres: run it as root"
bindir=$(cat "$DLOCK_TEST_PG_DIR/bindir")
socket_dir=$DLOCK_TEST_PG_DIR

# Replication over the primary's socket, for its superuser.
echo "local replication postgres trust" >>"$DLOCK_TEST_PG_DATA/pg_hba.conf"
pg_sql "SELECT pg_reload_conf()" >/dev/null

chmod 0711 "$tmpdir"
standby=$tmpdir/standby
mkdir -m 0700 "$standby"
chown postgres: "$standby"
setpriv --reuid=postgres --regid=postgres --init-groups -- \
  "$bindir/pg_basebackup" -h "$socket_dir" -p "$DLOCK_TEST_PG_PORT" -U postgres -D "$standby/data" -R -X stream -c fast \
  --no-sync >"$tmpdir/basebackup.log" 2>&1 || fail "pg_basebackup failed: $(tail -5 "$tmpdir/basebackup.log")"
port=$(free_port)
setpriv --reuid=postgres --regid=postgres --init-groups -- "$bindir/postgres" -D "$standby/data" -p "$port" \
  -c listen_addresses=127.0.0.1 -c unix_socket_directories="$standby" -c hot_standby=on \
  </dev/null >"$tmpdir/standby.log" 2>&1 &
standby_pid=$!
track "$standby_pid"
_standby_ready() { "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; }
wait_until -t 20 _standby_ready || fail "the standby did not start: $(tail -5 "$tmpdir/standby.log")"

use_postgres "postgresql://dlock@127.0.0.1:$port/dlock"
doctor
expect_rc 78 "a hot standby"
expect_check postgres.standby unsafe "hot standby"
expect_text_line postgres.standby unsafe

use_postgres
doctor
expect_check postgres.standby ok "primary"
kill -INT "$standby_pid"
wait_until -t 10 is_gone "$standby_pid" || fail "the standby did not stop"
pass
