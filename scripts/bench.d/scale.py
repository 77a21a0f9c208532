"""The scale section of scripts/bench (--scale, instead of the other
measurements; --only picks one backend): many waiters and many holders on
one name (issue 22 point 2). Mixed into the Bench class of scripts/bench,
whose spawn, wait, poll_exit, open_fifo_writer and servers it uses; the
tables are in report.py.

For dlock on file, redis, redlock, zk, pg and etcd, on the bench's own
servers (ZooKeeper with maxClientCnxns=0, no limit per address; PostgreSQL
with max_connections=1100), for each N of --scale-n (default 1,10,100,500):
  waiters    a holder (`dlock run s -- sh -c ...`: its job creates END,
             reads a line from the bench's fifo, then execs `stamp start
             END`, which stamps its end; `stamp hold` would give up after
             30 s, less than 500 waiters may take to join), then N waiters
             (`dlock run s --wait 600s -- stamp start START_i`) started one
             by one, each seen queued before the next starts (`dlock status
             s --json` counts i waiters; on Redlock, which has no queue,
             that is the subscribers of the release channel, the most on
             any node; on file, /proc/locks shows i blocked requests), then 200 ms, then the holder is let
             go. A waiter's job stamps its start and exits, so the chain of N
             gives N hand-overs: each job's start minus the start of the one
             served before it (the holder's end for the first). Chains are
             repeated for small N to give 20 hand-overs at least. Order: the
             waiters in the order their jobs started against the order they
             joined (inversions counted). Server work per hand-over, from
             the release to the last waiter's exit, divided by N: Redis and
             Redlock, the calls of every command but INFO in INFO
             commandstats (those run by scripts included; Redlock summed over
             the 5 nodes); ZooKeeper, mntr's zk_packets_received; etcd, the
             request messages of /metrics' grpc_server_msg_received_total
             (unary calls and stream messages: keep-alives, watches);
             PostgreSQL, pg_stat_database's xact_commit, which a backend
             reports late (at its exit at the latest), so counted from before
             the holder starts to after every contender has exited, less the
             bench's reads and status calls (their commits measured once),
             per contender (N + 1): whole lives, not releases. file: not
             counted. The goals, at every N against N = 1, which --check
             enforces: hand-over median at most 1.5x, work per hand-over at
             most 1.5x, and FIFO (no inversion) where dlock's man page
             promises it (redis, zk, pg, etcd; not Redlock, whose woken
             waiters race, nor file, a kernel lock).
  --limit N  N holders of `run s --limit N`, spawned 50 at a time (the next
             50 once these hold: PostgreSQL does not accept 500 at once
             within dlock's connect timeout on 2 CPUs); "admit N" is the
             time until all N run their job (each one's END exists);
             then one more `run s --limit N --wait` is seen queued, one holder
             is let go, and the hand-over (the freed holder's end to the
             waiter's start) and the server's work until the waiter exits
             are taken; repeated to give 5 samples at least. No goals: for
             scale (not offered by Redlock).
"""

import datetime
import json
import math
import os
import platform
import signal
import subprocess
import sys
import time

import postgres
import servers
from processes import BenchError, Deadline, Timeout
from report import ETCD, FILE, PG, REDIS, REDLOCK, ZK, cpu_model, scale_limit_table, scale_table, tool_version

SCALE_NAME = "s"
SCALE_WAIT = "600s"
SCALE_MIN_HANDOVERS = 20
SCALE_LIMIT_MIN_SAMPLES = 5
SCALE_LIMIT_WAVE = 50  # holders of --limit N started at once, the next wave once they hold
SCALE_SETTLE_S = 0.2
SCALE_JOIN_TIMEOUT_S = 60.0
SCALE_DRAIN_PER_WAITER_S = 10.0
# A waiter's stats reach pg_stat_database once its backend flushes them, at
# most every second while it runs and at its exit.
PG_STATS_FLUSH_S = 1.2
LIMIT_OFFERED = (FILE, REDIS, ZK, PG, ETCD)

