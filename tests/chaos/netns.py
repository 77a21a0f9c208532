#!/usr/bin/env python3
"""Network faults between dlock clients and servers, in private network
namespaces (python3 standard library only; needs root, iproute2 and tc).

Topology made by Netns.setup():

    root namespace                           client namespace dlkc-<id>-<pid>
    127.0.0.1:PORT  <- Forwarder ->  dlkr<id>  ===veth===  dlkn<id>   (+ lo)
    (the server)       listens on    10.254.X.Y+1/30         10.254.X.Y+2/30
                       10.254.X.Y+1:LPORT

A client run inside the namespace (Netns.exec_prefix() + argv) connects to
host_addr:LPORT; a Forwarder in the root namespace (an asyncio TCP proxy on
the one forwarding thread of this process, which every Netns of the process
shares) relays to 127.0.0.1:PORT. Or, after route_loopback(), no
forwarder: the namespace's 127.0.0.0/8 goes through the veth to the root
namespace's loopback (route_localnet on the pair), URLs stay unchanged and
the servers talk to the client's own address (a partition then silences
their keepalives too, as on a real network). Nothing of the host's own
interfaces, routes or firewall is touched: only the veth pair, its /30 (a
block of 10.254.0.0/16 that no address or route of the host overlaps, chosen
under a lock file) and static neighbour entries on the pair.

Faults:

  partition(direction)  a black hole on the veth: the egress qdisc of one or
                        both ends is replaced by "pfifo limit 0", which drops
                        every packet. No RST, no ICMP: established
                        connections see timeouts, new connects hang (SYNs go
                        unanswered). The neighbour entries are static, so no
                        ARP failure turns the drop into "no route to host".
                        direction: "both", "to-server" (client -> server
                        dropped) or "to-client" (server -> client dropped).
  heal()                removes the partition (the delay, if any, stays).
  delay(ms)             one-way delay added in EACH direction (so the round
                        trip grows by 2*ms): tc netem on both veth ends when
                        the kernel has sch_netem (netem_available()),
                        otherwise in the Forwarder (each chunk read is held
                        ms before it is written on; the TCP handshake with
                        the Forwarder itself is not delayed). delay(0) ends it.

Cleanup: Netns is a context manager, and close() is also registered with
atexit; it stops the forwarders, kills processes left in the namespace,
deletes the root end of the veth (which deletes its peer) and the namespace.
It is idempotent. A namespace left by a killed run is named dlkc-<id>-<pid>
with <pid> no longer alive: cleanup_stale() (CLI: cleanup-stale) removes those
and any root link dlkr<id> without its namespace. SIGKILL of the owner leaves
them behind until then; atexit does not run on an unhandled SIGTERM either,
so a long-lived user should turn SIGTERM into SystemExit (the CLI does).

CLI (for manual testing):

  netns.py check                      what works here (netem, pfifo drop)
  netns.py up --port P [--port P2..] [--delay MS]
                                      set up, print one JSON line (name,
                                      addresses, forwarded ports, exec prefix),
                                      then serve until stdin closes / SIGTERM;
                                      stdin lines: partition [DIR] | heal |
                                      delay MS | status | quit
  netns.py run --port P [...] -- CMD  set up, run CMD in the ROOT namespace
                                      with DLOCK_NETNS, DLOCK_NETNS_ADDR,
                                      DLOCK_NETNS_EXEC (space separated
                                      prefix), DLOCK_NETNS_CTL; exit with
                                      its status after cleanup
  netns.py partition NAME [--direction D]   (another shell; stateless tc)
  netns.py heal NAME
  netns.py delay NAME MS              through the owner's control socket
  netns.py list                       dlock namespaces and whether stale
  netns.py cleanup-stale [--all]      remove stale (or all) of them
"""

import asyncio
import atexit
import fcntl
import ipaddress
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading

from forwarder import Forwarder, _LoopThread  # noqa: E402
import time

NS_PREFIX = "dlkc-"
ROOT_LINK_PREFIX = "dlkr"
NS_LINK_PREFIX = "dlkn"
POOL = ipaddress.ip_network("10.254.0.0/16")
_SHARED_LOOP = None  # the forwarding loop thread (Netns._loop)
_SHARED_LOOP_LOCK = threading.Lock()
STATE_DIR = "/run/dlock-netns"
NAME_RE = re.compile(r"^dlkc-([0-9a-f]{6})-(\d+)$")
DIRECTIONS = ("both", "to-server", "to-client")


