"""Private servers for scripts/bench: a redis-server, the independent
redis-servers of a Redlock, a single-node etcd and a standalone ZooKeeper on
free loopback ports, with their data in the bench's temp dir (PostgreSQL, on
the same base class, is in postgres.py).

The bench starts them through its own spawn(), so they sit in process groups
that its cleanup stops (SIGTERM, then SIGKILL) at the end, on Ctrl-C and on
errors. When util-linux setpriv(1) is there they also get PR_SET_PDEATHSIG, so
not even a SIGKILLed bench leaves one running.
"""

import base64
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
import zookeeper_server  # noqa: E402  (scripts/zookeeper_server.py, shared with scripts/with-zookeeper)

START_TIMEOUT_S = 15.0
START_ATTEMPTS = 3


class ServerError(Exception):
    pass


def free_port():
    # Another process may take the port before the server binds it; callers retry.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pdeathsig_prefix():
    setpriv = shutil.which("setpriv")
    if not setpriv:
        return []
    out = subprocess.run([setpriv, "--help"], capture_output=True, text=True)
    return [setpriv, "--pdeathsig", "KILL", "--"] if "--pdeathsig" in out.stdout else []


class Resp:
    """Just enough of a RESP2 client to ask the bench's redis-server about its
    state (PING, CLIENT LIST, DBSIZE) without starting redis-cli each time."""

    def __init__(self, port, timeout=2.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def call(self, *args):
        parts = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self.sock.sendall(b"".join(parts))
        return self.reply()

    def fill(self, size):
        while len(self.buf) < size:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis-server closed the connection")
            self.buf += chunk

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill(len(self.buf) + 1)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise ServerError(f"redis-server: {rest.decode(errors='replace')}")
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            self.fill(size + 2)
            data, self.buf = self.buf[:size], self.buf[size + 2:]
            return data.decode(errors="replace")
        if kind == b"*":
            count = int(rest)
            return None if count < 0 else [self.reply() for _ in range(count)]
        raise ServerError(f"unexpected reply from redis-server: {line[:40]!r}")


def subscribed_clients(resp):
    """Connections subscribed to at least one channel or pattern: how the
    bench sees that a dlock waiter has reached its wait for the release."""
    count = 0
    for entry in resp.call("CLIENT", "LIST").splitlines():
        fields = dict(f.split("=", 1) for f in entry.split() if "=" in f)
        if any(int(fields.get(k, "0") or 0) > 0 for k in ("sub", "psub", "ssub")):
            count += 1
    return count


class Server:
    """Starts argv_for(port...) on fresh free ports until one comes up healthy."""

    name = "server"

    def __init__(self, spawn, reap, binary, tmp, log_fd):
        self.spawn = spawn
        self.reap = reap
        self.binary = binary
        self.tmp = tmp
        self.log_fd = log_fd
        self.pid = None

    def launch_prefix(self):
        return pdeathsig_prefix()

    def start(self):
        prefix = self.launch_prefix()
        for _ in range(START_ATTEMPTS):
            ports = self.pick_ports()
            self.pid = self.spawn(prefix + self.argv(*ports), log_fd=self.log_fd)
            end = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < end:
                status = self.reap(self.pid)
                if status is not None:
                    break  # most likely lost the race for a port: try others
                if self.healthy():
                    return self
                time.sleep(0.02)
            else:
                raise ServerError(f"{self.name} did not become healthy within {START_TIMEOUT_S:g} s")
        raise ServerError(f"{self.name} exited at start {START_ATTEMPTS} times (see its log in the bench's temp dir)")


class RedisServer(Server):
    name = "redis-server"

    def pick_ports(self):
        self.port = free_port()
        return (self.port,)

    def argv(self, port):
        return [self.binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.tmp, "--daemonize", "no", "--logfile", ""]

    def healthy(self):
        try:
            resp = Resp(self.port, timeout=0.5)
            try:
                return resp.call("PING") == "PONG"
            finally:
                resp.close()
        except (OSError, ServerError):
            return False

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"


def start_redis_nodes(count, spawn, reap, binary, tmp, log_fd):
    """count independent redis-servers (no replication between them): the
    nodes of a Redlock, each on a port of its own."""
    return [RedisServer(spawn, reap, binary, tmp, log_fd).start() for _ in range(count)]


def redlock_url(nodes):
    return "redlock://" + ",".join(f"127.0.0.1:{node.port}" for node in nodes)


class EtcdServer(Server):
    """A single-member etcd with etcd's defaults (heartbeat 100 ms, election
    timeout 1 s, and no --unsafe-no-fsync: every write waits for an fsync of
    its write-ahead log in the bench's temp dir, as on a production member)."""

    name = "etcd"
    conn = None  # the bench's own kept-alive connection to the client port

    def pick_ports(self):
        self.client_port = free_port()
        self.peer_port = free_port()
        while self.peer_port == self.client_port:
            self.peer_port = free_port()
        return self.client_port, self.peer_port

    def argv(self, client, peer):
        data_dir = os.path.join(self.tmp, f"etcd-{client}")
        client_url = f"http://127.0.0.1:{client}"
        peer_url = f"http://127.0.0.1:{peer}"
        return [self.binary, "--name", "bench", "--data-dir", data_dir,
                "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
                "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                "--initial-cluster", f"bench={peer_url}", "--initial-cluster-state", "new",
                "--initial-cluster-token", "dlock-bench", "--logger", "zap", "--log-level", "warn"]

    def healthy(self):
        try:
            with urllib.request.urlopen(f"{self.endpoint}/health", timeout=0.5) as r:
                return json.load(r).get("health") == "true"
        except (OSError, ValueError, urllib.error.URLError):
            return False

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def url(self):
        return f"etcd://127.0.0.1:{self.client_port}"

    @property
    def data_dir(self):
        return os.path.join(self.tmp, f"etcd-{self.client_port}")

    def request(self, method, path, body=None):
        """One request on a kept-alive connection (the bench polls while a
        waiter starts: no connection set up per poll); the answer's body."""
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.client_port, timeout=2.0)
            try:
                self.conn.request(method, path, body=None if body is None else json.dumps(body),
                                  headers={"Content-Type": "application/json"})
                answer = self.conn.getresponse()
                data = answer.read()
            except (OSError, http.client.HTTPException) as e:
                # A kept-alive connection the server closed: once more on a
                # new one (the bench only reads, so asking again is safe).
                self.close()
                if attempt == 2:
                    raise ServerError(f"etcd did not answer {path}: {e}") from e
                continue
            if answer.status != 200:
                raise ServerError(f"etcd answered {path} with HTTP {answer.status}: {data[:200]!r}")
            return data

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def keys_under(self, prefix):
        """(how many keys start with prefix, the store's revision), from the
        v3 JSON gateway (keys in base64, 64-bit numbers as strings)."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        b64 = lambda text: base64.b64encode(text.encode()).decode()
        answer = json.loads(self.request("POST", "/v3/kv/range",
                                         {"key": b64(prefix), "range_end": b64(end), "count_only": True}))
        return int(answer.get("count", 0)), int(answer["header"]["revision"])

    def watchers(self):
        """Watchers the server has (the etcd_debugging_mvcc_watcher_total
        gauge of /metrics), whatever client made them."""
        return self.watcher_counts()[0]

    def watcher_counts(self):
        """(watchers, unsynced watchers) from /metrics. A watch from a past
        revision (etcd's concurrency.Mutex watches from its range's) starts
        unsynced: it sees no event until the store's sync loop, every
        100 ms, has caught it up (etcd_debugging_mvcc_slow_watcher_total)."""
        gauges = {}
        for line in self.request("GET", "/metrics").decode(errors="replace").splitlines():
            name, _, value = line.partition(" ")
            if name in ("etcd_debugging_mvcc_watcher_total", "etcd_debugging_mvcc_slow_watcher_total"):
                gauges[name] = int(float(value))
        if len(gauges) != 2:
            raise ServerError("etcd's /metrics lacks etcd_debugging_mvcc_watcher_total or _slow_watcher_total")
        return gauges["etcd_debugging_mvcc_watcher_total"], gauges["etcd_debugging_mvcc_slow_watcher_total"]

    def version(self):
        """"etcd X.Y.Z", from /version."""
        try:
            return "etcd " + json.loads(self.request("GET", "/version")).get("etcdserver", "(unknown version)")
        except (ValueError, ServerError):
            return "etcd (unknown version)"


def four_letter_word(port, word, timeout=2.0):
    """ZooKeeper's answer to a four-letter word, read until it closes the
    connection ("" when it has nothing to say, as wchp without watches)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(word.encode())
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks).decode(errors="replace")
            chunks.append(chunk)


