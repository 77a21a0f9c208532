"""One backend x scenario cell: the register, K client loops, the fault
loop and the result."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from . import modes
from .acceptance import register_failures
from .observer import Observer, outlived
from .procs import alive, children, job_children, killpg, marked
from .scenarios import FAULT_OVERTIME_S

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DLOCK = os.environ.get("DLOCK", os.path.join(ROOT, "build", "dlock"))
JOB = os.path.join(ROOT, "tests", "chaos", "job.sh")
REGISTER = os.path.join(ROOT, "tests", "chaos", "register.py")

# A job's last register access (its connection's close when it is killed)
# and the backend's drop of its lock can come from the same exit: the
# observer's "gone" is later than the drop, the register stamps the close a
# little after it happened
OUTLIVED_TOLERANCE_MS = 5.0
# --long: critical sections per backend, at least
LONG_SECTIONS = 10000

CLIENT_LOOP = r'''
i=0
while [ ! -e "$CHAOS_STOPFILE" ]; do
  i=$((i+1))
  export CHAOS_SECTION="c${CHAOS_CID}g${CHAOS_GEN}-$i"
  "$CHAOS_DLOCK" -q -b "$CHAOS_URL" run "$CHAOS_NAME" $CHAOS_MODE_ARGS --wait 10s --ttl 2s -- $CHAOS_JOB_PREFIX "$CHAOS_JOB"
  echo "$CHAOS_SECTION $? $EPOCHREALTIME" >> "$CHAOS_EXITS"
done
'''


def register_stats(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"STATS\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return json.loads(buf)


class Client:
    def __init__(self, cell, cid):
        self.cell, self.cid, self.gen = cell, cid, 0
        self.pid = None
        self.start()

    def start(self):
        self.gen += 1
        prefix, extra = self.cell.scenario.client(self.cell, self.cid)
        env = dict(self.cell.env, CHAOS_CID=str(self.cid), CHAOS_GEN=str(self.gen))
        env.update(self.cell.mode_env(self.cid))
        env.update(extra)
        with open(self.cell.clientlog, "ab") as err:
            p = subprocess.Popen(prefix + ["bash", "-c", CLIENT_LOOP], env=env, cwd=self.cell.dir,
                                 stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                 start_new_session=True)
        self.pid = p.pid  # also the process group id
        p.returncode = 0  # the Reaper reaps it; keep Popen from trying

    def holder(self):
        """(dlock pid, job pid) if this client's dlock is running its job now."""
        for d in children(self.pid):
            for j in job_children(d):
                if alive(j):
                    return d, j
        return None