class NetnsError(RuntimeError):
    pass


def _run(argv, check=True, ns=None, input=None):
    if ns is not None:
        argv = ["ip", "netns", "exec", ns] + list(argv)
    p = subprocess.run(argv, stdin=subprocess.DEVNULL if input is None else None,
                       input=input, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise NetnsError("%s: exit %d: %s" % (" ".join(argv), p.returncode,
                                               p.stderr.strip()))
    return p


def _links(name):
    """(root link, namespace link) for a namespace name dlkc-<id>-<pid>."""
    m = NAME_RE.match(name)
    if not m:
        raise NetnsError("not a dlock namespace name: %s" % name)
    return ROOT_LINK_PREFIX + m.group(1), NS_LINK_PREFIX + m.group(1)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def list_namespaces():
    """Names of all namespaces made by this module (any owner)."""
    p = _run(["ip", "netns", "list"], check=False)
    out = []
    for line in p.stdout.splitlines():
        n = line.split()[0] if line.split() else ""
        if n.startswith(NS_PREFIX):
            out.append(n)
    return out


def is_stale(name):
    """True when the pid at the end of NAME (its owner) is no longer alive."""
    m = re.search(r"-(\d+)$", name)
    return not m or not _pid_alive(int(m.group(1)))


def _kill_ns_pids(name):
    p = _run(["ip", "netns", "pids", name], check=False)
    for tok in p.stdout.split():
        try:
            os.kill(int(tok), signal.SIGKILL)
        except (ValueError, ProcessLookupError):
            pass


def _delete(name):
    """Delete namespace NAME and its root link; errors ignored."""
    try:
        root_link, _ = _links(name)
    except NetnsError:
        root_link = None
    _kill_ns_pids(name)
    if root_link:
        _run(["ip", "link", "del", root_link], check=False)
    _run(["ip", "netns", "del", name], check=False)
    for suffix in (".ctl",):
        try:
            os.unlink(os.path.join(STATE_DIR, name + suffix))
        except FileNotFoundError:
            pass


def cleanup_stale(all_=False):
    """Remove namespaces whose owner pid is gone (all of them with all_),
    then root links dlkr* whose namespace no longer exists. Returns the list
    of what was removed."""
    os.makedirs(STATE_DIR, exist_ok=True)
    with open(os.path.join(STATE_DIR, "alloc.lock"), "w") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)  # not while a setup is half done
        return _cleanup_stale_locked(all_)


def _cleanup_stale_locked(all_):
    removed = []
    for n in list_namespaces():
        if all_ or is_stale(n):
            _delete(n)
            removed.append(n)
    live_ids = set()
    for n in list_namespaces():
        m = NAME_RE.match(n)
        if m:
            live_ids.add(m.group(1))
    p = _run(["ip", "-o", "link", "show"], check=False)
    for line in p.stdout.splitlines():
        parts = line.split(":")
        if len(parts) < 2:
            continue
        ifname = parts[1].strip().split("@")[0]
        m = re.match(r"^%s([0-9a-f]{6})$" % ROOT_LINK_PREFIX, ifname)
        if m and m.group(1) not in live_ids:
            _run(["ip", "link", "del", ifname], check=False)
            removed.append(ifname)
    return removed


_netem = None
_netem_lock = threading.Lock()


def netem_available():
    """Whether tc netem works here (probed once on a throw-away veth pair in
    a throw-away namespace, never on a host interface)."""
    global _netem
    with _netem_lock:  # namespaces may be set up in threads
        if _netem is not None:
            return _netem
        probe = "%sprobe-%d" % (NS_PREFIX, os.getpid())
        _run(["ip", "netns", "add", probe])
        try:
            _run(["ip", "link", "add", "pa", "type", "veth", "peer", "name", "pb"],
                 ns=probe)
            p = _run(["tc", "qdisc", "add", "dev", "pa", "root", "netem",
                      "delay", "1ms"], ns=probe, check=False)
            _netem = p.returncode == 0
        finally:
            _run(["ip", "netns", "del", probe], check=False)
        return _netem


# ---------------------------------------------------------------- forwarder

