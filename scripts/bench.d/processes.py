"""The processes scripts/bench starts: each in a process group of its own,
stdin and stdout on /dev/null, stderr to a log, reaped as they end and, at
the end, stopped with their groups (SIGTERM, then SIGKILL)."""

import os
import signal
import time


class BenchError(Exception):
    pass


class Timeout(BenchError):
    pass


class Deadline:
    """Bounds a block of blocking calls (waitpid and the like) with SIGALRM."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        def expired(signo, frame):
            raise Timeout(f"a measurement took longer than {self.seconds:g} s")

        self.previous = signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous)
        return False


class Processes:
    def __init__(self, env, stderr_log):
        self.env = env
        self.stderr_log = stderr_log
        self.pgroups = set()
        self.fds = []
        self.null_fd = os.open(os.devnull, os.O_RDWR)
        self.fds.append(self.null_fd)
        self.log_fd = self.open_log(stderr_log)

    def open_log(self, path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.fds.append(fd)
        return fd

    def spawn(self, argv, log_fd=None, env=None):
        """Start argv in its own process group, stdin and stdout on /dev/null
        (with log_fd: stdout and stderr there), stderr to a log, in env (by
        default the bench's); returns the pid. The group is what stop_all kills."""
        pid = os.posix_spawn(
            argv[0],
            argv,
            self.env if env is None else env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, self.null_fd, 0),
                (os.POSIX_SPAWN_DUP2, log_fd if log_fd is not None else self.null_fd, 1),
                (os.POSIX_SPAWN_DUP2, log_fd if log_fd is not None else self.log_fd, 2),
            ],
            setpgroup=0,
        )
        self.pgroups.add(pid)
        return pid

    def wait(self, pid, what):
        """Waits for pid (the caller bounds it with a deadline) and insists on exit 0."""
        _, status = os.waitpid(pid, 0)
        self.pgroups.discard(pid)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise BenchError(f"{what} exited with {code}{self.last_stderr()}")

    def poll_exit(self, pid):
        """The exit status if pid has ended (and is now reaped), else None."""
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if not done:
            return None
        self.pgroups.discard(pid)
        return os.waitstatus_to_exitcode(status)

    def last_stderr(self):
        try:
            with open(self.stderr_log, errors="replace") as f:
                tail = f.read().strip().splitlines()[-5:]
        except OSError:
            return ""
        return (": " + " | ".join(tail)) if tail else ""

    def stop_all(self):
        """Stops every process group started (servers included), also a child
        spawned just as a deadline fired, and closes the log descriptors."""
        self.pgroups.update(self.live_children())
        for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 1.0)):
            for pgid in list(self.pgroups):
                try:
                    os.killpg(pgid, sig)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + grace
            while self.pgroups and time.monotonic() < end:
                for pid in list(self.pgroups):
                    self.poll_exit(pid)
                if self.pgroups:
                    time.sleep(0.01)
            if not self.pgroups:
                break
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass

    @staticmethod
    def live_children():
        pids = set()
        try:
            for tid in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{tid}/children") as f:
                    pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
        return pids
