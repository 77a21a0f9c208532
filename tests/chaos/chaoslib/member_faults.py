"""server-isolated: one member of the zk ensemble or etcd cluster cut off
from its peers while its clients still reach it (Jepsen's isolated-node
nemesis; a member that lost its quorum).

The wrapper runs with --peer-links: members reach each other only through
scripts/peer_links.py, which black-holes every link of the isolated member
(no FIN, no RST); clients connect to the members directly. Each fault picks
the member that a running holder's dlock is connected to (found from its
socket; the leader if none is found), a follower or the leader as the
clients spread: a follower cut off from its leader still answers reads
from its memory, a leader cut off from its followers still answers a sync
by itself until it steps down. Never the member the zk observer reads from:
it would see that member's stale state (etcd's observer reads
linearizably, from any member that can answer)."""

import os
import random
import time

from .procs import children, environ
from .scenarios import PAUSE_S, register
from .server_faults import EXIT_GRACE_S, ServerFault


# a job that will run on this long: past the moment the leader expires the
# session of a holder cut off now (T = 2 s)
LONG_JOB_LEFT_S = 2.5


def job_age(pid):
    """Seconds since process PID started (0 if unknown)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        return up - start / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def job_left(pid):
    """Seconds the job PID (tests/chaos/job.sh) will still sleep before it
    writes: its `sleep D` child's D minus that child's age (0 if none)."""
    for child in children(pid):
        try:
            with open("/proc/%d/cmdline" % child, "rb") as f:
                argv = f.read().split(b"\0")
            if argv[0].endswith(b"sleep") and len(argv) > 1:
                return float(argv[1]) - job_age(child)
        except (OSError, ValueError):
            continue
    return 0.0


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
    gap_s = (0.2, 0.4)
    first_fault_s = 0.3
    # two faults of 3 s each, a wait for a suitable holder before each
    # (with half the jobs 0-6 s long, none may run on a member that can be
    # cut off for seconds) and a leader lookup after an isolation (slow
    # while the members elect) do not always fit in 8 s, nor in 12
    quick_min_duration_s = 16.0

    def applies(self, backend):
        return backend in ("zk", "etcd")

    def skip_reason(self, backend):
        return "no ensemble or cluster (zk and etcd only)"

    def topology(self, backend):
        return "cluster-links"

    def setup(self, cell):
        # half the jobs hold the lock up to 6 s: a cut-off holder's job then
        # runs past the moment the leader expires its lease
        cell.env.update(CHAOS_LONG_PCT="50", CHAOS_LONG_MS="6000")

    def inject(self, cell):
        """Cut off the member a running holder's dlock talks to. Two faults
        in three want a holder on a follower (the member answers reads from
        memory while the leader expires the holder's session and a waiter on
        another member takes the lock), the third a holder on the leader;
        the holder's job must still have LONG_JOB_LEFT_S to run. After
        3 s of looking (less near the end of the cell, so that a quick cell
        of 8 s gets two faults) any holder will do, 0.5 s later the leader
        is cut off."""
        now = time.monotonic()
        if not hasattr(cell, "isolation_end"):
            cell.isolation_end = now - self.first_fault_s + cell.duration
        since = getattr(cell, "fault_wait_since", None)
        if since is None:
            since = cell.fault_wait_since = now
            cell.isolation_leader = None
        # up to 3 s for a suitable holder, less near the end of the cell
        choosy = min(3.0, max(0.2, cell.isolation_end - 0.6 - since))
        count = getattr(cell, "isolations", 0)
        # asked once per fault (etcd: an etcdctl call), not at every look
        leader = cell.isolation_leader = cell.isolation_leader or cell.server.target()
        if leader is None:
            return 0.2
        want_leader = count % 3 == 2
        ports = cell.server.client_ports()
        # the observer (a kazoo session in this process) must keep an
        # up-to-date view: its member is never cut off
        spared = connected_member(os.getpid(), ports) if cell.backend == "zk" else None
        holder = member = None
        for c in cell.clients:
            h = c.holder()
            if not h:
                continue
            m = connected_member(h[0], ports)
            if m is None or m == spared:
                continue
            suits = job_left(h[1]) >= LONG_JOB_LEFT_S and (m == leader) == want_leader
            if suits or now - since >= choosy:
                holder, member = h, m
                break
        if holder is None:
            # No holder to cut off yet: look on while the faults still to
            # come fit in the cell, so that one hits a running job.
            to_come = max(1, 2 - count) * (PAUSE_S + 1.5)
            if now - since < choosy + 0.5 or cell.isolation_end - now > to_come:
                return 0.005
            member = leader if leader != spared else random.choice(
                [m for m in range(1, len(ports) + 1) if m != spared])
        cell.fault_wait_since = None
        cell.isolations = count + 1
        via = "leader" if member == leader else "follower"
        section = environ(holder[0]).get("CHAOS_SECTION") if holder is not None else None
        t0, m0 = time.time(), time.monotonic()
        cell.server.isolate(member)
        try:
            time.sleep(PAUSE_S)
        finally:
            cell.server.heal()
        cell.faults.append({"kind": self.kind, "member": member, "start": t0,
                            "end": time.time(), "holder": section, "role": via,
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