def _used_networks():
    nets = []
    for cmd in (["ip", "-4", "-o", "addr", "show"],
                ["ip", "-4", "route", "show", "table", "all"]):
        p = _run(cmd, check=False)
        for tok in re.findall(r"(\d+\.\d+\.\d+\.\d+(?:/\d+)?)", p.stdout):
            try:
                nets.append(ipaddress.ip_network(tok, strict=False))
            except ValueError:
                pass
    return nets


class Netns:
    """A client namespace connected to the root namespace by a veth pair.

    ns = Netns(); ns.setup()  (or: with Netns() as ns:)
      ns.name            namespace name (dlkc-<id>-<pid>)
      ns.host_addr       root-side address (what clients connect to)
      ns.client_addr     namespace-side address
      ns.root_link, ns.ns_link
      ns.exec_prefix()   ["ip", "netns", "exec", name]
      ns.run(argv, **kw) / ns.popen(argv, **kw)   subprocess in the namespace
      ns.forward(port, listen_port=None) -> (host_addr, listen_port)
      ns.url(url)        rewrites every 127.0.0.1:PORT / localhost:PORT in a
                         dlock URL to host_addr:LPORT, forwarding each PORT
      ns.partition(direction="both"), ns.heal(), ns.delay(ms)
      ns.status()        dict: partition, delay_ms, delay mode, qdiscs
      ns.close()
    """

    def __init__(self, kill_leftovers=True):
        self.kill_leftovers = kill_leftovers
        self.name = None
        self.id = None
        self.host_addr = self.client_addr = None
        self.root_link = self.ns_link = None
        self.forwarders = {}
        self.partitioned = None
        self.delay_ms = 0
        self.use_netem = None
        self.direct = False
        self._lt = None
        self._ctl = None
        self._qdiscs = {}  # dev -> (kind, delay ms) of its root qdisc as set
        self._closed = False
        self._lock = threading.Lock()

    # -- lifecycle
    def __enter__(self):
        if self.name is None:
            self.setup()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def setup(self):
        if os.geteuid() != 0:
            raise NetnsError("needs root")
        os.makedirs(STATE_DIR, exist_ok=True)
        self.use_netem = netem_available()
        atexit.register(self.close)
        with open(os.path.join(STATE_DIR, "alloc.lock"), "w") as lockf:
            fcntl.flock(lockf, fcntl.LOCK_EX)
            existing = set(list_namespaces())
            for _ in range(100):
                self.id = "%06x" % random.getrandbits(24)
                name = "%s%s-%d" % (NS_PREFIX, self.id, os.getpid())
                if name not in existing and not any(
                        n.startswith(NS_PREFIX + self.id) for n in existing):
                    break
            self.name = name
            self.root_link, self.ns_link = _links(self.name)
            used = _used_networks()
            for _ in range(1000):
                block = random.randrange(POOL.num_addresses // 4)
                net = ipaddress.ip_network(
                    (int(POOL.network_address) + 4 * block, 30))
                if not any(net.overlaps(u) for u in used
                           if u.prefixlen > 0):
                    break
            else:
                raise NetnsError("no free /30 in %s" % POOL)
            hosts = list(net.hosts())
            self.host_addr, self.client_addr = str(hosts[0]), str(hosts[1])
            self.net = net
            try:
                self._claim()
            except BaseException:
                self.close()
                raise
        # The rest outside the lock: what other setups look at (namespace
        # names, addresses in use) is in place, and namespaces set up in
        # threads of one process build side by side.
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def _claim(self):
        n, r, c = self.name, self.root_link, self.ns_link
        _run(["ip", "netns", "add", n])
        _run(["ip", "link", "add", r, "type", "veth", "peer", "name", c])
        _run(["ip", "addr", "add", "%s/30" % self.host_addr, "dev", r])

    def _build(self):
        n, r, c = self.name, self.root_link, self.ns_link
        _run(["ip", "link", "set", c, "netns", n])
        for dev, ns in ((r, None), (c, n)):
            # no IPv6 chatter on the pair; failures harmless
            _run(["sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/%s/"
                  "disable_ipv6" % dev], ns=ns, check=False)
        _run(["ip", "addr", "add", "%s/30" % self.client_addr, "dev", c],
             ns=n)
        _run(["ip", "link", "set", "lo", "up"], ns=n)
        _run(["ip", "link", "set", r, "up"])
        _run(["ip", "link", "set", c, "up"], ns=n)
        rmac = open("/sys/class/net/%s/address" % r).read().strip()
        cmac = _run(["cat", "/sys/class/net/%s/address" % c],
                    ns=n).stdout.strip()
        # static neighbours: a partition never becomes an ARP failure
        # (which would report EHOSTUNREACH instead of a silent timeout)
        _run(["ip", "neigh", "replace", self.client_addr, "lladdr", cmac,
              "dev", r, "nud", "permanent"])
        _run(["ip", "neigh", "replace", self.host_addr, "lladdr", rmac,
              "dev", c, "nud", "permanent"], ns=n)

    def close(self):
        with self._lock:
            if self._closed or self.name is None:
                self._closed = True
                return
            self._closed = True
        try:
            if self._lt:
                for f in list(self.forwarders.values()):
                    try:
                        self._lt.call(f.stop(), timeout=5)
                    except Exception:
                        pass
                if self._ctl:
                    try:
                        self._lt.loop.call_soon_threadsafe(self._ctl.close)
                    except Exception:
                        pass
        finally:
            if self.kill_leftovers:
                _kill_ns_pids(self.name)
            _delete(self.name)
            try:
                atexit.unregister(self.close)
            except Exception:
                pass

    # -- running things inside
    def exec_prefix(self):
        return ["ip", "netns", "exec", self.name]

    def run(self, argv, **kw):
        return subprocess.run(self.exec_prefix() + list(argv), **kw)

    def popen(self, argv, **kw):
        return subprocess.Popen(self.exec_prefix() + list(argv), **kw)

    # -- forwarding
    def _loop(self):
        # One loop thread for all the namespaces of this process: a thread
        # each (15 in a chaos cell) made every relayed chunk queue for the
        # GIL behind the others, and a relay at a busy start took longer
        # than a Redlock node's 200 ms answer time (CI: 'no quorum: 0 of 3
        # nodes answered' at a net-delay cell's first acquisition).
        global _SHARED_LOOP
        with _SHARED_LOOP_LOCK:
            if _SHARED_LOOP is None:
                # and it gets the GIL back sooner from the other threads
                sys.setswitchinterval(0.001)
                _SHARED_LOOP = _LoopThread()
        self._lt = _SHARED_LOOP
        return self._lt

    def forward(self, port, listen_port=None, target_host="127.0.0.1"):
        """Relay host_addr:listen_port (default: port; 0 = any free one) ->
        target_host:port. Returns (host_addr, listen_port)."""
        port = int(port)
        if port in self.forwarders:
            return self.host_addr, self.forwarders[port].listen_port
        f = Forwarder(self.host_addr, port if listen_port is None
                      else listen_port, target_host, port)
        f.delay_s = 0 if self.use_netem else self.delay_ms / 1000.0
        self._loop().call(f.start())
        self.forwarders[port] = f
        return self.host_addr, f.listen_port

    def route_loopback(self):
        """No forwarder: the namespace's 127.0.0.0/8 is routed through the
        veth to the root namespace, so a client inside reaches the servers'
        loopback ports directly (URLs unchanged) and the servers see the
        client's own address: in a partition their keepalives go unanswered
        as over a real network (a forwarder would answer them). Its lo is
        emptied and brought down (127.0.0.1 is not local in there any more) and
        route_localnet is set on the two ends of this veth pair only."""
        n = self.name
        _run(["ip", "addr", "flush", "dev", "lo"], ns=n)
        _run(["ip", "link", "set", "lo", "down"], ns=n)
        _run(["sysctl", "-qw", "net.ipv4.conf.%s.route_localnet=1" % self.root_link])
        _run(["sysctl", "-qw", "net.ipv4.conf.%s.route_localnet=1" % self.ns_link], ns=n)
        _run(["sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1"], ns=n)
        _run(["ip", "route", "add", "127.0.0.0/8", "via", self.host_addr, "dev",
              self.ns_link, "src", self.client_addr], ns=n)
        self.direct = True

    def url(self, url):
        def sub(m):
            addr, lport = self.forward(int(m.group(2)))
            return "%s:%d" % (addr, lport)
        if self.direct:
            return url
        return re.sub(r"(127\.0\.0\.1|localhost):(\d+)", sub, url)

    # -- faults
    def _set_root_qdisc(self, dev, ns, kind):
        if kind == "drop":
            _run(["tc", "qdisc", "replace", "dev", dev, "root", "pfifo",
                  "limit", "0"], ns=ns)
        elif kind == "delay":
            _run(["tc", "qdisc", "replace", "dev", dev, "root", "netem",
                  "delay", "%dms" % self.delay_ms, "limit", "100000"], ns=ns)
        else:
            _run(["tc", "qdisc", "del", "dev", dev, "root"], ns=ns,
                 check=False)

    def _apply(self):
        drop_to_server = self.partitioned in ("both", "to-server")
        drop_to_client = self.partitioned in ("both", "to-client")
        netem_delay = self.use_netem and self.delay_ms > 0
        for dev, ns, drop in ((self.ns_link, self.name, drop_to_server),
                              (self.root_link, None, drop_to_client)):
            kind = "drop" if drop else "delay" if netem_delay else None
            # tc only where the qdisc changes: a delay in the forwarder
            # leaves the qdiscs alone (two tc runs per namespace and fault
            # made a net-delay fault a second longer than it should be)
            state = (kind, self.delay_ms if kind == "delay" else None)
            if self._qdiscs.get(dev, (None, None)) == state:
                continue
            self._set_root_qdisc(dev, ns, kind)
            self._qdiscs[dev] = state
        fdelay = 0 if self.use_netem else self.delay_ms / 1000.0
        for f in self.forwarders.values():
            f.delay_s = fdelay

    def partition(self, direction="both"):
        if direction not in DIRECTIONS:
            raise NetnsError("direction: one of %s" % ", ".join(DIRECTIONS))
        self.partitioned = direction
        self._apply()

    def heal(self):
        self.partitioned = None
        self._apply()

    def delay(self, ms):
        self.delay_ms = max(0, int(ms))
        self._apply()

    def status(self):
        q = {}
        for dev, ns in ((self.ns_link, self.name), (self.root_link, None)):
            q[dev] = _run(["tc", "-s", "qdisc", "show", "dev", dev], ns=ns,
                          check=False).stdout.strip()
        return {"name": self.name, "partition": self.partitioned,
                "delay_ms": self.delay_ms,
                "delay_mode": "netem" if self.use_netem else "forwarder",
                "connections_accepted": {p: f.accepted for p, f in
                                         self.forwarders.items()},
                "qdiscs": q}

    def info(self):
        return {"name": self.name, "host_addr": self.host_addr,
                "client_addr": self.client_addr,
                "root_link": self.root_link, "ns_link": self.ns_link,
                "ports": {str(p): f.listen_port
                          for p, f in self.forwarders.items()},
                "exec_prefix": self.exec_prefix(),
                "netem": self.use_netem,
                "ctl": self.ctl_path()}

    # -- control socket (for the CLI: delay/partition from another shell)
    def ctl_path(self):
        return os.path.join(STATE_DIR, self.name + ".ctl")

    def command(self, line):
        """Executes one control line; returns the reply line."""
        w = line.split()
        try:
            if not w:
                return "ERR empty"
            if w[0] == "partition":
                self.partition(w[1] if len(w) > 1 else "both")
            elif w[0] == "heal":
                self.heal()
            elif w[0] == "delay" and len(w) == 2:
                self.delay(int(w[1]))
            elif w[0] == "status":
                return json.dumps(self.status())
            else:
                return "ERR unknown command"
            return "OK"
        except Exception as e:  # report, keep serving
            return "ERR %s" % e

    def serve_control(self):
        path = self.ctl_path()
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

        async def handle(reader, writer):
            try:
                line = (await reader.readline()).decode()
                reply = await asyncio.get_running_loop().run_in_executor(
                    None, self.command, line)
                writer.write((reply + "\n").encode())
                await writer.drain()
            finally:
                writer.close()

        async def start():
            return await asyncio.start_unix_server(handle, path)
        self._ctl = self._loop().call(start())
        return path


def control(name, line, timeout=10):
    """Sends one control line to the process owning namespace NAME."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(os.path.join(STATE_DIR, name + ".ctl"))
    s.sendall((line.strip() + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return buf.decode().strip()
