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

# The queue of a semaphore's waiters (checks/semaphore_queue.sh): the first
# waiter holds NAME.queue and waits in the kernel on one slot file, the
# others wait on NAME.queue; /proc/locks shows both kinds of wait ("->").

# _file_blocked FILE: the blocked flock requests on FILE.
_file_blocked() {
  local inode
  inode=$(stat -c %i "$1" 2>/dev/null) || {
    echo 0
    return
  }
  awk -v i=":$inode" '$2 == "->" && substr($7, length($7) - length(i) + 1) == i {n++} END {print n + 0}' /proc/locks
}
file_sem_waiting() {
  local k front=0
  for ((k = 0; k < $2; k++)); do front=$((front + $(_file_blocked "$LOCKDIR/dlock/$1.slot$k"))); done
  echo "$front $(_file_blocked "$LOCKDIR/dlock/$1.queue")"
}
file_sem_slot_waited() { [ "$(_file_blocked "$LOCKDIR/dlock/$1.slot$2")" != 0 ]; }
file_sem_front_pid() {
  local inode
  inode=$(stat -c %i "$LOCKDIR/dlock/$1.queue") || return
  awk -v f=":$inode" '$2 != "->" && substr($6, length($6) - length(f) + 1) == f {print $5}' /proc/locks
}
