"""Backends: their URLs, the wrapper that serves each topology, and
ServerControl, which pauses and restarts server members inside it."""

import os
import random
import signal
import subprocess
import tempfile
import time

from .procs import kill, killpg, proc_pgid

BACKENDS = ["file", "redis", "redlock", "zk", "postgres", "etcd"]

# topology -> the wrapper command line (before "--" CMD), per backend.
# "single": one server (the client-side scenarios), "cluster": three members
# for zk and etcd (the server-fault scenarios); redlock is always 3 nodes.
WRAPPERS = {
    ("redis", "single"): ["scripts/with-redis"],
    ("redlock", "single"): ["scripts/with-redis", "--nodes", "3"],
    ("zk", "single"): ["scripts/with-zookeeper"],
    ("zk", "cluster"): ["scripts/with-zookeeper", "--ensemble", "3"],
    ("postgres", "single"): ["scripts/with-postgres"],
    ("etcd", "single"): ["scripts/with-etcd"],
    ("etcd", "cluster"): ["scripts/with-etcd", "--cluster", "3"],
    # the members' peer links through scripts/peer_links.py, which can cut one
    # off; a zk follower cut off from its leader serves its clients for
    # syncLimit, here 5 s (ZooKeeper's default is 10 s), longer than the lease
    ("zk", "cluster-links"): ["scripts/with-zookeeper", "--ensemble", "3", "--peer-links",
                              "--sync-limit", "5000"],
    ("etcd", "cluster-links"): ["scripts/with-etcd", "--cluster", "3", "--peer-links"],
}


def wrapper(root, backend, topology):
    """The argv prefix (ending in --) that serves BACKEND in TOPOLOGY, or []
    for the file backend."""
    w = WRAPPERS.get((backend, topology)) or WRAPPERS.get((backend, "single"))
    if not w:
        return []
    return [os.path.join(root, w[0])] + w[1:] + ["--"]


def backend_url(backend):
    """(url, extra environment for dlock, temporary directory to remove)."""
    env = {}
    if backend == "file":
        d = tempfile.mkdtemp(prefix="dlock-chaos-locks-")
        return "file://" + d, env, d
    if backend == "redis":
        return os.environ["DLOCK_TEST_REDIS_URL"], env, None
    if backend == "redlock":
        return os.environ["DLOCK_TEST_REDLOCK_URL"], env, None
    if backend == "zk":
        return os.environ["DLOCK_TEST_ZK_URL"], env, None
    if backend == "postgres":
        env["DLOCK_PASSWORD"] = os.environ["DLOCK_TEST_PG_PASSWORD"]
        return os.environ["DLOCK_TEST_PG_URL"], env, None
    if backend == "etcd":
        return os.environ["DLOCK_TEST_ETCD_URL"], env, None
    raise ValueError(backend)


def _read_pid(path):
    with open(path) as f:
        return int(f.read().split()[0])


def _run(argv, timeout=60):
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(argv), p.returncode,
                                                  p.stderr.decode(errors="replace").strip()[-300:]))
    return p.stdout.decode(errors="replace")


