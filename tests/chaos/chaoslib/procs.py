"""Process helpers for the chaos suite."""

import ctypes
import os
import sys


def log(msg):
    sys.stderr.write("chaos: %s\n" % msg)
    sys.stderr.flush()


class Reaper:
    """We are a child subreaper: orphaned dlock and job processes come to us
    (PID 1 here reaps nothing), and we reap everything ourselves."""

    def __init__(self):
        PR_SET_CHILD_SUBREAPER = 36
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        self.status = {}

    def reap(self):
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.status[pid] = st

    def exited(self, pid):
        self.reap()
        return pid in self.status


def stat_fields(pid):
    """/proc/PID/stat from field 3 (state) on, or None if gone: the command
    name before it may hold spaces and parentheses."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
        return s[s.rindex(")") + 2:].split()
    except (OSError, ValueError):
        return None


def _field(pid, index, convert):
    fields = stat_fields(pid)
    try:
        return convert(fields[index]) if fields else None
    except (ValueError, IndexError):
        return None


def proc_state(pid):
    """'R', 'S', 'T', 'Z', ... or None if gone. A zombie counts as gone."""
    return _field(pid, 0, str)


def proc_pgid(pid):
    return _field(pid, 2, int)


def alive(pid):
    st = proc_state(pid)
    return st is not None and st not in "ZX"


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def job_children(dlock_pid):
    """Children of a dlock process but its guard, which `dlock run` starts
    before it takes the lock on lease backends. The guard is told apart by
    its exit signal, 0 from birth (field 38 of /proc/PID/stat): its name
    (dlock-guard) is set a moment after it starts."""
    return [pid for pid in children(dlock_pid) if _field(pid, 35, int) not in (None, 0)]


def environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        if b"=" in item:
            k, v = item.split(b"=", 1)
            env[k.decode(errors="replace")] = v.decode(errors="replace")
    return env


def marked(marker):
    """Live (non-zombie) processes whose environment carries CHAOS_CELL=marker."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            pid = int(d)
            if environ(pid).get("CHAOS_CELL") == marker and alive(pid):
                out.append(pid)
    return out


def killpg(pgid, sig):
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False
