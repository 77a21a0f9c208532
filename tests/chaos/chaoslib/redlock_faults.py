"""Redlock faults outside the Redlock argument's assumptions, after
Kleppmann ("How to do distributed locking", 2016): redlock-clock-jump and
redlock-restart-empty, on the 3 nodes of with-redis --nodes 3. Node A
(random per cell) is faulted; the clients reach the two others through
relays of ours (Partition: the cell's URL names them), which can be cut.

1. A bare majority. A cut relay is a black hole (requests go unanswered,
   as when packets are lost): a holder H that acquires meanwhile, or whose
   copy on the cut node lapses, holds A and one other node only, with the
   cut node free. (A SIGSTOP does not do this: resumed, the node runs the
   queued requests and may grant H's late acquire.) The relay is healed
   before the fault; H renews with its two nodes.
2. The fault on A while H's job runs: its clock jumps JUMP_S further ahead
   (libfaketime), and it expires H's copy at once; or it is restarted
   empty. The waiters are woken (a PUBLISH on the lock's release channel,
   as a release sends) and one, W, wins A and the free node: two holders
   at once. W, too, holds a bare majority with A (H keeps its other copy),
   so the next fault may hit W or a holder after it ("chain"); if not, the
   node it does without is cut once H released it ("cut").
3. H learns of it at its next renewal (76). The fault is timed (from when
   H's `sleep` ends, and the PTTL of its other copy) so that H writes after
   W's READ and before that renewal: the sections overlap, and the register
   refuses H's write (STALE, exit 65): W's fence is greater, through A's
   counter (clock jump) or the fence's clock part (empty restart: there the
   counter argument fails, but A's clock at W's grant is later than H's)."""

import glob
import json
import math
import os
import random
import selectors
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from .procs import alive, children, environ, job_children, stat_fields
from .scenarios import FAULT_OVERTIME_S, MIN_FAULTS, TTL_S, Scenario, register

JUMP_S = 30
# dlock's Redlock lease: validity ttl - (ttl/100 + 2ms), renewed every third
# of it; the PTTL of a copy when its holder renews is about TTL - RENEW
TTL_MS = int(TTL_S * 1000)
RENEW_MS = (TTL_MS - (TTL_MS // 100 + 2)) // 3
RENEW_PTTL = TTL_MS - RENEW_MS
MARGIN_S = 0.01      # H's write at least this long before its next renewal
READ_LEAD_S = 0.05   # fault -> W's READ: wake-up, acquire, fence, job start
PARTITION_MAX_S = 4.5
POLL_S = 0.005


def _find_lib(patterns):
    return next((f for p in patterns for f in sorted(glob.glob(p))), None)


class Resp:
    """A minimal RESP client for one node's own port (never the relay);
    reconnects once when the node went away (restarted)."""

    def __init__(self, port):
        self.port, self.sock, self.f = port, None, None

    def close(self):
        for x in (x for x in (self.f, self.sock) if x is not None):
            x.close()
        self.sock = self.f = None

    def _reply(self):
        line = self.f.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed")
        t, rest = line[:1], line[1:-2].decode(errors="replace")
        if t in b"+-":
            return rest if t == b"+" else RuntimeError(rest)   # an error: a value, not raised
        n = int(rest)
        if t == b":":
            return n
        if n < 0:
            return None
        if t == b"$":
            return self.f.read(n + 2)[:-2].decode(errors="replace")
        return [self._reply() for _ in range(n)]

    def __call__(self, *args):
        req = b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a), a) for a in (str(x).encode() for x in args))
        for attempt in (0, 1):
            try:
                if self.sock is None:
                    self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
                    self.f = self.sock.makefile("rb")
                self.sock.sendall(req)
                return self._reply()
            except OSError:
                self.close()
                if attempt:
                    raise