def indented_groups(text):
    """{heading: [indented lines below it]} of wchp-like answers:
    "/path\n\t0xsession\n..." or "0xsession:\n\t/path\n..."."""
    groups, current = {}, None
    for line in text.splitlines():
        if line.startswith("\t"):
            if current is not None:
                groups[current].append(line.strip())
        else:
            current = line.strip().rstrip(":")
            groups[current] = []
    return groups


def zk_ephemeral_owners(port):
    """{ephemeral node path: owning session} from the dump four-letter word."""
    dump = four_letter_word(port, "dump")
    start = dump.find("Sessions with Ephemerals")
    end = dump.find("Connections dump", start)
    if start < 0:
        raise ServerError(f"unexpected answer to dump from ZooKeeper: {dump[:80]!r}")
    section = dump[dump.index("\n", start) + 1:end if end > 0 else len(dump)]
    return {path: session for session, paths in indented_groups(section).items() for path in paths}


def zk_watchers(port):
    """{watched path: [sessions watching it]} from the wchp four-letter word."""
    return indented_groups(four_letter_word(port, "wchp"))


def zk_zxid(port):
    """The last transaction id the server applied (srvr's Zxid line)."""
    for line in four_letter_word(port, "srvr").splitlines():
        if line.startswith("Zxid:"):
            return int(line.split(":", 1)[1].strip(), 16)
    raise ServerError("ZooKeeper's answer to srvr has no Zxid line")


