#!/usr/bin/env bash
# Ctrl-Z under a real pseudo-terminal, as an interactive user meets it: an
# interactive bash (job control on) runs `dlock run NAME -- COMMAND`, whose
# job has the terminal. Ctrl-Z stops the job, and dlock stops with it (as
# sudo does), so the shell says "Stopped" and gives its prompt back; `fg`
# continues both and gives the job the terminal again (Ctrl-C then reaches
# the job: dlock exits 130); `bg` continues both with the job in the
# background. While stopped, the lock stays held (file backend).
SCENARIO="Ctrl-Z stops dlock with its job; fg and bg continue both"
. "$(dirname "$0")/lib.sh"

TMPDIR=$tmpdir BACKEND=$BACKEND DLOCK_BIN=$DLOCK_BIN python3 - <<'PY' || fail "see above"
import os, pty, re, select, sys, time

tmp, url, dlock = os.environ["TMPDIR"], os.environ["BACKEND"], os.environ["DLOCK_BIN"]
pidfile = os.path.join(tmp, "jc.pid")


def die(why):
    print("job control: " + why + "\n--- terminal output ---\n" + out.decode(errors="replace")[-3000:])
    sys.exit(1)


pid, fd = pty.fork()
if pid == 0:
    os.environ.update(PS1="PROMPT> ", TERM="dumb", HISTFILE="/dev/null")
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
out = b""


def expect(pattern, timeout=10):
    global out
    start, deadline = len(out), time.monotonic() + timeout
    while not re.search(pattern.encode(), out[start:], re.S):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            die("no %r within %d s" % (pattern, timeout))
        try:
            out += os.read(fd, 65536)
        except OSError:
            die("the shell ended")


def send(text):
    os.write(fd, text.encode())


def stat(p):
    """(state, pgrp, tpgid) of process p: tpgid is the terminal's foreground group."""
    with open("/proc/%d/stat" % p) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[2]), int(fields[5])


def wait_state(p, states, what, timeout=5):
    deadline = time.monotonic() + timeout
    while stat(p)[0] not in states:
        if time.monotonic() > deadline:
            die("%s: process %d is in state %s, expected one of %s" % (what, p, stat(p)[0], states))
        time.sleep(0.01)


def start_job():
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    send("%s -b %s run jc -- sh -c 'echo $$ >%s.tmp; mv %s.tmp %s; exec sleep 60'\n"
         % (dlock, url, pidfile, pidfile, pidfile))
    deadline = time.monotonic() + 10
    while not os.path.exists(pidfile):
        if time.monotonic() > deadline:
            die("the job did not start")
        time.sleep(0.01)
    job = int(open(pidfile).read())
    dl = int(open("/proc/%d/stat" % job).read().rsplit(")", 1)[1].split()[1])  # its parent: dlock
    wait_state(job, "S", "the job")
    state, group, foreground = stat(job)
    if foreground != group:
        die("the job does not have the terminal (its group %d, the terminal's %d)" % (group, foreground))
    return job, dl


expect("PROMPT> ")
# Ctrl-Z, then fg, then Ctrl-C.
job, dl = start_job()
send("\x1a")
expect(r"Stopped.*\r?\n.*PROMPT> ")
wait_state(job, "T", "the job after Ctrl-Z")
wait_state(dl, "T", "dlock after Ctrl-Z")
print("Ctrl-Z: the shell says Stopped; job and dlock stopped")
send("%s -b %s status jc\n" % (dlock, url))
expect(r"held.*PROMPT> ")
send("fg\n")
wait_state(job, "S", "the job after fg")
wait_state(dl, "S", "dlock after fg")
deadline = time.monotonic() + 5
while stat(job)[2] != stat(job)[1]:
    if time.monotonic() > deadline:
        die("after fg the job does not have the terminal again")
    time.sleep(0.01)
print("fg: job and dlock running, the job has the terminal")
send("\x03")
expect("PROMPT> ")
send("echo rc=$?\n")
expect(r"rc=130")
print("Ctrl-C after fg: dlock exited 130")

# Ctrl-Z, then bg: both run, in the background.
job, dl = start_job()
send("\x1a")
expect(r"Stopped.*\r?\n.*PROMPT> ")
wait_state(job, "T", "the job after Ctrl-Z")
send("bg\n")
expect("PROMPT> ")
wait_state(job, "S", "the job after bg")
wait_state(dl, "S", "dlock after bg")
print("bg: job and dlock running in the background")
send("kill %1; wait %1; echo rc=$?\n")
expect(r"rc=143")
print("kill %1: dlock stopped its job and exited 143")
send("%s -b %s status jc; echo rc=$?\n" % (dlock, url))
expect(r"rc=3")
send("exit\n")
PY
pass