class Partition:
    """A TCP relay in front of one node. cut(): every byte either way is
    dropped (connections stay open, requests go unanswered); heal(): new
    connections relay again, and those that lost bytes are closed (their
    stream is broken; dlock has closed them on its timeout anyway)."""

    def __init__(self, upstream):
        self.upstream, self.is_cut, self.stopping, self.pairs = upstream, False, False, set()
        self.lsock = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.lsock.setblocking(False)
        self.port = self.lsock.getsockname()[1]
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.lsock, selectors.EVENT_READ, "accept")
        self.wake_r, self.wake_w = socket.socketpair()
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def cut(self):
        self.is_cut = True

    def heal(self):
        self.is_cut = False
        self.wake_w.send(b"h")

    def stop(self):
        self.stopping = True
        self.wake_w.send(b"s")
        self.thread.join(5)
        for p in list(self.pairs):
            self._close(p)
        for s in (self.lsock, self.wake_r, self.wake_w):
            s.close()

    def _close(self, pair):
        self.pairs.discard(pair)
        for s in (x for x in (pair.c, pair.u) if x is not None):
            self.sel.unregister(s)
            s.close()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            c.setblocking(True)
            c.settimeout(2)
            u = None
            if not self.is_cut:
                try:
                    u = socket.create_connection(("127.0.0.1", self.upstream), timeout=2)
                except OSError:
                    c.close()
                    continue
            pair = _Pair(c, u, u is None)  # a cut: nothing to relay to
            self.pairs.add(pair)
            self.sel.register(c, selectors.EVENT_READ, pair)
            if u is not None:
                self.sel.register(u, selectors.EVENT_READ, pair)

    def _loop(self):
        while not self.stopping:
            if not self.is_cut:
                for p in [p for p in self.pairs if p.lost]:
                    self._close(p)
            for key, _ in self.sel.select(0.1):
                if key.data == "accept":
                    self._accept()
                    continue
                if key.data == "wake":
                    self.wake_r.recv(64)
                    continue
                pair, s = key.data, key.fileobj
                if pair not in self.pairs:
                    continue
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    self._close(pair)
                    continue
                if self.is_cut or pair.lost:
                    pair.lost = True
                    continue
                try:
                    (pair.u if s is pair.c else pair.c).sendall(data)
                except OSError:
                    self._close(pair)


class _Pair:   # client socket, node socket (None if accepted during a cut), bytes lost
    def __init__(self, c, u, lost):
        self.c, self.u, self.lost = c, u, lost


CLK_TCK = os.sysconf("SC_CLK_TCK")


def job_end(dpid):
    """(job pid, monotonic time its `sleep` ends, i.e. when it writes) for
    dlock DPID's job, or None if the job is not sleeping now."""
    for j in job_children(dpid):
        for s in children(j):
            try:
                with open("/proc/%d/comm" % s) as f:
                    if f.read().strip() != "sleep":
                        continue
                with open("/proc/%d/cmdline" % s, "rb") as f:
                    dur = float(f.read().split(b"\0")[1])
                start = int(stat_fields(s)[19]) / CLK_TCK   # (+- a tick)
            except (OSError, ValueError, IndexError, TypeError):
                continue
            left = start + 0.5 / CLK_TCK + dur - time.clock_gettime(time.CLOCK_BOOTTIME)
            return j, time.monotonic() + left
    return None


