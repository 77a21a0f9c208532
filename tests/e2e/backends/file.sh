# shellcheck shell=bash disable=SC2034,SC2154 # lib.sh sets and uses what these name
# The file adapter (lib.sh sources it): the test's private lock directory,
# where every test starts (BACKEND=file://$LOCKDIR).
#
#   use_file                   switch the test back to that directory
#   file_server_pids, file_server_kill, file_server_start,
#   file_server_restart        fail the test: the file backend has no server

use_file() {
  BACKEND=file://$LOCKDIR
  DL=("$DLOCK_BIN" -b "$BACKEND")
  export DLOCK_BACKEND=$BACKEND
  SERVER_KIND="file"
}

file_server_pids() { fail "the file backend has no server"; }
file_server_kill() { file_server_pids; }
file_server_start() { file_server_pids; }
file_server_restart() { file_server_pids; }
