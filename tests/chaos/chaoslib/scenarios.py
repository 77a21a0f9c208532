"""Scenarios: the interface, the registry and the client-side faults.

A scenario decides which wrapper topology a backend runs under, injects its
faults from the cell's loop (inject returns the seconds until the next
call), says which dlock exits it expects, and adds its own acceptance
checks to the common ones (stale_acc = 0, lost_inc = 0, failed = 0).
New scenarios go into a module of their own and register() themselves;
main imports them."""

import os
import random
import select
import signal
import time

from .procs import alive, environ, killpg, proc_state

TTL_S = 2.0
PAUSE_S = 3.0
RESUME_LIMIT_MS = 200.0

REGISTRY = {}
ORDER = []


# the faults a cell's acceptance asks for, and how long a quick cell may run
# past its time to inject them
MIN_FAULTS = 2
FAULT_OVERTIME_S = 20.0


def register(sc):
    REGISTRY[sc.name] = sc
    ORDER.append(sc.name)
    return sc


class Scenario:
    name = ""
    first_fault_s = 1.0
    quick_min_duration_s = 0.0  # a quick cell runs at least this long
    modes = True  # the semaphore and shared clients (modes.py) run in this cell too

    def applies(self, backend):
        """False: the cell is not run (reported as skipped)."""
        return True

    def skip_reason(self, backend):
        return "not for this backend"

    def topology(self, backend):
        return "single"

    def setup(self, cell):
        pass

    def faults_enough(self, cell):
        """False while the cell has not yet injected the faults its
        acceptance asks for: a quick cell then runs on past its time (at
        most FAULT_OVERTIME_S), so a fault that took long under load (a
        postgres restart of 6.7 s) does not fail the cell."""
        return True

    def teardown(self, cell):
        """After the clients stopped (always called once setup ran)."""
        pass

    def client(self, cell, cid):
        """(argv prefix, extra environment) for client CID's loop: how it is
        started (e.g. in a network namespace) and its URL."""
        return [], {}

    def inject(self, cell):
        """Inject one fault; the seconds until the next call."""
        return 3600.0

    def expected_exit(self, cell, section, rc, t_wall):
        """rc of SECTION's dlock, which exited at wall time T_WALL, is not a
        failure: 0, 75 (busy), 65 (the job's write was STALE)."""
        return rc in (0, 75, 65)

    def overlaps_allowed(self, backend):
        """None if overlaps must be 0, else why they may occur."""
        return None

    def acceptance(self, r):
        return []

    def result(self, cell):
        """Entries of the scenario's own for the cell's result."""
        return {}

    def faults_cell(self, r):
        return "-"


class NoFaults(Scenario):
    name = "none"


class Kill9Clients(Scenario):
    name = "kill9-clients"

    def inject(self, cell):
        c = random.choice(cell.clients)
        killpg(c.pid, signal.SIGKILL)
        cell.kills += 1
        c.start()
        return random.uniform(0.7, 1.3)

    def faults_cell(self, r):
        return "%d kills" % r["kills"]


class PauseClient(Scenario):
    name = "pause-client"

    def inject(self, cell):
        return random.uniform(0.7, 1.3) if self.pause_one(cell) else 0.002

    def pause_one(self, cell):
        """Freeze a client whose job is running; False if none was found."""
        order = list(cell.clients)
        random.shuffle(order)
        for c in order:
            h = c.holder()
            if h is None:
                continue
            dpid, jpid = h
            section = environ(dpid).get("CHAOS_SECTION")
            try:
                pidfd = os.pidfd_open(dpid)
            except OSError:
                continue
            try:
                killpg(c.pid, signal.SIGSTOP)   # the loop and dlock
                killpg(jpid, signal.SIGSTOP)    # the job's own process group
                time.sleep(0.05)
                job_frozen = proc_state(jpid) == "T" and proc_state(dpid) == "T"
                time.sleep(PAUSE_S - 0.05)
                t_cont = time.monotonic()
                killpg(c.pid, signal.SIGCONT)
                killpg(jpid, signal.SIGCONT)
                po = select.poll()
                po.register(pidfd, select.POLLIN)
                exit_ms = None
                if po.poll(5000):
                    exit_ms = (time.monotonic() - t_cont) * 1000
                job_gone_ms = None
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    if not alive(jpid):
                        job_gone_ms = (time.monotonic() - t_cont) * 1000
                        break
                    time.sleep(0.001)
            finally:
                os.close(pidfd)
            rc = None
            deadline = time.monotonic() + 2
            while rc is None and time.monotonic() < deadline:
                rc = cell.exit_of(section)
                if rc is None:
                    time.sleep(0.01)
            cell.pauses.append({"section": section, "holder": job_frozen, "rc": rc,
                                "exit_ms": None if exit_ms is None else round(exit_ms, 1),
                                "job_gone_ms": None if job_gone_ms is None else round(job_gone_ms, 1)})
            return True
        return False

    def expected_exit(self, cell, section, rc, t_wall):
        # every paused section: one whose job had just exited when the
        # holder check ran (holder False) still held the lock
        paused = {p["section"] for p in cell.pauses}
        return rc in (0, 75, 65) or (rc == 76 and section in paused)

    def overlaps_allowed(self, backend):
        if backend == "file":
            return "reported, not checked (the frozen holder keeps its flock)"
        return "the frozen job resumes after its lease lapsed (no lease can prevent it)"

    def acceptance(self, r):
        f = []
        holders = [p for p in r["pauses"] if p["holder"]]
        if not holders:
            f.append("no pause hit a client whose job was running")
        for p in holders:
            if p["rc"] != 76 or p["exit_ms"] is None or p["exit_ms"] > RESUME_LIMIT_MS:
                f.append("paused holder %s: dlock exit %s, %s ms after SIGCONT (job gone after %s ms); "
                         "want 76 within %d ms" % (p["section"], p["rc"], p["exit_ms"],
                                                  p["job_gone_ms"], RESUME_LIMIT_MS))
        return f

    def faults_cell(self, r):
        m = r["max_resume_exit_ms"]
        return "%d/%d paused, max %s ms" % (r["holder_pauses"], len(r["pauses"]),
                                             "-" if m is None else "%.0f" % m)


register(NoFaults())
register(Kill9Clients())
register(PauseClient())