def zk_version(port):
    """"zookeeper X.Y.Z", from srvr's "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on ..."."""
    found = re.search(r"^Zookeeper version: (\d+\.\d+(\.\d+)?)", four_letter_word(port, "srvr"), re.MULTILINE)
    return f"zookeeper {found.group(1)}" if found else "zookeeper (unknown version)"


class ZooKeeperServer(Server):
    """A standalone ZooKeeper with the settings of scripts/with-zookeeper
    (scripts/zookeeper_server.py), the transaction log fsynced on every write."""

    name = "zookeeper"

    def pick_ports(self):
        self.port = free_port()
        return (self.port,)

    def argv(self, port):
        home = os.path.join(self.tmp, f"zk-{port}")
        os.makedirs(os.path.join(home, "data"), exist_ok=True)
        cfg = os.path.join(home, "zoo.cfg")
        with open(cfg, "w") as f:
            # maxClientCnxns 0: no limit on connections from one address (ZooKeeper's
            # default is 60; the scale section has 500 waiters, all on 127.0.0.1).
            f.write(zookeeper_server.zoo_cfg(zookeeper_server.DEFAULT_TICK_MS, os.path.join(home, "data"), port,
                                             max_client_cnxns=0))
        return zookeeper_server.java_argv(self.binary, cfg)

    def healthy(self):
        try:
            return "Mode: standalone" in four_letter_word(self.port, "srvr", timeout=0.5)
        except OSError:
            return False

    @property
    def url(self):
        return f"zk://127.0.0.1:{self.port}"

    @property
    def data_dir(self):
        return os.path.join(self.tmp, f"zk-{self.port}", "data")


KAZOO_LOCK = """# Run a command under a ZooKeeper lock, the way one would with kazoo.
import subprocess
import sys

from kazoo.client import KazooClient

client = KazooClient(hosts="127.0.0.1:{port}")
client.start()
try:
    with client.Lock("{path}"):
        status = subprocess.call(sys.argv[1:])
finally:
    client.stop()
    client.close()
sys.exit(status)
"""


def write_kazoo_lock(path, port, lock_path):
    with open(path, "w") as f:
        f.write(KAZOO_LOCK.format(port=port, path=lock_path))


# How often the polling Redis locks try again while the key is taken: the
# default of redis-py's Lock (its sleep), and the shell lock's sleep.
REDIS_POLL_S = 0.1

REDIS_CLI_LOCK = """#!/bin/sh
# Run a command under a Redis lock, the way one would by hand with redis-cli:
# while the key is taken, try again every {poll_s:g} s (redis-py's Lock default).
key=lock:{name}
read -r token < /proc/sys/kernel/random/uuid
until [ "$(redis-cli -h 127.0.0.1 -p {port} SET "$key" "$token" NX PX 30000)" = OK ]; do
    sleep {poll_s:g}
done
"$@"
status=$?
redis-cli -h 127.0.0.1 -p {port} EVAL "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end" 1 "$key" "$token" >/dev/null
exit $status
"""


def write_redis_cli_lock(path, port, name):
    with open(path, "w") as f:
        f.write(REDIS_CLI_LOCK.format(port=port, name=name, poll_s=REDIS_POLL_S))
    os.chmod(path, 0o700)


REDIS_PY_LOCK = """# Run a command under a Redis lock, the way one would with redis-py: its Lock
# with a 30 s lease (the redis-cli lock's PX 30000), acquired with the
# defaults (block, polling every 100 ms), the command run as a child.
import subprocess
import sys

import redis

client = redis.Redis(host="127.0.0.1", port={port})
try:
    with client.lock("lock:{name}", timeout=30):
        status = subprocess.call(sys.argv[1:])
finally:
    client.close()
sys.exit(status)
"""


def write_redis_py_lock(path, port, name):
    with open(path, "w") as f:
        f.write(REDIS_PY_LOCK.format(port=port, name=name))


def set_calls(resp):
    """SET commands the redis-server has run (INFO commandstats), taken or
    not: how the bench sees that a polling waiter has tried the lock."""
    for line in resp.call("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_set:"):
            fields = dict(f.split("=", 1) for f in line.split(":", 1)[1].split(",") if "=" in f)
            return int(fields.get("calls", "0"))
    return 0