class Cell:
    def __init__(self, reaper, backend, url, scenario, args, extra_env, server=None):
        self.reaper, self.backend, self.url = reaper, backend, url
        self.scenario = scenario          # a scenarios.Scenario
        self.server = server              # a backends.ServerControl, or None
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="dlock-chaos-%s-%s-" % (backend, scenario.name))
        self.marker = uuid.uuid4().hex
        self.stopfile = os.path.join(self.dir, "stop")
        self.exits = os.path.join(self.dir, "exits")
        self.clientlog = os.path.join(self.dir, "clients.log")
        self.report_path = os.path.join(self.dir, "register.json")
        self.env = dict(os.environ, **extra_env)
        self.env.update(CHAOS_CELL=self.marker, CHAOS_STOPFILE=self.stopfile,
                        CHAOS_EXITS=self.exits, CHAOS_DLOCK=DLOCK, CHAOS_URL=url,
                        CHAOS_NAME="chaos-" + scenario.name, CHAOS_JOB=JOB,
                        CHAOS_JOB_PREFIX="", CHAOS_MODE="", CHAOS_MODE_ARGS="")
        # (mode, role, dlock arguments) per client id: the exclusive
        # clients, then the semaphore's and the shared lock's (modes.py)
        self.specs = modes.client_specs(backend, scenario, args.clients)
        self.modes = modes.modes_for(backend, scenario)
        self.mode_ports = {}
        self.register_pids = []
        self.kills = 0
        self.term_mono = None  # when stop_all sent SIGTERM to what was left
        self.pauses = []   # pause-client: section, holder, rc, exit_ms, job_gone_ms
        self.faults = []   # server faults: kind, member, start/end wall time, ms
        self.notes = []

    def client_count(self):
        return len(self.specs)

    def mode_report_path(self, mode):
        return os.path.join(self.dir, "register-%s.json" % mode)

    def mode_env(self, cid):
        """The environment of client CID's mode (empty: exclusive)."""
        mode, role, extra = self.specs[cid]
        if mode is None:
            return {}
        return {"CHAOS_MODE": role, "CHAOS_MODE_ARGS": extra,
                "CHAOS_NAME": "%s-%s" % (self.env["CHAOS_NAME"], mode),
                "CHAOS_REGISTER_PORT": str(self.mode_ports[mode])}

    def _register(self, tag, argv):
        portfile = os.path.join(self.dir, "port" + tag)
        p = subprocess.Popen([sys.executable, REGISTER, "--port-file", portfile] + argv,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             start_new_session=True)
        p.returncode = 0
        self.register_pids.append(p.pid)
        return p.pid, portfile

    def start_register(self):
        started = [self._register("", ["--report", self.report_path])]
        for m in self.modes:
            started.append(self._register("-" + m, ["--report", self.mode_report_path(m), "--mode", m,
                                                    "--limit", str(modes.SEM_LIMIT)]))
        ports = []
        deadline = time.monotonic() + 10
        for pid, portfile in started:
            while not os.path.exists(portfile):
                if time.monotonic() > deadline or self.reaper.exited(pid):
                    raise RuntimeError("the register did not start")
                time.sleep(0.02)
            with open(portfile) as f:
                ports.append(int(f.read()))
        self.port = ports[0]
        self.mode_ports = dict(zip(self.modes, ports[1:]))
        self.env["CHAOS_REGISTER_PORT"] = str(self.port)

    def run(self):
        t_start = time.monotonic()
        self.scenario.setup(self)
        try:
            return self._run(t_start)
        finally:
            self.scenario.teardown(self)

    def _run(self, t_start):
        self.start_register()
        # the backend's own view of the lock, from the root namespace
        self.observer = Observer(self.backend, self.url, self.env["CHAOS_NAME"],
                                 {k: v for k, v in self.env.items() if k.startswith("DLOCK_")}).start()
        self.clients = []
        try:
            self.clients = [Client(self, i) for i in range(self.client_count())]
            self.loop()
        finally:
            # also after a scenario's error: no loop or register may outlive the cell
            self.stop_wall = time.time()
            self.stop_all()
            self.observations = self.observer.stop()
        self.elapsed = time.monotonic() - t_start
        return self.result()

    def loop(self):
        """Injects the scenario's faults until the cell's time (quick) or
        its number of sections (long) is reached."""
        quick = not self.args.long
        target = None if quick else (self.args.target or
                                     -(-LONG_SECTIONS // (self.args.cells or len(self.args.scenario_list))))
        duration = 1800.0 if self.args.target else self.args.duration  # a top-up runs to its target
        if quick:
            # a scenario whose faults take long (a 3 s isolation, then a
            # leader election) may need more than 8 s for its two faults
            duration = max(duration, self.scenario.quick_min_duration_s)
        self.duration = duration
        t_end = time.monotonic() + duration
        next_fault = time.monotonic() + self.scenario.first_fault_s
        next_stats = time.monotonic() + 1.0
        while True:
            self.reaper.reap()
            now = time.monotonic()
            if now >= t_end and (not quick or now >= t_end + FAULT_OVERTIME_S or
                                 self.scenario.faults_enough(self)):
                break
            if target is not None and now >= next_stats:
                next_stats = now + 1.0
                if register_stats(self.port)["sections"] >= target:
                    break
            if now >= next_fault:
                delay = self.scenario.inject(self)
                next_fault = time.monotonic() + delay
                if delay < 0.01:
                    continue
            time.sleep(0.01)

    def exit_lines(self):
        try:
            with open(self.exits) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            parts = line.split()
            if len(parts) == 3:
                out.append((parts[0], int(parts[1]), float(parts[2])))
        return out

    def exit_of(self, section):
        for s, rc, _ in self.exit_lines():
            if s == section:
                return rc
        return None

    def stop_all(self):
        # The loops end after their current dlock; a job running now gets
        # 2 s to finish, then every loop's process group gets SIGTERM (a
        # waiting dlock ends its wait, a holder's dlock stops its job and
        # releases), and whatever is left after 5 s SIGKILL. Exits after
        # stop_wall are not counted.
        open(self.stopfile, "w").close()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            if all(self.reaper.exited(c.pid) for c in self.clients):
                break
            time.sleep(0.05)
        for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
            left = marked(self.marker)
            if not left:
                break
            if sig == signal.SIGTERM:
                self.term_mono = time.monotonic()
            for c in self.clients:
                killpg(c.pid, sig)
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + grace
            while marked(self.marker) and time.monotonic() < deadline:
                time.sleep(0.05)
                self.reaper.reap()
            self.reaper.reap()
        left = marked(self.marker)
        if left:
            self.notes.append("processes left after SIGKILL: %s" % left)
        for pid in self.register_pids:
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while not all(self.reaper.exited(p) for p in self.register_pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.reaper.reap()

    def result(self):
        with open(self.report_path) as f:
            rep = json.load(f)
        self.records = {x["id"]: x for x in rep["records"]}
        mode_reps = {}
        for m in self.modes:
            with open(self.mode_report_path(m)) as f:
                mode_reps[m] = json.load(f)
            # every section's record (a partitioned holder may be a mode's)
            self.records.update({x["id"]: x for x in mode_reps[m]["records"]})
        out = outlived(rep["records"], self.observations, term_mono=self.term_mono)
        # exits per mode (None: the exclusive clients): seen, unexpected, failed
        tally = {m: [{}, {}, 0] for m in (None,) + tuple(self.modes)}
        for s, rc, t in self.exit_lines():
            if t > self.stop_wall:
                continue
            try:
                mode = self.specs[int(s[1:s.index("g")])][0]
            except (ValueError, IndexError):
                mode = None
            codes, unexpected = tally[mode][0], tally[mode][1]
            codes[rc] = codes.get(rc, 0) + 1
            if self.scenario.expected_exit(self, s, rc, t):
                continue
            tally[mode][2] += 1
            unexpected[rc] = unexpected.get(rc, 0) + 1
        codes, unexpected, failed = tally[None]
        holders = [p for p in self.pauses if p["holder"]]
        rcs = {s: rc for s, rc, _ in self.exit_lines()}
        for f in self.faults:
            f["holder_rc"] = rcs.get(f.get("holder"))
        res = {
            "backend": self.backend, "scenario": self.scenario.name,
            "seconds": round(self.elapsed, 1),
            "sections": rep["sections"], "overlaps": rep["overlaps"],
            "overlaps_both_wrote": rep["overlaps_both_wrote"],
            "stale_acc": rep["stale_writes_accepted"],
            "stale_rej": rep["stale_writes_rejected"],
            "lost_inc": rep["lost_increments"],
            "accepted_writes": rep["accepted_writes"], "final_value": rep["final_value"],
            "longest_ms": rep["longest_overlap_ms"],
            "outlived_ms": out["max_ms"], "outlived": out,
            "observer_polls": self.observations["poll_ms"]["polls"],
            "observer_errors": self.observations["errors"],
            "open_ovl": rep["open_overlaps"],
            "open_ms": rep["longest_open_overlap_ms"],
            "failed": failed, "exit_codes": codes, "unexpected_codes": unexpected,
            "kills": self.kills,
            "pauses": self.pauses,
            "holder_pauses": len(holders),
            "max_resume_exit_ms": max((p["exit_ms"] or 1e9 for p in holders), default=None),
            "server_faults": self.faults,
            "overlaps_allowed": self.scenario.overlaps_allowed(self.backend),
            "overlap_pairs": rep["overlap_pairs"][:5],
            "notes": self.notes, "dir": self.dir,
        }
        res.update(self.scenario.result(self))
        res["failures"] = acceptance(res, self.scenario)
        res["modes"] = [modes.row(self, m, mode_reps[m], tally[m][2], tally[m][0], tally[m][1],
                                  res["overlaps_allowed"], []) for m in self.modes]
        if any_failures(res) or os.environ.get("CHAOS_KEEP"):
            res["notes"].append("work directory kept: %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        return res


def any_failures(r):
    """Whether the cell R or one of its mode rows failed."""
    return bool(r["failures"] or any(m["failures"] for m in r.get("modes", [])))


def acceptance(r, scenario):
    f = register_failures(r, "overlapping sections")
    if r["observer_polls"] == 0:
        f.append("the observer never got an answer from the backend: %s" % r["observer_errors"])
    elif r["overlaps_allowed"] is None and (r["outlived_ms"] or 0) > OUTLIVED_TOLERANCE_MS:
        w = r["outlived"]["worst"][0]
        f.append("a job outlived its lease by %.1f ms (section %s, fence %s; %d sections over %s ms)"
                 % (w["ms"], w["id"], w["fence"], r["outlived"]["sections"], OUTLIVED_TOLERANCE_MS))
    return f + scenario.acceptance(r)