class ServerControl:
    """Faults on the servers of the wrapper we run in. A member is a number
    1..N; target() picks the one to hit (the leader of a zk ensemble or an
    etcd cluster, a random Redlock node, the only server otherwise)."""

    def __init__(self, backend):
        self.backend = backend
        e = os.environ
        if backend == "redlock":
            self.n = int(e["DLOCK_TEST_NODES"])
        elif backend == "zk":
            self.n = int(e.get("DLOCK_TEST_ZK_ENSEMBLE", "1"))
        elif backend == "etcd":
            self.n = int(e.get("DLOCK_TEST_ETCD_CLUSTER", "1"))
        else:
            self.n = 1

    def target(self):
        """The member to fault now, or None if none can be chosen yet (an
        ensemble or cluster without a leader)."""
        if self.backend == "redlock":
            return random.randint(1, self.n)
        if self.backend in ("zk", "etcd") and self.n > 1:
            script = os.environ["DLOCK_TEST_%s_LEADER" % ("ZK" if self.backend == "zk" else "ETCD")]
            try:
                return int(_run([script], timeout=10).strip())
            except (RuntimeError, ValueError, subprocess.TimeoutExpired):
                return None
        return 1

    def pid(self, i):
        e = os.environ
        if self.backend == "redis":
            return _read_pid(e["DLOCK_TEST_REDIS_PIDFILE"])
        if self.backend == "redlock":
            return _read_pid(e["DLOCK_TEST_NODE_PIDFILES"].split()[i - 1])
        if self.backend == "zk":
            return _read_pid(e["DLOCK_TEST_ZK_PIDFILE_%d" % i])
        if self.backend == "etcd":
            return _read_pid(e["DLOCK_TEST_ETCD_PIDFILE_%d" % i])
        if self.backend == "postgres":
            return _read_pid(e["DLOCK_TEST_PG_PIDFILE"])
        raise ValueError(self.backend)

    def signal(self, i, sig):
        """Send SIG to member I: to the postmaster's whole process group for
        postgres (the postmaster leads a session of its own, and its backends,
        which hold the sessions and advisory locks, are in its group), to the
        server process otherwise (every thread of it)."""
        pid = self.pid(i)
        if self.backend == "postgres":
            if proc_pgid(pid) != pid:
                raise RuntimeError("the postmaster %d leads no process group" % pid)
            return killpg(pid, sig)
        return kill(pid, sig)

    def pause(self, i):
        return self.signal(i, signal.SIGSTOP)

    def resume(self, i):
        return self.signal(i, signal.SIGCONT)

    def kill_restart(self, i):
        """kill -9 member I (an immediate shutdown for postgres) and start it
        again; returns once it serves. redis/redlock come back empty (the
        wrapper runs them without persistence unless enable_persistence()
        was called), zk/etcd members and postgres keep their data."""
        e = os.environ
        if self.backend == "redis":
            _run([e["DLOCK_TEST_REDIS_RESTART"]])
        elif self.backend == "redlock":
            _run([e["DLOCK_TEST_NODE_RESTART_%d" % i]])
        elif self.backend == "zk":
            _run([e["DLOCK_TEST_ZK_STOP_%d" % i]])
            _run([e["DLOCK_TEST_ZK_START_%d" % i]], timeout=120)
        elif self.backend == "etcd":
            _run([e["DLOCK_TEST_ETCD_STOP_%d" % i]])
            _run([e["DLOCK_TEST_ETCD_START_%d" % i]], timeout=120)
        elif self.backend == "postgres":
            _run([e["DLOCK_TEST_PG_RESTART"], "--immediate"], timeout=120)
        else:
            raise ValueError(self.backend)

    def _var(self, what):
        return os.environ["DLOCK_TEST_%s_%s" % ("ZK" if self.backend == "zk" else "ETCD", what)]

    def client_ports(self):
        """Every member's client port, member 1 first (zk and etcd)."""
        return [int(p) for p in self._var("PORTS").split()]

    def isolate(self, i):
        """Cut member I off from its peers (with-* --peer-links), both ways,
        as a black hole; its clients still reach it."""
        _run([self._var("ISOLATE_%d" % i)])

    def heal(self):
        _run([self._var("HEAL")])

    def clis(self):
        e = os.environ
        if self.backend == "redis":
            return [e["DLOCK_TEST_REDIS_CLI"]]
        if self.backend == "redlock":
            return [e["DLOCK_TEST_NODE_CLI_%d" % i] for i in range(1, self.n + 1)]
        return []

    def allow_clients(self, net):
        """Let clients from NET (the chaos suite's private namespaces, which
        reach the servers' loopback ports through their veth) in where a
        server only admits loopback clients: redis's protected mode (the
        servers still listen on 127.0.0.1 only), PostgreSQL's pg_hba.conf
        (scram-sha-256, as for 127.0.0.1)."""
        for cli in self.clis():
            _run([cli, "CONFIG", "SET", "protected-mode", "no"])
        if self.backend == "postgres":
            with open(os.path.join(os.environ["DLOCK_TEST_PG_DATA"], "pg_hba.conf"), "a") as f:
                f.write("host    all  all       %s   scram-sha-256\n" % net)
            _run([os.environ["DLOCK_TEST_PG_PSQL"], "-qAtc", "SELECT pg_reload_conf()"])

    PERSIST_LINES = ("appendonly yes", "appendfsync always", "appenddirname aof-chaos-")

    def disable_persistence(self):
        """Undoes enable_persistence (the cells after it share the servers
        and expect a restart to come back empty): the appended lines are
        removed and every server restarted without its data."""
        for n, (cli, restart) in enumerate(zip(self.clis(), self._restarts()), 1):
            info = _run([cli, "INFO", "server"])
            conf = [ln.split(":", 1)[1].strip() for ln in info.splitlines()
                    if ln.startswith("config_file:")][0]
            with open(conf) as f:
                kept = [ln for ln in f.read().splitlines() if not ln.startswith(self.PERSIST_LINES)]
            with open(conf, "w") as f:
                f.write("\n".join(kept) + "\n")
            _run([restart])
            got = _run([cli, "CONFIG", "GET", "appendonly"]).split()
            if got[-1] != "no":
                raise RuntimeError("%s: appendonly is %s after the restart" % (cli, got))

    def _restarts(self):
        return ([os.environ["DLOCK_TEST_REDIS_RESTART"]] if self.backend == "redis" else
                [os.environ["DLOCK_TEST_NODE_RESTART_%d" % i] for i in range(1, self.n + 1)])

    def enable_persistence(self):
        """redis/redlock: give every server appendonly yes with appendfsync
        always, in an AOF directory of its own, by appending that to its
        config file (the nodes share the wrapper's directory; dir is a
        protected setting), then restart each once (empty, before the
        clients start): the wrapper's restart script starts the server on
        the same file, so from then on a kill -9 loses no acknowledged
        write. with-redis itself has no persistence option."""
        for n, (cli, restart) in enumerate(zip(self.clis(), self._restarts()), 1):
            info = _run([cli, "INFO", "server"])
            conf = [ln.split(":", 1)[1].strip() for ln in info.splitlines()
                    if ln.startswith("config_file:")][0]
            with open(conf, "a") as f:
                f.write("\nappendonly yes\nappendfsync always\nappenddirname aof-chaos-%d\n" % n)
            _run([restart])
            got = _run([cli, "CONFIG", "GET", "appendfsync"]).split()
            if got[-1] != "always":
                raise RuntimeError("%s: appendfsync is %s after the restart" % (cli, got))
