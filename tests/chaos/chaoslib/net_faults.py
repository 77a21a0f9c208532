"""Network faults between the clients and the servers: net-partition-holder,
net-partition-all, net-delay.

Each client loop runs in a network namespace of its own (tests/chaos/netns.py:
a veth pair to the root namespace and a forwarder there to the servers'
loopback ports; nothing of the host's network is touched). dlock reaches
the servers only through its namespace's veth; the job reaches the register
through the root namespace (nsenter), as a resource on another network path
would: a holder cut off from the lock service can still write, and only its
dlock stopping the job in time keeps the register safe.

A partition is a black hole (every packet dropped, no RST, no ICMP), in
both directions or only one: requests lost (to-server), or answers lost
(to-client: the server applies a renewal the client never hears of)."""

import concurrent.futures
import os
import random
import re
import sys
import time

from .procs import environ
from .scenarios import MIN_FAULTS, TTL_S, Scenario, register

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from netns import Netns, cleanup_stale  # noqa: E402

PARTITION_S = 3.0
# a client that was cut off may fail an acquisition (69: its connect or a
# request timed out) or its lease (76) during the fault and for a while
# after it: a connect started just before the heal still times out
# (--connect-timeout 2s), a wait that started before it may end later
GRACE_S = TTL_S + 2.0 + 1.0
NET_BACKENDS = ("redis", "redlock", "zk", "postgres", "etcd")


class NetFault(Scenario):
    gap_s = (1.0, 2.0)
    # clients reach the servers' loopback ports through their veth directly
    # (no forwarder, which would answer the servers' keepalives for a
    # client that is cut off)
    direct = True

    def applies(self, backend):
        return backend in NET_BACKENDS

    def setup(self, cell):
        cleanup_stale()
        cell.env.update(CHAOS_LONG_PCT="20", CHAOS_LONG_MS="3000",
                        CHAOS_JOB_PREFIX="nsenter --net=/proc/%d/ns/net --" % os.getpid())
        if self.direct:
            cell.server.allow_clients("10.254.0.0/16")
        cell.netns = [Netns() for _ in range(cell.client_count())]

        def build(ns):
            ns.setup()
            if self.direct:
                ns.route_loopback()
        # a few at a time: each is a score of ip(8) runs
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(build, cell.netns))
        cell.net_faults = []

    def teardown(self, cell):
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda ns: ns.close(), getattr(cell, "netns", [])))

    def client(self, cell, cid):
        ns = cell.netns[cid]
        return ns.exec_prefix(), {"CHAOS_URL": ns.url(cell.url)}

    def holder(self, cell):
        """(cid, section) of a client whose job runs now, or None."""
        order = list(cell.clients)
        random.shuffle(order)
        for c in order:
            h = c.holder()
            if h:
                return c.cid, environ(h[0]).get("CHAOS_SECTION")
        return None

    def record(self, cell, kind, cids, t0, holder, **extra):
        f = {"kind": kind, "cids": cids, "start": t0, "end": time.time(),
             "holder": holder}
        f.update(extra)
        cell.net_faults.append(f)
        cell.faults.append({"kind": kind, "member": ",".join(map(str, cids)),
                            "start": t0, "end": f["end"], "holder": holder[1] if holder else None,
                            "ms": round((f["end"] - t0) * 1000), **extra})

    def in_window(self, cell, section, t_wall):
        cid = int(section[1:section.index("g")])
        return any(cid in f["cids"] and f["start"] <= t_wall <= f["end"] + GRACE_S
                   for f in cell.net_faults)

    def expected_exit(self, cell, section, rc, t_wall):
        if rc in (0, 75, 65):
            return True
        return rc in (69, 76) and self.in_window(cell, section, t_wall)

    def skip_reason(self, backend):
        return "no network (local kernel locks)"

    def result(self, cell):
        return {"net_stops": self.stops(cell)}

    def stops(self, cell):
        """Per partition that hit a holder: how long after the partition
        began its job last touched the register (the job's end; its dlock
        may exit later, e.g. after a release that could not get through) and
        the dlock's exit code."""
        lines = {s: rc for s, rc, _ in cell.exit_lines()}
        out = []
        for f in cell.net_faults:
            if not f["holder"]:
                continue
            sid = f["holder"][1]
            rec = cell.records.get(sid, {})
            end = rec.get("end_wall") or rec.get("write_wall") or rec.get("read_wall")
            out.append({"section": sid, "direction": f.get("direction"), "rc": lines.get(sid),
                        "job_end_ms": None if end is None else round((end - f["start"]) * 1000)})
        return out

    def faults_enough(self, cell):
        return sum(1 for x in cell.faults if x["holder"]) >= MIN_FAULTS

    def acceptance(self, r):
        f = []
        hits = [x for x in r["server_faults"] if x["holder"]]
        if len(hits) < MIN_FAULTS:
            f.append("only %d network faults hit a running job (want at least %d)" % (len(hits), MIN_FAULTS))
        for s in r.get("net_stops", []):
            # the lease of a holder cut off at time P was last confirmed
            # before P: its job must be gone by P + T
            if s["job_end_ms"] is None:
                f.append("partitioned holder %s: not in the register's records" % s["section"])
            elif s["job_end_ms"] > TTL_S * 1000:
                f.append("partitioned holder %s (%s, dlock exit %s): its job touched the register "
                         "%d ms after the partition began (want <= %d ms)"
                         % (s["section"], s["direction"], s["rc"], s["job_end_ms"], TTL_S * 1000))
        return f

    def faults_cell(self, r):
        fs = r["server_faults"]
        stops = [s["job_end_ms"] for s in r.get("net_stops", []) if s["rc"] == 76]
        return "%d %s (%d hit)%s" % (len(fs), self.kind, sum(1 for x in fs if x["holder"]),
                                     " stop<=%.1fs" % (max(stops) / 1000) if stops else "")