# What each backend's work is counted in, for the table.
WORK_UNITS = {FILE: None, REDIS: "commands", REDLOCK: "commands (5 nodes)", ZK: "packets received",
              PG: "xacts per contender, whole life", ETCD: "gRPC requests"}
# PostgreSQL's count is per contender over its whole life (connect to exit), not per release.
WORK_UNITS_LIMIT = {**WORK_UNITS, PG: "xacts committed"}


def inversions(order):
    """Pairs served out of the order they joined in (order: join index in the order served)."""
    return sum(1 for i in range(len(order)) for j in range(i + 1, len(order)) if order[i] > order[j])


class Scale:
    scale_status_calls = 0
    scale_pg_status_xacts = None  # commits per `dlock status` on PostgreSQL, measured once

    def pg_status_xacts(self):
        """The commits one `dlock status` makes on PostgreSQL, to take them
        off a chain's count (the reader's own commit counts in the next read)."""
        if self.scale_pg_status_xacts is None:
            calls = 5
            before = self.server_work(PG)
            for _ in range(calls):
                self.scale_waiters(PG)
            self.scale_pg_status_xacts = (self.server_work(PG) - before - 1) / calls
        return self.scale_pg_status_xacts

    def scale_dir(self, tag):
        path = os.path.join(self.tmp, tag)
        os.makedirs(path, exist_ok=True)
        for entry in os.listdir(path):
            os.unlink(os.path.join(path, entry))
        return path

    def scale_argv(self, who, cmd, limit=None, wait=True):
        flags = (("--limit", str(limit)) if limit else ()) + (("--wait", SCALE_WAIT) if wait else ())
        return [self.dlock, "-b", self.backends[who], "run", SCALE_NAME, *flags, "--", *cmd]

    def scale_hold(self, end):
        """A holder's job: creates END, waits for a line on the fifo (for as
        long as it takes: `stamp hold` gives up after 30 s, less than 500
        waiters may take to join), then stamps END as its last act."""
        return ("/bin/sh", "-c", ': > "$2"; read -r line < "$0"; exec "$1" start "$2"', self.fifo, self.helper, end)

    def scale_waiters(self, who):
        """Waiters queued on the name, as dlock reports them (None: unknown)."""
        if who == FILE:
            return self.file_blocked_requests()
        self.scale_status_calls += 1
        out = subprocess.run([self.dlock, "-b", self.backends[who], "status", SCALE_NAME, "--json"],
                             env=self.envs.get(who, self.env), stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=30)
        try:
            waiters = json.loads(out.stdout).get("waiters")
        except ValueError:
            raise BenchError(f"dlock status --json ({who}) printed no JSON: {out.stderr.strip()[:200]}")
        return waiters if isinstance(waiters, int) else None

    def file_blocked_requests(self):
        # The "->" lines of /proc/locks on the backend's files in the bench's
        # temp dir (the name's lock file, and its slot files under --limit).
        top = os.path.join(self.tmp, "d")
        inodes = {f":{os.stat(os.path.join(root, name)).st_ino}" for root, _, names in os.walk(top) for name in names}
        count = 0
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 6 and fields[1] == "->" and any(fields[6].endswith(i) for i in inodes):
                    count += 1
        return count

    def scale_wait_queued(self, who, count, pid):
        end = time.monotonic() + SCALE_JOIN_TIMEOUT_S
        while True:
            status = self.poll_exit(pid)
            if status is not None:
                raise BenchError(f"a {who} waiter exited ({status}) before it was queued{self.last_stderr()}")
            waiters = self.scale_waiters(who)
            if waiters is None:
                # No queue to look at (Redlock: a waiter subscribes on every
                # node, then tries again): subscribed, then a settle.
                if who != REDLOCK:
                    raise BenchError(f"dlock status --json ({who}) reports no waiter count")
                if min(self.subscribed(who)) >= count:
                    time.sleep(0.02)
                    return
            elif waiters >= count:
                return
            if time.monotonic() > end:
                raise Timeout(f"{who}: waiter {count} was never seen queued")
            time.sleep(0.002)

    # ---- the server's work -------------------------------------------------

    def server_work(self, who):
        """A counter of the requests the backend's server(s) have served, or None."""
        if who in (REDIS, REDLOCK):
            # Commands run by scripts count too; the bench's own INFO does not.
            total = 0
            for resp in self.resps[who]:
                for line in resp.call("INFO", "commandstats").splitlines():
                    if line.startswith("cmdstat_") and not line.startswith("cmdstat_info:"):
                        fields = dict(f.split("=", 1) for f in line.split(":", 1)[1].split(",") if "=" in f)
                        total += int(fields.get("calls", "0"))
            return total
        if who == ZK:
            for line in servers.four_letter_word(self.zk.port, "mntr").splitlines():
                fields = line.split()
                if len(fields) == 2 and fields[0] == "zk_packets_received":
                    return int(fields[1])
            raise BenchError("ZooKeeper's mntr has no zk_packets_received")
        if who == ETCD:
            # Every request message, unary or on a stream (lease keep-alives, watches).
            total = 0
            for line in self.etcd.request("GET", "/metrics").decode(errors="replace").splitlines():
                if line.startswith("grpc_server_msg_received_total{"):
                    total += int(float(line.rsplit(" ", 1)[1]))
            return total
        if who == PG:
            # A backend reports its commits to pg_stat_database at its exit
            # at the latest (an idle one up to 10 s late): read on a
            # connection of its own, closed, once the others have exited.
            time.sleep(PG_STATS_FLUSH_S)
            reader = postgres.Wire(self.pg.socket_path, postgres.DATABASE)
            try:
                row = reader.query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
            finally:
                reader.close()
            return int(row[0][0])
        return None

    # ---- waiters -----------------------------------------------------------

    def scale_chain(self, who, n):
        """One holder and n waiters queued behind it in a known order, then
        let go: (hand-over ns in the order served, server work, join indexes
        in the order served)."""
        d = self.scale_dir("scale")
        end0 = os.path.join(d, "end")
        starts = [os.path.join(d, f"start.{i}") for i in range(n)]
        if who == PG:
            # Commits reach pg_stat_database late (at a backend's exit at the
            # latest): counted over the contenders' whole lives.
            status_xacts = self.pg_status_xacts()
            self.scale_status_calls = 0
            before = self.server_work(who)
        holder = self.spawn(self.scale_argv(who, self.scale_hold(end0), wait=False), env=self.envs.get(who))
        waiters = []
        with Deadline(SCALE_JOIN_TIMEOUT_S):
            go = self.open_fifo_writer()
        try:
            for i in range(n):
                waiters.append(self.spawn(self.scale_argv(who, (self.helper, "start", starts[i])),
                                          env=self.envs.get(who)))
                self.scale_wait_queued(who, i + 1, waiters[-1])
            time.sleep(SCALE_SETTLE_S)
            if who != PG:
                before = self.server_work(who)
            os.write(go, b"g\n")
        finally:
            os.close(go)
        # Generous: Redlock's woken waiters race, and the losers sleep until
        # the lease's end (seconds per hand-over with 100 waiters).
        with Deadline(SCALE_JOIN_TIMEOUT_S + SCALE_DRAIN_PER_WAITER_S * n):
            for i, pid in enumerate(waiters):
                self.wait(pid, f"{who} waiter {i + 1} of {n}")
            self.wait(holder, f"{who} holder")
        after = self.server_work(who)
        stamps = []
        for path in [end0] + starts:
            with open(path) as f:
                stamps.append(int(f.read()))
        served = sorted(range(n), key=lambda i: stamps[i + 1])
        times = [stamps[0]] + [stamps[i + 1] for i in served]
        work = None if before is None else after - before
        if who == PG:
            # Less the bench's own reader and status calls; per contender
            # (the holder's life is one like a waiter's), not per release.
            work = (work - 1 - self.scale_status_calls * status_xacts) * n / (n + 1)
        return [b - a for a, b in zip(times, times[1:])], work, served

    def measure_scale_waiters(self, who, ns):
        out = {}
        for n in ns:
            handovers, work, inv, chains = [], 0, 0, max(1, math.ceil(SCALE_MIN_HANDOVERS / n))
            for _ in range(chains):
                h, w, served = self.scale_chain(who, n)
                handovers += h
                work = None if w is None or work is None else work + w
                inv += inversions(served)
            out[n] = {"hand-over": handovers, "work": None if work is None else work / len(handovers),
                      "inversions": inv, "chains": chains}
            self.scale_progress(who, "waiters", n, out[n])
        return out

    # ---- holders of --limit N ----------------------------------------------

    def scale_limit_once(self, who, n):
        """n holders of --limit n spawned at once, then one waiter; one holder
        let go: (ns until all n held, hand-over ns, server work over it)."""
        d = self.scale_dir("limit")
        ends = [os.path.join(d, f"end.{i}") for i in range(n)]
        start = os.path.join(d, "start")
        holders = []
        began = time.monotonic_ns()
        deadline = time.monotonic() + SCALE_JOIN_TIMEOUT_S + n
        # In waves: 500 connections at once are more than PostgreSQL forks
        # and authenticates (SCRAM) within dlock's connect timeout on 2 CPUs.
        for wave in range(0, n, SCALE_LIMIT_WAVE):
            for i in range(wave, min(n, wave + SCALE_LIMIT_WAVE)):
                holders.append(self.spawn(self.scale_argv(who, self.scale_hold(ends[i]), limit=n), env=self.envs.get(who)))
            # The holder's job creates its file before it opens the fifo: the job runs, the slot is held.
            while not all(os.path.exists(path) for path in ends[:len(holders)]):
                for pid in holders:
                    if self.poll_exit(pid) is not None:
                        raise BenchError(f"a {who} --limit {n} holder exited before holding{self.last_stderr()}")
                if time.monotonic() > deadline:
                    raise Timeout(f"{who}: {n} holders of --limit {n} never all held")
                time.sleep(0.001)
        admitted = time.monotonic_ns() - began
        with Deadline(SCALE_JOIN_TIMEOUT_S):
            go = self.open_fifo_writer()
        try:
            waiter = self.spawn(self.scale_argv(who, (self.helper, "start", start), limit=n), env=self.envs.get(who))
            self.scale_wait_queued(who, 1, waiter)
            time.sleep(SCALE_SETTLE_S)
            before = self.server_work(who)
            os.write(go, b"g\n")
            with Deadline(SCALE_JOIN_TIMEOUT_S):
                self.wait(waiter, f"{who} --limit {n} waiter")
            after = self.server_work(who)
            os.write(go, b"g\n" * (n - 1))
        finally:
            os.close(go)
        with Deadline(SCALE_JOIN_TIMEOUT_S + n):
            for i, pid in enumerate(holders):
                self.wait(pid, f"{who} --limit {n} holder {i + 1}")
        released = [path for path in ends if os.path.getsize(path) > 0]
        with open(start) as f:
            started = int(f.read())
        # The one holder let go first is the one whose stamp is the earliest.
        first = min(int(open(path).read()) for path in released)
        return admitted, started - first, None if before is None else after - before

    def measure_scale_limit(self, who, ns):
        out = {}
        for n in ns:
            admit, handover, work = [], [], 0
            for _ in range(max(1, math.ceil(SCALE_LIMIT_MIN_SAMPLES / n))):
                a, h, w = self.scale_limit_once(who, n)
                admit.append(a)
                handover.append(h)
                work = None if w is None or work is None else work + w
            out[n] = {"admit": admit, "hand-over": handover, "work": None if work is None else work / len(handover)}
            self.scale_progress(who, "--limit", n, out[n])
        return out

    @staticmethod
    def scale_progress(who, part, n, r):
        # On stderr as each N is done: a long run that fails later keeps what it measured.
        h = sorted(r["hand-over"])
        print(f"bench: scale {who} {part} N={n}: hand-over median {h[len(h) // 2] / 1e6:.2f} ms over {len(h)}, "
              f"work {r['work']}, inversions {r.get('inversions', '-')}", file=sys.stderr, flush=True)

    def measure_scale(self, whos, ns):
        """{who: {"waiters": {n: ...}, "limit": {n: ...} (where offered)}}."""
        results = {}
        for who in whos:
            results[who] = {"waiters": self.measure_scale_waiters(who, ns)}
            if who in LIMIT_OFFERED:
                results[who]["limit"] = self.measure_scale_limit(who, ns)
        return results

    def measure_scale_sections(self, ns, warmups):
        """The scale section (scripts/bench.d/scale.py) on each chosen backend, on the bench's servers."""
        self.build_helper()
        whos = []
        for section, who in (("file", FILE), ("redis", REDIS), ("redlock", REDLOCK), ("zk", ZK), ("pg", PG), ("etcd", ETCD)):
            if section not in self.sections:
                continue
            if who in (REDIS, REDLOCK) and REDIS not in self.resps:
                self.start_redis_servers()
            elif who == ZK:
                self.start_zookeeper()
                self.warm_server(ZK, warmups[ZK])
            elif who == PG:
                self.start_postgres()
                self.warm_server(PG, warmups[PG])
            elif who == ETCD:
                self.start_etcd()
                self.warm_server(ETCD, warmups[ETCD])
            whos.append(who)
        return self.measure_scale(whos, ns)


