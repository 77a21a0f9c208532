#!/usr/bin/env python3
"""Self-check of tests/chaos/chaoslib/observer.py on one backend, run inside
the backend's wrapper (the file backend needs none):

    python3 tests/chaos/observer_check.py file
    scripts/with-redis -- python3 tests/chaos/observer_check.py redis
    scripts/with-redis --nodes 3 -- python3 tests/chaos/observer_check.py redlock
    scripts/with-zookeeper -- python3 tests/chaos/observer_check.py zk
    scripts/with-postgres -- python3 tests/chaos/observer_check.py postgres
    scripts/with-etcd -- python3 tests/chaos/observer_check.py etcd

With tests/chaos/register.py, build/dlock (or $DLOCK) and one Observer on
lock chaos-observer-check (--ttl 2s everywhere):

  a  normal: 3 contending clients x 3 sections (READ, hold 0-0.6 s, WRITE):
     every fence of a job that held >= 50 ms observed, outlived 0
  b  frozen holder: its dlock and its job SIGSTOPped for 3 s (> the lease)
     while a second client waits, then SIGCONT: redis, redlock, zk, etcd
     drop the fence while the job is frozen (gone before SIGCONT, a
     positive outlived: the frozen job's connection closes when dlock
     kills it after resuming); file and postgres keep it (the flock, the
     session: the kernel still answers keepalives), outlived 0
  c  forced release (dlock release --force) under a running job: the
     observer sees the fence gone within 0.3 s of it; outlived is the time
     the holder's dlock took to notice and stop its job (reported)
  d  (servers only) the server SIGSTOPped 0.5 s, then kill -9 and restarted
     (one Redlock node), then a normal section: the observer came back and
     observed it, outlived 0

Prints the observations and outlived() of each phase; exit 0 when all
checks hold, 1 otherwise."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "chaos"))
from chaoslib.backends import ServerControl, backend_url  # noqa: E402
from chaoslib.procs import job_children  # noqa: E402
from chaoslib.observer import Observer, last_access, outlived  # noqa: E402

DLOCK = os.environ.get("DLOCK", os.path.join(ROOT, "build", "dlock"))
REGISTER = os.path.join(ROOT, "tests", "chaos", "register.py")
NAME = "chaos-observer-check"
PAUSE_S = 3.0
LAPSING = ("redis", "redlock", "zk", "etcd")   # a frozen holder's lease lapses

JOB = r'''
exec 3<>"/dev/tcp/127.0.0.1/$CHAOS_REGISTER_PORT" || exit 69
printf 'READ %s %s\n' "$DLOCK_FENCE" "$CHAOS_SECTION" >&3
IFS= read -r -t 5 v <&3 || exit 69
sleep "$CHAOS_HOLD_S"
printf 'WRITE %s %s %s\n' $((${v%$'\r'} + 1)) "$DLOCK_FENCE" "$CHAOS_SECTION" >&3
IFS= read -r -t 5 r <&3 || exit 69
[ "${r%$'\r'}" = OK ] || exit 65
'''

failures = []


def check(ok, what):
    print("  %s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        failures.append(what)


class Check:
    def __init__(self, backend):
        self.backend = backend
        self.url, self.extra_env, self.tmpdir = backend_url(backend)
        self.dir = tempfile.mkdtemp(prefix="observer-check-")
        self.report = os.path.join(self.dir, "register.json")
        portfile = os.path.join(self.dir, "port")
        self.register = subprocess.Popen([sys.executable, REGISTER, "--port-file", portfile, "--report",
                                          self.report], stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not os.path.exists(portfile) and time.monotonic() < deadline:
            time.sleep(0.02)
        with open(portfile) as f:
            self.port = int(f.read())
        self.env = dict(os.environ, **self.extra_env)
        self.env["CHAOS_REGISTER_PORT"] = str(self.port)
        self.obs = Observer(backend, self.url, NAME, self.extra_env)

    def client(self, section, hold, wait="10s"):
        env = dict(self.env, CHAOS_SECTION=section, CHAOS_HOLD_S="%.3f" % hold)
        return subprocess.Popen([DLOCK, "-q", "-b", self.url, "run", NAME, "--wait", wait, "--ttl", "2s", "--",
                                 "bash", "-c", JOB], env=env, stdin=subprocess.DEVNULL,
                                start_new_session=True)

    def wait_new_fence(self, before, timeout=8.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            new = self.obs.held_now() - before
            if new:
                return max(new)
            time.sleep(0.005)
        return None

    def known(self):
        return {r["fence"] for r in self.obs.observations()["fences"]}

    def records(self):
        self.register.send_signal(signal.SIGTERM)
        self.register.wait(30)
        with open(self.report) as f:
            return json.load(f)

    # ------------------------------------------------------------ phases

    def phase_a(self):
        holds = [0.0, 0.05, 0.3, 0.6]
        rcs, self.holds = [], {}

        def loop(c):
            for i in range(3):
                section, hold = "a-c%d-%d" % (c, i), holds[(c + i) % 4]
                self.holds[section] = hold
                rcs.append(self.client(section, hold).wait(60))
        threads = [threading.Thread(target=loop, args=(c,)) for c in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.rc_a = rcs

    def phase_b(self):
        before = self.known()
        holder = self.client("b-holder", 2.5)
        f = self.wait_new_fence(before)
        time.sleep(0.3)                                   # the job has READ
        job = next(iter(job_children(holder.pid)), None)
        self.b = {"fence": f, "job": job}
        if f is None or job is None:
            self.b.update(rc=holder.wait(30))
            return
        jpg = os.getpgid(job)
        os.killpg(holder.pid, signal.SIGSTOP)
        os.killpg(jpg, signal.SIGSTOP)
        self.b["t_stop"] = time.time()
        taker = self.client("b-taker", 0.1)
        time.sleep(PAUSE_S)
        self.b["t_cont"] = time.time()
        for pg in (holder.pid, jpg):
            try:
                os.killpg(pg, signal.SIGCONT)
            except ProcessLookupError:    # dlock, resumed first, killed its job
                pass
        self.b["rc"], self.b["taker_rc"] = holder.wait(30), taker.wait(30)

    def phase_c(self):
        before = self.known()
        holder = self.client("c-holder", 3.0)
        f = self.wait_new_fence(before)
        time.sleep(0.3)
        self.c = {"fence": f, "t_force": time.time()}
        p = subprocess.run([DLOCK, "-q", "-b", self.url, "release", NAME, "--force"], env=self.env,
                           stdout=subprocess.DEVNULL)
        self.c["t_forced"], self.c["force_rc"] = time.time(), p.returncode
        self.c["rc"] = holder.wait(30)

    def phase_d(self):
        server = ServerControl(self.backend)
        member = 1
        server.pause(member)
        time.sleep(0.5)
        server.resume(member)
        time.sleep(0.2)
        t0 = time.time()
        server.kill_restart(member)
        self.d = {"restart_s": round(time.time() - t0, 2)}
        polls = self.obs.observations()["poll_ms"]["polls"]
        while self.obs.observations()["poll_ms"]["polls"] < polls + 3 and time.time() < t0 + 20:
            time.sleep(0.01)                              # until the observer answers again
        self.d["observer_back_s"] = round(time.time() - t0, 2)
        before = self.known()
        p = self.client("d-after", 0.3, wait="20s")
        self.d["rc"] = p.wait(60)
        self.d["fence"] = max(self.known() - before, default=None)

    # ------------------------------------------------------------ verdict

    def run(self):
        cpu0, t0 = os.times(), time.monotonic()
        self.obs.start()
        time.sleep(0.3)
        self.phase_a()
        self.phase_b()
        self.phase_c()
        if self.backend != "file":
            self.phase_d()
        time.sleep(0.3)
        ob = self.obs.stop()
        cpu1, wall = os.times(), time.monotonic() - t0
        rep = self.records()
        recs = {r["id"]: r for r in rep["records"]}
        fences = {r["fence"]: r for r in ob["fences"]}
        print("== %s (%s), lock %s/%s" % (self.backend, self.url, ob["namespace"], NAME))
        print("observer: %d fences, poll_ms %s, errors %s, thread cpu %.2f s, process cpu %.2f s over %.1f s"
              % (len(ob["fences"]), ob["poll_ms"], ob["errors"], ob["cpu_s"],
                 (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system), wall))
        print("register: sections %d, overlaps %d, stale_acc %d, lost_inc %d"
              % (rep["sections"], rep["overlaps"], rep["stale_writes_accepted"], rep["lost_increments"]))

        a = [r for s, r in recs.items() if s.startswith("a-")]
        ra = outlived(a, ob)
        print("a normal: dlock exits %s; outlived %s" % (sorted(self.rc_a), json.dumps(ra)))
        check(len(a) == 9 and all(rc == 0 for rc in self.rc_a), "a: 9 sections, every dlock exited 0")
        longer = [r for r in a if self.holds[r["id"]] >= 0.05]
        check(outlived(longer, ob)["observed"] == len(longer),
              "a: every fence of a job that held >= 50 ms was observed held (all: %d of 9)" % ra["observed"])
        check(ra["max_ms"] == 0, "a: outlived 0 ms (got %s)" % ra["max_ms"])
        check(all(r["reheld"] == 0 for r in ob["fences"]), "no fence was seen held again after gone")

        b = self.b
        hold = recs.get("b-holder")
        obf = fences.get(b["fence"])
        rb = outlived([hold] if hold else [], ob)
        print("b frozen holder: %s; holder record %s; observed %s; outlived %s"
              % (b, _short(hold), _rel(obf, b.get("t_stop")), json.dumps(rb)))
        check(b.get("job") is not None and obf is not None and hold is not None,
              "b: the holder's job ran and its fence was observed")
        taker = recs.get("b-taker")
        tf = fences.get(taker["fence"]) if taker else None
        if obf and hold and "t_cont" in b:
            if self.backend in LAPSING:
                check(obf["gone"] is not None and obf["gone"] < b["t_cont"],
                      "b: the backend dropped the fence while the holder was frozen (gone %.3f s after SIGSTOP)"
                      % ((obf["gone"] or 0) - b["t_stop"]))
                check(rb["max_ms"] is not None and rb["max_ms"] > 0,
                      "b: positive outlived for the frozen job (%s ms)" % rb["max_ms"])
                check(tf is not None and tf["first_seen"] < b["t_cont"],
                      "b: the second client held the lock while the holder was frozen")
            else:
                check(obf["gone"] is None or obf["gone"] > b["t_cont"],
                      "b: the backend kept the frozen holder's fence until after SIGCONT")
                check(rb["max_ms"] == 0, "b: outlived 0 (got %s)" % rb["max_ms"])
                check(tf is None or tf["first_seen"] > last_access(hold),
                      "b: the second client got the lock only after the holder's job ended")

        c = self.c
        hold = recs.get("c-holder")
        obf = fences.get(c["fence"])
        rc_ = outlived([hold] if hold else [], ob)
        print("c forced release: %s; holder record %s; observed %s; outlived %s"
              % (c, _short(hold), _rel(obf, c["t_force"]), json.dumps(rc_)))
        check(obf is not None and obf["gone"] is not None and
              c["t_force"] <= obf["gone"] <= c["t_forced"] + 0.3,
              "c: the observer saw the fence gone within 0.3 s of the forced release")

        if self.backend != "file":
            d = self.d
            dr = recs.get("d-after")
            rd = outlived([dr] if dr else [], ob)
            print("d server pause + restart: %s; outlived %s" % (d, json.dumps(rd)))
            check(d["rc"] == 0 and rd["observed"] == 1 and rd["max_ms"] == 0,
                  "d: after the server's pause and restart the observer observed the next section, outlived 0")
        allrecs = outlived(rep["records"], ob)
        print("all sections: max_ms %s, sections %s, observed %s, unobserved %s, worst %s"
              % (allrecs["max_ms"], allrecs["sections"], allrecs["observed"], allrecs["unobserved"],
                 json.dumps(allrecs["worst"])))
        return 1 if failures else 0


def _short(rec):
    if not rec:
        return None
    return {k: rec.get(k) for k in ("fence", "result", "closed_without_write")} | {"last_access": last_access(rec)}


def _rel(ob, t0):
    if not ob or t0 is None:
        return ob
    return {k: (round(ob[k] - t0, 3) if ob.get(k) is not None else None) for k in ("first_seen", "last_seen", "gone")}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("file", "redis", "redlock", "zk", "postgres", "etcd"):
        sys.exit(__doc__)
    chk = Check(sys.argv[1])
    try:
        rc = chk.run()
    finally:
        if chk.register.poll() is None:
            chk.register.kill()
        if chk.tmpdir:
            subprocess.run(["rm", "-rf", chk.tmpdir])
        subprocess.run(["rm", "-rf", chk.dir])
    print("%s: %s" % (sys.argv[1], "all checks passed" if rc == 0 else "FAILED: %s" % "; ".join(failures)))
    sys.exit(rc)


if __name__ == "__main__":
    main()