class RedlockFault(Scenario):
    kind = ""
    modes = False        # the faults work on one exclusive holder's keys
    first_fault_s = 0.3
    fault_s = 0.0        # how long a fault takes (a restart: estimated)

    def applies(self, backend):
        return backend == "redlock"

    def skip_reason(self, backend):
        return "redlock only"

    def setup(self, cell):
        self.cell, self.done = cell, False
        # 60% of the jobs hold the lock 0-2 s, across renewals: fault targets
        cell.env.update(CHAOS_LONG_PCT="60", CHAOS_LONG_MS="2000")
        ports = [int(p) for p in os.environ["DLOCK_TEST_NODE_PORTS"].split()]
        self.a = random.randint(1, 3)
        self.others = [n for n in (1, 2, 3) if n != self.a]
        self.r = {n: Resp(ports[n - 1]) for n in (1, 2, 3)}
        self.relay = {n: Partition(ports[n - 1]) for n in self.others}
        scheme, hosts = cell.url.split("://", 1)
        hosts, via = hosts.split(","), {"127.0.0.1:%d" % ports[n - 1]: r for n, r in self.relay.items()}
        cell.env["CHAOS_URL"] = scheme + "://" + ",".join(
            "127.0.0.1:%d" % via[h].port if h in via else h for h in hosts)
        self.key, self.errors = None, []
        self.expect76 = set()    # fault holders and holders stranded by a cut
        self.misses = {}         # tries without a fault, by reason
        d = cell.args.duration    # the cell's length (--long: at most)
        self.t_stop = time.monotonic() + d if d else None
        try:
            if not set(via) <= set(hosts):
                raise RuntimeError("nodes %s are not all in %s" % (sorted(via), cell.url))
            self.prepare(cell)
        except BaseException:
            self.teardown(cell)   # the cell calls it only once setup is done
            raise

    def prepare(self, cell):
        pass

    def restore(self):
        pass

    def teardown(self, cell):
        if self.done:
            return
        self.done = True
        for x in self.relay.values():
            x.stop()
        for r in self.r.values():
            r.close()
        self.restore()

    def expected_exit(self, cell, section, rc, t_wall):
        # 76: a fault's holder, or a holder stranded by a cut
        return rc in (0, 75, 65) or (rc == 76 and section in self.expect76)

    def tok(self, n):
        return self.r[n]("GET", self.key)

    def pttl(self, n):
        v = self.r[n]("PTTL", self.key)
        return v if isinstance(v, int) else -2

    def section(self, n):
        try:
            pid = int(self.r[n]("HGET", self.key[:-len(":lock")] + ":info", "pid"))
        except (TypeError, ValueError):
            return None, None
        return pid, environ(pid).get("CHAOS_SECTION")

    def stop_at(self):
        """When faults stop (None: never): the cell's length, or, while its
        faults are not yet enough, as long as the cell then runs on."""
        if self.t_stop is None or self.faults_enough(self.cell):
            return self.t_stop
        return self.t_stop + FAULT_OVERTIME_S

    def miss(self, why):
        self.misses[why] = self.misses.get(why, 0) + 1

    def inject(self, cell):
        stop = self.stop_at()
        if stop is not None and time.monotonic() > stop - 1.0:
            return 3600.0
        try:
            if self.key is None:   # {NAMESPACE:NAME}:lock
                self.key = (self.r[self.a]("KEYS", "*chaos-%s}:lock" % self.name) or [None])[0]
            if self.key is not None:
                self.try_once(cell)
        except Exception as e:   # (the cell must still stop its clients)
            self.errors.append("%s: %s" % (type(e).__name__, e))
            for x in self.relay.values():
                x.heal()
            return 0.5
        return 0.05

    def try_once(self, cell):
        """One fault on a holder H on a bare majority with A, or none."""
        t_try, rejected, plan, via = time.monotonic(), set(), None, "chain"
        # a holder on a bare majority with A already (W of the last fault)?
        while plan is None and time.monotonic() < t_try + 2.5:
            bare = self.bare()
            if bare is None or bare[0] in rejected:
                break
            plan = self.target(rejected)
            if plan is None:
                time.sleep(POLL_S)
        if plan is None:
            # cut the node that the current holder does without, once the
            # last fault's holder released it and the waiters it woke took
            # back what they got there (holders after it get a bare majority
            # with that node free at once), else either node
            bare, x = self.bare(), random.choice(self.others)
            if bare:
                x, end, free = bare[2], time.monotonic() + 1.5, None
                while time.monotonic() < end and (free is None or time.monotonic() < free + 0.05):
                    free = (free or time.monotonic()) if self.tok(x) is None else None
                    time.sleep(POLL_S)
            plan, via = self.cut_for_target(x), "cut"
        if plan is None:
            return self.miss("no holder on a bare majority with A whose write fits a renewal period")
        t_plan = time.monotonic()
        while time.monotonic() < plan["tf"]:
            time.sleep(POLL_S)
        # still as planned? H holds A and its partner, not the free node;
        # its write comes after W can have read and before its next renewal
        h, p, te = plan["token"], plan["partner"], plan["te"]
        now = time.monotonic()
        ptp = self.pttl(p)
        if self.tok(self.a) != h or self.tok(p) != h or not alive(plan["jpid"]):
            return self.miss("the holder was gone before the fault")
        left, renew_in = te - now, max(0, ptp - RENEW_PTTL) / 1000.0
        if left < 0.7 * plan["lead"] or renew_in - left < MARGIN_S / 2:
            return self.miss("the holder's renewal or write moved")
        t0w, t0 = time.time(), time.monotonic()
        rec = {"kind": self.kind, "member": self.a, "start": t0w, "holder": plan["section"],
               "via": via, "majority": "node%d+node%d" % tuple(sorted((self.a, p))),
               "search_ms": round((t_plan - t_try) * 1000), "wait_ms": round((t0 - t_plan) * 1000),
               "hit": alive(plan["jpid"]), "write_in_ms": round(left * 1000),
               "renew_in_ms": round(renew_in * 1000)}
        rec.update(self.fault(cell))
        rec.update(end=time.time(), ms=round((time.monotonic() - t0) * 1000))
        # A forgot H's copy (early: the partner still has it, with ttl left)
        rec.update(copy_gone=self.tok(self.a) != h,
                   partner_pttl_ms=self.pttl(p) if self.tok(p) == h else None)
        self.expect76.add(plan["section"])
        cell.faults.append(rec)
        # wake the waiters (what a release sends: a turn to each member of
        # the node's queue, on its own channel; "released" on the channel
        # older dlocks listen on) until one holds A and the free node: two
        # holders at once
        tag = self.key[:-len(":lock")]
        end = max(te + 0.2, time.monotonic() + 0.3)
        while time.monotonic() < end:
            for n in (p, self.a):
                try:
                    self.r[n]("PUBLISH", tag + ":released", "released")
                    queue = self.r[n]("ZRANGE", tag + ":queue", 0, -1)
                    # an error reply comes back as a value, not a list
                    for m in queue if isinstance(queue, list) else ():
                        self.r[n]("PUBLISH", "%s:queue:%s" % (tag, str(m).split(":", 1)[-1]), "turn")
                except OSError:
                    pass
            time.sleep(0.01)
            ta = self.tok(self.a)
            if ta is not None and ta != h and ta == self.tok(plan["free"]):
                rec.update(winner=self.section(self.a)[1], won_ms=round((time.monotonic() - t0) * 1000))
                break
        return None

    def needed(self, x):
        """Whether a holder needs node X (holds it and one other only): a cut
        of X would strand it (it could not renew: its 76 is expected)."""
        t = self.tok(x)
        return t is not None and sum(self.tok(n) == t for n in (1, 2, 3) if n != x) == 1

    def cut_for_target(self, x):
        """Cut node X until target() finds a plan; healed before the fault.
        First waits (3 s at most) until no holder needs X; one that still
        does, or took X and one other node as the cut began, is stranded."""
        end = time.monotonic() + 3.0
        while self.needed(x) and time.monotonic() < end:
            time.sleep(0.01)
        self.relay[x].cut()
        t_cut = time.monotonic()
        stop = self.stop_at()
        deadline = min(t_cut + PARTITION_MAX_S, stop - 0.5 if stop else 1e12)
        rejected, plan, checked = set(), None, False
        try:
            while plan is None and time.monotonic() < deadline:
                plan = self.target(rejected)
                if not checked and (plan or time.monotonic() > t_cut + 0.25):
                    checked = True
                    if self.needed(x):
                        self.expect76.add(self.section(x)[1])
                if plan is None:
                    time.sleep(POLL_S)
        finally:
            self.relay[x].heal()
        return plan

    def bare(self):
        """(token, partner, free node) if A's holder holds one other node only."""
        h = self.tok(self.a)
        held = [n for n in self.others if h is not None and self.tok(n) == h]
        return (h, held[0], sum(self.others) - held[0]) if len(held) == 1 else None

    def target(self, rejected):
        """H's plan (fault time tf) if it holds A and one partner node only,
        the third node is free by tf, and its write falls late enough after
        tf and before the renewal after tf; else None, and H is REJECTED if
        its write can never fit (a node still held may be freed any time)."""
        bare = self.bare()
        if bare is None or bare[0] in rejected:
            return None          # (a holder of all 3: a copy on a cut node may lapse)
        h, p, f = bare
        dpid, section = self.section(p)
        je = job_end(dpid) if section else None
        if je is None:
            return None
        jpid, te = je
        now = time.monotonic()
        ptp = self.pttl(p)
        if ptp < 0:
            return None
        free_at = now
        if self.tok(f) is not None:
            free_at = now + max(self.pttl(f), 0) / 1000.0 + 0.01
        period = RENEW_MS / 1000.0
        nxt = now + max(0, ptp - RENEW_PTTL) / 1000.0
        end = nxt + max(0, math.ceil((te - nxt) / period)) * period
        tf = max(now, end - period + 0.02)
        # late in a short cell with fewer than 2 faults: any write after tf
        # (W may then read only after it: a hit without an overlap)
        stop = self.stop_at()
        lead = 0.0 if stop and stop - now < 4 and len(self.cell.faults) < 2 \
            else READ_LEAD_S + self.fault_s
        if te - tf < lead or end - te < MARGIN_S or (stop is not None and tf > stop + 0.5):
            rejected.add(h)
            return None
        tf = max(tf, free_at)
        if te - tf < lead:
            return None
        return {"token": h, "dpid": dpid, "jpid": jpid, "section": section, "te": te, "tf": tf,
                "partner": p, "free": f, "lead": lead}

    def result(self, cell):
        """Per fault: whether H's section overlapped another complete one
        (the overlaps the register counts) and what became of its write."""
        recs = cell.records
        done = {s: x for s, x in recs.items()
                if x.get("read_mono") is not None and x.get("write_mono") is not None}
        for f in cell.faults:
            h = done.get(f["holder"])
            f["overlap"] = h is not None and any(
                s != f["holder"] and x["read_mono"] < h["write_mono"] and h["read_mono"] < x["write_mono"]
                for s, x in done.items())
            f["holder_write"] = recs.get(f["holder"], {}).get("result")
        cell.notes.append("node A (faulted): node%d; the others are reached through relays" % self.a)
        cell.notes.append("faults: %s" % json.dumps(
            [{k: f.get(k) for k in ("holder", "via", "majority", "winner", "won_ms", "write_in_ms",
                                    "holder_write", "overlap")} for f in cell.faults]))
        if self.misses:
            cell.notes.append("tries without a fault: %s" % ", ".join(
                "%d %s" % (n, why) for why, n in sorted(self.misses.items())))
        if not any(f["overlap"] for f in cell.faults):
            cell.notes.append("no fault was followed by an overlap: the overlap the Redlock "
                              "argument predicts was not shown in this cell")
        return {}

    def faults_enough(self, cell):
        return sum(1 for x in cell.faults if x.get("hit")) >= MIN_FAULTS

    def acceptance(self, r):
        f = ["fault injection failed: %s" % e for e in self.errors[:3]]
        hit = [x for x in r["server_faults"] if x.get("hit")]
        if len(hit) < MIN_FAULTS:
            f.append("only %d faults hit a running holder on a bare majority (want %d)" % (len(hit), MIN_FAULTS))
        for x in hit:
            if not x["copy_gone"] or (self.kind == "jumps" and not x["partner_pttl_ms"]):
                f.append("fault on node%d: %s's copy did not end there early (its partner's ttl: %s ms)"
                         % (x["member"], x["holder"], x.get("partner_pttl_ms")))
        return f

    def faults_cell(self, r):
        fs = r["server_faults"]
        return "%d %s, %d hit, %d ovl" % (len(fs), self.kind, sum(1 for x in fs if x.get("hit")),
                                          sum(1 for x in fs if x.get("overlap")))


