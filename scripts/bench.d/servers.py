"""Private servers for scripts/bench: a redis-server, the independent
redis-servers of a Redlock and a single-node etcd on free loopback ports, with
their data in the bench's temp dir.

The bench starts them through its own spawn(), so they sit in process groups
that its cleanup stops (SIGTERM, then SIGKILL) at the end, on Ctrl-C and on
errors. When util-linux setpriv(1) is there they also get PR_SET_PDEATHSIG, so
not even a SIGKILLed bench leaves one running.
"""

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

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

    def start(self):
        prefix = pdeathsig_prefix()
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
    name = "etcd"

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


REDIS_CLI_LOCK = """#!/bin/sh
# Run a command under a Redis lock, the way one would by hand with redis-cli.
key=lock:{name}
read -r token < /proc/sys/kernel/random/uuid
[ "$(redis-cli -h 127.0.0.1 -p {port} SET "$key" "$token" NX PX 30000)" = OK ] || exit 75
"$@"
status=$?
redis-cli -h 127.0.0.1 -p {port} EVAL "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end" 1 "$key" "$token" >/dev/null
exit $status
"""


def write_redis_cli_lock(path, port, name):
    with open(path, "w") as f:
        f.write(REDIS_CLI_LOCK.format(port=port, name=name))
    os.chmod(path, 0o700)