class PartitionHolder(NetFault):
    name = "net-partition-holder"
    kind = "cut"

    def targets(self, cell, holder):
        """(client ids to cut off, direction)."""
        return [holder[0]], random.choice(("both", "to-server", "to-client"))

    def inject(self, cell):
        h = self.holder(cell)
        if h is None:
            return 0.005
        cids, direction = self.targets(cell, h)
        t0 = time.time()
        for c in cids:
            cell.netns[c].partition(direction)
        try:
            time.sleep(PARTITION_S)
        finally:
            for c in cids:
                cell.netns[c].heal()
        self.record(cell, self.kind, cids, t0, h, direction=direction)
        return random.uniform(*self.gap_s)


class PartitionAll(PartitionHolder):
    name = "net-partition-all"
    kind = "cut all"

    def targets(self, cell, holder):
        return list(range(len(cell.netns))), "both"


class Delay(NetFault):
    """Delayed in the forwarder (this kernel has no netem)."""
    name = "net-delay"
    kind = "delayed"
    direct = False
    # one-way, each direction: round trips up to 100 ms longer, 5% of the
    # 2 s lease and half Redlock's per-node answer time (max(T/20, 200ms));
    # a node slower than that is, by design, a node that did not answer.
    # (Up to 160 ms, the other half was not enough for fifteen dlocks, the
    # forwarders and a second test on two busy cores: CI saw a Redlock
    # acquisition with no node answering in time.)
    DELAY_MS = (10, 50)
    DELAY_S = 3.0

    def inject(self, cell):
        h = self.holder(cell)
        if h is None:
            return 0.005
        ms = random.randint(*self.DELAY_MS)
        t0 = time.time()
        for ns in cell.netns:
            ns.delay(ms)
        try:
            time.sleep(self.DELAY_S)
        finally:
            for ns in cell.netns:
                ns.delay(0)
        self.record(cell, self.kind, list(range(len(cell.netns))), t0, h, delay_ms=ms)
        return random.uniform(*self.gap_s)

    def expected_exit(self, cell, section, rc, t_wall):
        # a slower network must cost no lock and no acquisition. Only a
        # client's very first acquisition, ended before any delay, may be
        # 69: fifteen dlocks, their shells and namespaces start at once on
        # two cores with the forwarders, and a first Redlock attempt that
        # no node answers within its 200 ms is 69 by design (CI, twice, at
        # a cell's start, never during or after a delay)
        if rc in (0, 75, 65):
            return True
        first = min((f["start"] for f in cell.net_faults), default=None)
        if rc == 69 and re.match(r"^c\d+g1-1$", section) and (first is None or t_wall < first):
            cell.notes.append("%s: a first acquisition at the cell's start exited 69, before any delay" % section)
            return True
        return False

    def result(self, cell):
        return {}

    def faults_cell(self, r):
        fs = r["server_faults"]
        return "%d %s (%d hit)" % (len(fs), self.kind, sum(1 for x in fs if x["holder"]))


register(PartitionHolder())
register(PartitionAll())
register(Delay())