class ClockJump(RedlockFault):
    """A runs under libfaketime with a timestamp file, read at every clock
    call; a fault adds JUMP_S s. Redis expires keys by its wall clock (A
    drops H's copy at once); TIME, the fence's clock part, jumps too."""
    name = "redlock-clock-jump"
    kind = "jumps"
    faked_pid = dir = None

    def prepare(self, cell):
        lib = _find_lib(["/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                         "/usr/local/lib/faketime/libfaketime.so.1"])
        if lib is None:
            raise RuntimeError("libfaketime.so.1 not found (Debian: faketime, see scripts/install-deps)")
        # Debian's redis-server allocates with libjemalloc, which calls
        # clock_gettime while libfaketime initialises, and hangs (libfaketime
        # issue #130): glibc's malloc debug library (glibc >= 2.34),
        # preloaded, gives malloc back to glibc
        shim = _find_lib(["/lib/*/libc_malloc_debug.so.0", "/usr/lib/*/libc_malloc_debug.so.0"])
        self.faked_pid, self.offset = None, 0
        self.dir = tempfile.mkdtemp(prefix="dlock-chaos-faketime-")
        self.offset_file = os.path.join(self.dir, "offset")
        self._write_offset()
        with open(os.path.join(self.dir, "redis-server"), "w") as f:
            f.write("#!/bin/sh\nexec env LD_PRELOAD='%s' FAKETIME_TIMESTAMP_FILE='%s' FAKETIME_NO_CACHE=1 "
                    "FAKETIME_DONT_FAKE_MONOTONIC=1 '%s' \"$@\"\n"
                    % (" ".join(x for x in (shim, lib) if x), self.offset_file, shutil.which("redis-server")))
            os.fchmod(f.fileno(), 0o700)
        # the wrapper's restart script starts whatever redis-server PATH names
        env = dict(os.environ, PATH=self.dir + os.pathsep + os.environ.get("PATH", ""))
        p = subprocess.run([os.environ["DLOCK_TEST_NODE_RESTART_%d" % self.a]], env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        with open(os.environ["DLOCK_TEST_NODE_PIDFILES"].split()[self.a - 1]) as f:
            self.faked_pid = int(f.read().split()[0])
        try:
            with open("/proc/%d/maps" % self.faked_pid) as f:
                ok = p.returncode == 0 and "libfaketime" in f.read()
        except OSError:
            ok = False
        if not ok:
            raise RuntimeError("node%d did not start under libfaketime: %s"
                               % (self.a, p.stderr.decode(errors="replace").strip()[-300:]))
        self.r[self.a].close()

    def _write_offset(self):
        tmp = self.offset_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("+%d\n" % self.offset)
        os.replace(tmp, self.offset_file)   # libfaketime never reads half a file

    def fault(self, cell):
        self.offset += JUMP_S
        self._write_offset()
        sec, usec = self.r[self.a]("TIME")
        return {"offset_s": self.offset, "skew_s": round(int(sec) + int(usec) / 1e6 - time.time(), 1)}

    def restore(self):
        """A back on the real clock (restarted empty), and libfaketime's
        shared memory of the killed server removed (left by a SIGKILL)."""
        if self.faked_pid is not None:
            subprocess.run([os.environ["DLOCK_TEST_NODE_RESTART_%d" % self.a]], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60)
            self.cell.reaper.reap()       # an orphan of the restart: our child
            for f in ("faketime_shm_%d", "sem.faketime_sem_%d"):
                try:
                    os.unlink("/dev/shm/" + f % self.faked_pid)
                except OSError:
                    pass
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def overlaps_allowed(self, backend):
        return ("node A's clock jumps %d s ahead while it is half of the holder's bare majority "
                "(the third node was cut off, or held an older copy, when it acquired): A ends the "
                "holder's copy early and a waiter wins A and the third node while the job runs. "
                "The Redlock argument assumes bounded clock drift ('Is Redlock safe?'); the fence "
                "still refuses the old holder's write" % JUMP_S)


class RestartEmpty(RedlockFault):
    """Node A is killed and restarted without its data (kill -9, the
    wrapper's restart script) while it is half of H's majority."""
    name = "redlock-restart-empty"
    kind = "restarts"
    fault_s = 0.08

    def fault(self, cell):
        t0 = time.monotonic()
        cell.server.kill_restart(self.a)
        took = time.monotonic() - t0
        self.fault_s = 0.7 * self.fault_s + 0.3 * took
        self.r[self.a].close()
        return {}

    def overlaps_allowed(self, backend):
        return ("node A restarts empty at once while it is half of the holder's bare majority "
                "(the third node was cut off, or held an older copy, when it acquired): a waiter "
                "wins A and the third node while the job runs. The Redlock argument assumes no "
                "node loses data ('Is Redlock safe?'); the fence, through its clock part, still "
                "refuses the old holder's write")


register(ClockJump())
register(RestartEmpty())
