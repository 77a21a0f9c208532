"""Server-side faults: server-pause, server-restart, server-restart-persist.

Each fault hits one member (backends.ServerControl.target: the leader of
the 3-member zk ensemble or etcd cluster, a random node of the 3 Redlock
nodes, the only server of redis and postgres) and is logged in cell.faults
with its wall-clock window. A 76 is expected anywhere in these cells (a
holder whose server went away stops its job); a 69 (server unreachable,
no quorum) only from the single-server backends, only while a fault lasts
or within EXIT_GRACE_S after it."""

import random
import time

from .procs import environ
from .scenarios import MIN_FAULTS, PAUSE_S, TTL_S, Scenario, register

EXIT_GRACE_S = TTL_S + 1.0
# etcd server-pause: how long a job may run on after the old leader revoked
# its lease (the holder learns of it from its watch)
ETCD_REVOKED_STOP_MS = 100
SERVER_BACKENDS = ("redis", "redlock", "zk", "postgres", "etcd")
# 69 is expected in a fault's window from: the single servers, and zk,
# where a leader loss outlasts the 2 s session (syncLimit ~2 s + election:
# waiting sessions expire) and no member serves during the election
# ("connection refused" on every member)
EXIT69_BACKENDS = ("redis", "postgres", "zk")


class ServerFault(Scenario):
    kind = ""
    gap_s = (1.0, 2.0)

    def applies(self, backend):
        return backend in SERVER_BACKENDS

    def skip_reason(self, backend):
        return "no server to fault"

    def topology(self, backend):
        return "cluster" if backend in ("zk", "etcd") else "single"

    def setup(self, cell):
        # a fifth of the jobs hold the lock up to 3 s, across renewals and past the ttl
        cell.env.update(CHAOS_LONG_PCT="20", CHAOS_LONG_MS="3000")

    def inject(self, cell):
        """Fault one member as soon as a client's job runs (waiting at most
        2 s for one)."""
        now = time.monotonic()
        since = getattr(cell, "fault_wait_since", None)
        if since is None:
            since = cell.fault_wait_since = now
        holder = None
        for c in cell.clients:
            h = c.holder()
            if h:
                holder = environ(h[0]).get("CHAOS_SECTION")
                break
        if holder is None and now - since < 2.0:
            return 0.005
        member = cell.server.target()
        if member is None:          # an election is still going on
            return 0.2
        cell.fault_wait_since = None
        t0, m0 = time.time(), time.monotonic()
        self.fault(cell, member)
        cell.faults.append({"kind": self.kind, "member": member, "start": t0,
                            "end": time.time(), "holder": holder,
                            "ms": round((time.monotonic() - m0) * 1000)})
        return random.uniform(*self.gap_s)

    def fault(self, cell, member):
        raise NotImplementedError

    def in_window(self, cell, t_wall):
        return any(f["start"] <= t_wall <= f["end"] + EXIT_GRACE_S for f in cell.faults)

    def expected_exit(self, cell, section, rc, t_wall):
        if rc in (0, 75, 65, 76):
            return True
        return rc == 69 and cell.backend in EXIT69_BACKENDS and self.in_window(cell, t_wall)

    def faults_enough(self, cell):
        return len(cell.faults) >= MIN_FAULTS and any(x["holder"] for x in cell.faults)

    def acceptance(self, r):
        f = []
        if len(r["server_faults"]) < MIN_FAULTS:
            f.append("only %d server faults (want at least %d)" % (len(r["server_faults"]), MIN_FAULTS))
        if not any(x["holder"] for x in r["server_faults"]):
            f.append("no server fault hit while a job was running")
        return f

    def faults_cell(self, r):
        fs = r["server_faults"]
        members = sorted({f["member"] for f in fs})
        return "%d %s (%d hit) m%s %.1fs" % (
            len(fs), self.kind, sum(1 for f in fs if f["holder"]),
            ",".join(map(str, members)), max((f["ms"] for f in fs), default=0) / 1000)


class ServerPause(ServerFault):
    name = "server-pause"
    kind = "paused"

    def fault(self, cell, member):
        cell.server.pause(member)
        try:
            time.sleep(PAUSE_S)
        finally:
            cell.server.resume(member)

    def overlaps_allowed(self, backend):
        if backend == "etcd":
            return ("etcd 3.4.23: the old leader, resumed, revokes leases the new leader kept alive "
                    "(etcd issue #15247); the holder's watch stops its job within milliseconds, "
                    "a waiter may start in that time")
        return None

    def acceptance(self, r):
        f = super().acceptance(r)
        if r["backend"] == "etcd" and (r["outlived_ms"] or 0) > ETCD_REVOKED_STOP_MS:
            w = r["outlived"]["worst"][0]
            f.append("a job outlived its revoked lease by %.1f ms (section %s, fence %s; want <= %d ms: "
                     "the holder's watch on its key did not stop it)" % (w["ms"], w["id"], w["fence"],
                                                                        ETCD_REVOKED_STOP_MS))
        return f


class ServerRestart(ServerFault):
    name = "server-restart"
    kind = "restarts"

    def fault(self, cell, member):
        cell.server.kill_restart(member)

    def overlaps_allowed(self, backend):
        if backend == "redis":
            return ("the server restarts empty (with-redis runs it without persistence): "
                    "it forgets the lock while the job runs, the documented Redis caveat")
        if backend == "redlock":
            return ("a node restarts empty at once: it can be part of the holder's majority "
                    "and of the next one (documented under 'Is Redlock safe?')")
        return None


class ServerRestartPersist(ServerRestart):
    name = "server-restart-persist"

    def applies(self, backend):
        return backend in ("redis", "redlock")

    def skip_reason(self, backend):
        return "redis/redlock only"

    def setup(self, cell):
        super().setup(cell)
        cell.server.enable_persistence()

    def teardown(self, cell):
        cell.server.disable_persistence()

    def overlaps_allowed(self, backend):
        return None


register(ServerPause())
register(ServerRestart())
register(ServerRestartPersist())