def parse_scale_n(parser, text):
    try:
        ns = [int(n) for n in text.split(",")]
    except ValueError:
        parser.error("--scale-n takes comma-separated numbers, e.g. 1,10,100,500")
    if ns[0] != 1 or any(n < 1 for n in ns):
        parser.error("--scale-n must start with 1 (what the other N are compared with), all N >= 1")
    return ns


def scale_main(args, bench, machine_before, stop_signals, warmups):
    """Measures, stops everything, prints the tables; the exit status."""
    try:
        m = bench.measure_scale_sections(args.scale_n, warmups)
    except (BenchError, servers.ServerError, OSError) as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    finally:
        for signo in stop_signals:
            signal.signal(signo, signal.SIG_IGN)
        bench.cleanup()
    when = (f"{datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}, {platform.release()}, "
            f"{cpu_model()} ({os.cpu_count()} CPUs); {tool_version([bench.dlock, '--version'])}")
    names = {FILE: "file", REDIS: "redis", REDLOCK: "redlock", ZK: "zk", PG: "postgres", ETCD: "etcd"}
    tables = []
    for who, result in m.items():
        unit = WORK_UNITS[who]
        tables.append((f"dlock scale ({names[who]} backend): a chain of N waiters on one name, hand-over from "
                       f"each job's end to the next one's start, server work per hand-over; {when}",
                       scale_table(who, names[who], result["waiters"], unit)))
        if "limit" in result:
            # Counted from the release to the waiter's exit (PostgreSQL: what
            # the waiter's and the released holder's backends report by then).
            tables.append((f"dlock scale ({names[who]} backend): N holders of run --limit N, then one waiter",
                           scale_limit_table(names[who], result["limit"], WORK_UNITS_LIMIT[who])))
    print("\n\n".join(t.render(title, args.markdown) for title, t in tables))
    others = machine_before.others_share()
    if others is not None and others > 0.10:
        print(f"{chr(10) + '> ' if args.markdown else ''}note: other processes kept {others:.0%} of the "
              f"{os.cpu_count()} CPUs busy while this ran; hand-over figures are noisy then")
    misses = [miss for _, t in tables for miss in t.misses]
    for miss in misses:
        print(f"bench: missed: {miss}", file=sys.stderr)
    if args.verbose:
        for who, result in m.items():
            for n, r in result["waiters"].items():
                print(f"scale {who} N={n} hand-over (us, sorted): " + " ".join(f"{v / 1e3:.0f}" for v in sorted(r["hand-over"])),
                      file=sys.stderr)
    return 1 if (args.check and misses) else 0
