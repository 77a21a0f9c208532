"""server-isolated: one member of the zk ensemble or etcd cluster cut off
from its peers while its clients still reach it (Jepsen's isolated-node
nemesis; a member that lost its quorum).

The wrapper runs with --peer-links: members reach each other only through
scripts/peer_links.py, which black-holes every link of the isolated member
(no FIN, no RST); clients connect to the members directly. Each fault picks
the member that a running holder's dlock is connected to (found from its
socket), or, every other time, the leader: a follower cut off from its
leader still answers reads from its memory, a leader cut off from its
followers still answers a sync by itself until it steps down."""

import os
import random
import time

from .procs import environ
from .scenarios import PAUSE_S, register
from .server_faults import EXIT_GRACE_S, ServerFault


def _socket_inodes(pid):
    out = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                out.add(link[8:-1])
    except OSError:
        pass
    return out


def connected_member(pid, ports):
    """The member (1..N) whose client port in PORTS the process PID has a TCP
    connection to, or None."""
    inodes = _socket_inodes(pid)
    if not inodes:
        return None
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[9] in inodes and fields[3] == "01":   # ESTABLISHED
                    port = int(fields[2].split(":")[1], 16)
                    if port in ports:
                        return ports.index(port) + 1
    except OSError:
        pass
    return None


class ServerIsolated(ServerFault):
    name = "server-isolated"
    kind = "isolated"

    def applies(self, backend):
        return backend in ("zk", "etcd")

    def skip_reason(self, backend):
        return "no ensemble or cluster (zk and etcd only)"

    def topology(self, backend):
        return "cluster-links"

    def inject(self, cell):
        """Once a client's job runs (waiting at most 2 s for one): cut off the
        member its dlock talks to, or the leader every other fault."""
        now = time.monotonic()
        since = getattr(cell, "fault_wait_since", None)
        if since is None:
            since = cell.fault_wait_since = now
        holder = None
        for c in cell.clients:
            h = c.holder()
            if h:
                holder = h
                break
        if holder is None and now - since < 2.0:
            return 0.005
        count = getattr(cell, "isolations", 0)
        member = None
        if holder is not None and count % 2 == 0:
            member = connected_member(holder[0], cell.server.client_ports())
        if member is None:
            member = cell.server.target()
        if member is None:
            return 0.2
        cell.fault_wait_since = None
        cell.isolations = count + 1
        section = environ(holder[0]).get("CHAOS_SECTION") if holder is not None else None
        t0, m0 = time.time(), time.monotonic()
        cell.server.isolate(member)
        try:
            time.sleep(PAUSE_S)
        finally:
            cell.server.heal()
        cell.faults.append({"kind": self.kind, "member": member, "start": t0,
                            "end": time.time(), "holder": section,
                            "ms": round((time.monotonic() - m0) * 1000)})
        return random.uniform(*self.gap_s)

    def expected_exit(self, cell, section, rc, t_wall):
        if rc in (0, 75, 65, 76):
            return True
        # a client on the cut-off member: its acquisition or wait times out
        # (no quorum) before the client library moves to another member
        return rc == 69 and self.in_window(cell, t_wall)

    def in_window(self, cell, t_wall):
        return any(f["start"] <= t_wall <= f["end"] + EXIT_GRACE_S + 2.0 for f in cell.faults)


register(ServerIsolated())
