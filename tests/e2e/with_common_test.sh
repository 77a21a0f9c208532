#!/usr/bin/env bash
# The test servers' wrappers (scripts/lib/with-common.sh) wait with pid_gone
# for a killed server to go before they start it again on its ports. A
# process whose main thread has exited while another thread still runs
# shows as a zombie (state Z), yet keeps its files, its listening sockets
# among them, until its last thread ends (a JVM killed with SIGKILL): it is
# not gone until then. The process here is python3: its main thread ends
# with the exit system call (not exit_group, which would end every thread),
# a second thread keeps a listening socket open until told to end.
SCENARIO="test servers: a zombie is gone only once its last thread has ended"
. "$(dirname "$0")/lib.sh"

with_common=$(cd "$(dirname "$0")/../../scripts/lib" && pwd)/with-common.sh
[ -f "$with_common" ] || fail "no $with_common"

# pid_gone PID: with-common.sh's, in a shell of its own (it has a now_ms of
# its own, and die, which lib.sh must keep out of).
pid_gone() { bash -c '. "$1" && pid_gone "$2"' pid_gone "$with_common" "$1"; }
task_count() { find "/proc/$1/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
accepts() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

case $(uname -m) in
x86_64) sys_exit=60 ;;
aarch64) sys_exit=93 ;;
*) fail "no SYS_exit number known for $(uname -m)" ;;
esac

mkfifo "$tmpdir/go"
cat >"$tmpdir/leader_exits.py" <<'PY'
import ctypes, os, socket, sys, threading
port_file, go, sys_exit = sys.argv[1], sys.argv[2], int(sys.argv[3])
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(8)
def hold():
    with open(go) as f:
        f.read()
    os._exit(0)
threading.Thread(target=hold).start()
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % listener.getsockname()[1])
os.rename(port_file + ".tmp", port_file)
# Only this thread ends; the listener stays open in the other one.
ctypes.CDLL(None, use_errno=True).syscall(sys_exit, 0)
PY
/usr/bin/python3 "$tmpdir/leader_exits.py" "$tmpdir/port" "$tmpdir/go" "$sys_exit" </dev/null 2>"$tmpdir/py.err" &
pid=$!
track "$pid"
wait_until test -s "$tmpdir/port" || fail "the python3 process wrote no port; stderr: $(cat "$tmpdir/py.err")"
port=$(cat "$tmpdir/port")
wait_until test "$(proc_state "$pid")" = Z ||
  fail "the main thread of $pid did not exit: state '$(proc_state "$pid")'; stderr: $(cat "$tmpdir/py.err")"
[ "$(task_count "$pid")" = 2 ] || fail "$pid has $(task_count "$pid") threads, expected the zombie leader and its other thread"
accepts "$port" || fail "port $port does not take connections while the other thread of $pid holds it"

if pid_gone "$pid"; then
  fail "pid_gone takes $pid for gone while a thread of it still runs and listens on port $port"
fi

echo >"$tmpdir/go"
wait_until pid_gone "$pid" ||
  fail "pid_gone does not see $pid gone once its last thread ended: state '$(proc_state "$pid")', $(task_count "$pid") threads"
! accepts "$port" || fail "port $port still takes connections once $pid is gone"
wait "$pid"
pass
