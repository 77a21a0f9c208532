"""Figures, budgets and tables for scripts/bench: what the measurements
mean against each budget, printed as aligned text or as Markdown."""

import math
import os
import platform
import re
import statistics
import subprocess
import time

from postgres import SETUPS as PG_SETUPS

# issue 22 point 3: start-up, `run x -- true` on file: against `flock FILE
# true`, the medians over the same rounds of the wall time (spawn to reaped)
# and of the CPU time (user + system, the process and the job it waited for).
BUDGET_RUN_RATIO = 1.10
BUDGET_RUN_CPU_RATIO = 1.10
BUDGET_HANDOVER_RATIO = 1.20
BUDGET_RSS_KIB = 8 * 1024
BUDGET_REDIS_RUN_VS_FLOCK = 2.0
BUDGET_REDIS_RUN_VS_ETCDCTL = 0.3
BUDGET_REDIS_RUN_VS_REDIS_CLI = 0.3
BUDGET_REDLOCK_RUN_VS_REDIS = 1.5
BUDGET_ZK_RUN_VS_FLOCK = 4.0
BUDGET_ZK_RUN_VS_KAZOO = 0.25
# dlock on PostgreSQL against a minimal C client on libpq doing the same,
# in every authentication setup of scripts/bench.d/postgres.py (issue 22).
GOAL_PG_RUN_VS_LIBPQ = 1.1
BUDGET_ETCD_RUN_VS_ETCDCTL = 0.5
# dlock's hand-over on an engine against the fastest of the tools one would
# otherwise use on it (issue 22); the file backend's is against flock, above.
GOAL_HANDOVER_VS_TOOLS = 1.0
# dlock's hand-over on PostgreSQL against the minimal C client on libpq doing
# the same durable steps (pq_lock --fence: its lock's commit waits for a WAL
# flush, as dlock's fence does); a row of its own, never "the fastest tool".
GOAL_PG_HANDOVER_VS_LIBPQ_FENCE = 1.1

# The contenders, by the key their samples are filed under.
FILE = "dlock"
FLOCK = "flock"
FLOCK_SHARED = "flock-s"
REDIS = "dlock-redis"
ETCDCTL = "etcdctl"
REDIS_CLI = "redis-cli-sh"
REDIS_PY = "redis-py"
REDLOCK = "dlock-redlock"
ZK = "dlock-zk"
KAZOO = "kazoo-py"
PG = "dlock-pg"
PSYCOPG2 = "psycopg2-py"
LIBPQ = "libpq-c"
LIBPQ_FENCE = "libpq-c+fence"
ETCD = "dlock-etcd"
DLOCKS = (FILE, REDIS, REDLOCK, ZK, PG, ETCD)

# The tools each engine's hand-over is compared with, and their rows' labels.
REDIS_TOOLS = ((REDIS_PY, "redis-py Lock, python3"), (REDIS_CLI, "redis-cli sh lock (polls)"))
ENGINE_TOOLS = {REDIS: REDIS_TOOLS, REDLOCK: REDIS_TOOLS, ZK: ((KAZOO, "kazoo Lock, python3"),),
                PG: ((PSYCOPG2, "psycopg2 advisory lock, python3"),), ETCD: ((ETCDCTL, "etcdctl lock x CMD"),)}
# Minimal clients doing dlock's steps, each a row of its engine's hand-over
# table with a goal of its own (not a tool: never the fastest tool's row).
ENGINE_FLOORS = {PG: ((LIBPQ_FENCE, "libpq C client + fence (pq_lock --fence)", GOAL_PG_HANDOVER_VS_LIBPQ_FENCE),)}

# `run --shared` and `run --limit 3` of each backend that offers them, filed
# under the backend's contender key plus the mode's suffix.
MODE_FLAGS = {"-shared": ("--shared",), "-limit3": ("--limit", "3")}
MODE_ROWS = {"-shared": "run --shared x -- true", "-limit3": "run --limit 3 x -- true"}
OFFERED_MODES = {FILE: ("-shared", "-limit3"), REDIS: ("-shared", "-limit3"), REDLOCK: ("-shared",),
                 ZK: ("-shared", "-limit3"),
                 PG: ("-shared", "-limit3"), ETCD: ("-shared", "-limit3")}
FILE_SHARED = FILE + "-shared"
FILE_LIMIT = FILE + "-limit3"


def pg_setup_contenders():
    """(dlock, libpq C client, the C client with a durable fence) per
    authentication setup of the pg section, in PG_SETUPS's order: the first
    setup's are PG, LIBPQ and LIBPQ_FENCE, the others' are filed under
    "dlock-pg@SETUP", "libpq-c@SETUP" and "libpq-c+fence@SETUP"."""
    return [(PG, LIBPQ, LIBPQ_FENCE) if i == 0 else (f"{PG}@{setup}", f"{LIBPQ}@{setup}", f"{LIBPQ_FENCE}@{setup}")
            for i, setup in enumerate(PG_SETUPS)]


def mode_contenders(who):
    return [who + suffix for suffix in OFFERED_MODES.get(who, ())]


def base_of(who):
    """The backend contender of a mode contender ("dlock-redis-shared" ->
    "dlock-redis"), and the mode's run flags; (who, ()) for any other."""
    for suffix, flags in MODE_FLAGS.items():
        if who.endswith(suffix) and who[:-len(suffix)] in OFFERED_MODES:
            return who[:-len(suffix)], flags
    return who, ()


# Cells that are command lines, set in code in Markdown.
COMMANDS = {"run x -- true", "flock FILE true", "etcdctl lock x true", "run --shared x -- true",
            "run --limit 3 x -- true", "flock -s FILE true", "etcdctl lock x CMD", "flock FILE CMD"}


class MachineLoad:
    """How busy other processes kept the CPUs between construction and
    others_share(): all CPU time from /proc/stat minus this script's own and
    its children's (the servers count once reaped), as a share of the CPUs' capacity."""

    def __init__(self):
        self.busy, self.own, self.wall = self.sample()

    @staticmethod
    def sample():
        busy = None
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
            # user nice system idle iowait irq softirq steal ...
            busy = (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
        t = os.times()
        return busy, t.user + t.system + t.children_user + t.children_system, time.monotonic()

    def others_share(self):
        busy, own, wall = self.sample()
        if busy is None or self.busy is None or wall <= self.wall:
            return None
        return max(0.0, (busy - self.busy) - (own - self.own)) / ((wall - self.wall) * (os.cpu_count() or 1))


def median(xs):
    return statistics.median(xs)


def p90(xs):
    ordered = sorted(xs)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def ms(ns):
    v = ns / 1e6
    return f"{v:.2f} ms" if v >= 1 else f"{v:.3f} ms"


def mib(kib):
    return f"{kib / 1024:.1f} MiB"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def filesystem_of(path):
    """The type of the filesystem path is on ("ext4", "tmpfs", ...), from
    the longest mount point above it in /proc/self/mounts."""
    path, best, kind = os.path.realpath(path), "", "an unknown filesystem"
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount = fields[1].replace("\\040", " ")
                inside = path == mount or path.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, fields[2]
    except OSError:
        pass
    return kind


def tool_version(argv, name=None):
    """First line of argv's version output; with name, just "name X.Y.Z"."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=5)
        line = (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return f"{name or argv[0]} (unknown version)"
    found = re.search(r"\d+\.\d+(\.\d+)?", line) if name else None
    return f"{name} {found.group(0)}" if found else line


class Table:
    """Rows of figures with their budgets; misses collects the budgets missed."""

    def __init__(self, head, align):
        self.head = head
        self.align = align
        self.rows = []
        self.misses = []

    def ratio(self, what, mine, other, budget, kind="budget"):
        r = mine / other
        ok = "-"
        if budget is not None:
            ok = "yes" if r <= budget else "NO"
            if ok == "NO":
                self.misses.append(f"{what}: {ms(mine)} vs {ms(other)} = {r:.2f}x, {kind} {budget:g}x")
        return [f"{r:.2f}x", f"<={budget:.2f}x" if budget is not None else "-", ok]

    def render(self, title, markdown):
        if markdown:
            lines = [title, "", "| " + " | ".join(self.head) + " |", "|" + "|".join(self.align) + "|"]
            code = lambda c: f"`{c}`" if c in COMMANDS else c
            lines += ["| " + " | ".join(map(code, row)) + " |" for row in self.rows]
            return "\n".join(lines)
        widths = [max(len(r[i]) for r in (self.head, *self.rows)) for i in range(len(self.head))]
        fmt_row = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
        return "\n".join([title, fmt_row(self.head), *map(fmt_row, self.rows)])


def file_table(m):
    t = Table(("metric", "dlock", "flock", "ratio", "budget", "ok"), ["---"] + ["---:"] * 4 + [":-:"])
    for metric, pick, data, budget in (("run x -- true", median, m["run"], BUDGET_RUN_RATIO),
                                       ("run p90", p90, m["run"], None),
                                       ("run CPU (usr+sys)", median, m["run CPU"], BUDGET_RUN_CPU_RATIO),
                                       ("hand-over", median, m["hand-over"], BUDGET_HANDOVER_RATIO),
                                       ("hand-over p90", p90, m["hand-over"], None)):
        d, f = pick(data[FILE]), pick(data[FLOCK])
        t.rows.append([metric, ms(d), ms(f), *t.ratio(f"{metric} (file) vs flock", d, f, budget)])
    for metric, who, other, vs in (("run --shared x -- true", FILE_SHARED, FLOCK_SHARED, "flock -s"),
                                   ("run --limit 3 x -- true", FILE_LIMIT, FILE, "dlock run x (exclusive)")):
        d, o = median(m["run"][who]), median(m["run"][other])
        row = [metric, ms(d), ms(o), *t.ratio(f"{metric} (file) vs {vs}", d, o, None)]
        row[2] = f"{ms(o)} ({vs})"
        t.rows.append(row)
    rss = m["rss"][FILE]
    ok = rss < BUDGET_RSS_KIB
    if not ok:
        t.misses.append(f"peak RSS (file): {mib(rss)}, budget {mib(BUDGET_RSS_KIB)}")
    t.rows.append(["peak RSS", mib(rss), mib(m["rss"][FLOCK]), "-", f"<{mib(BUDGET_RSS_KIB)}", "yes" if ok else "NO"])
    return t


def redis_table(m):
    t = Table(("metric", "dlock (redis)", "compared with", "other", "ratio", "budget", "ok"),
              ["---", "---:", "---", "---:", "---:", "---:", ":-:"])
    flock, etcdctl, redis_cli = "flock FILE true", "etcdctl lock x true", "redis-cli sh lock"
    for metric, pick, data, other, who, budget in (
            ("run x -- true", median, m["run"], flock, FLOCK, BUDGET_REDIS_RUN_VS_FLOCK),
            ("run p90", p90, m["run"], flock, FLOCK, None),
            ("run CPU (usr+sys)", median, m["run CPU"], flock, FLOCK, None),
            ("run x -- true", median, m["run"], etcdctl, ETCDCTL, BUDGET_REDIS_RUN_VS_ETCDCTL),
            ("run CPU (usr+sys)", median, m["run CPU"], etcdctl, ETCDCTL, None),
            ("run x -- true", median, m["run"], redis_cli, REDIS_CLI, BUDGET_REDIS_RUN_VS_REDIS_CLI),
            ("run CPU (usr+sys)", median, m["run CPU"], redis_cli, REDIS_CLI, None)):
        d, o = pick(data[REDIS]), pick(data[who])
        t.rows.append([metric, ms(d), other, ms(o), *t.ratio(f"{metric} (redis) vs {other}", d, o, budget)])
    t.rows.append(["peak RSS", mib(m["rss"][REDIS]), "flock", mib(m["rss"][FLOCK]), "-", "-", "-"])
    add_mode_rows(t, m, REDIS, "redis")
    return t


def add_mode_rows(t, m, who, backend):
    """run --shared and run --limit 3 next to the same backend's exclusive run."""
    for suffix in OFFERED_MODES.get(who, ()):
        if who + suffix not in m["run"]:
            continue
        d, o = median(m["run"][who + suffix]), median(m["run"][who])
        t.rows.append([MODE_ROWS[suffix], ms(d), "run x -- true (exclusive)", ms(o),
                       *t.ratio(f"{MODE_ROWS[suffix]} ({backend}) vs the exclusive run", d, o, None)])


def redlock_table(m, nodes):
    t = Table(("metric", f"dlock (redlock, {nodes} nodes)", "compared with", "other", "ratio", "budget", "ok"),
              ["---", "---:", "---", "---:", "---:", "---:", ":-:"])
    single, flock = "dlock (redis, 1 node)", "flock FILE true"
    for metric, pick, data, other, who, budget in (
            ("run x -- true", median, m["run"], single, REDIS, BUDGET_REDLOCK_RUN_VS_REDIS),
            ("run p90", p90, m["run"], single, REDIS, None),
            ("run CPU (usr+sys)", median, m["run CPU"], single, REDIS, None),
            ("run x -- true", median, m["run"], flock, FLOCK, None)):
        d, o = pick(data[REDLOCK]), pick(data[who])
        t.rows.append([metric, ms(d), other, ms(o), *t.ratio(f"{metric} (redlock) vs {other}", d, o, budget)])
    t.rows.append(["peak RSS", mib(m["rss"][REDLOCK]), single, mib(m["rss"][REDIS]), "-", "-", "-"])
    add_mode_rows(t, m, REDLOCK, "redlock")
    return t


def client_table(m, who, backend, client, client_label, budgets):
    """dlock on a server against flock and against a lock script written
    with the server's client library; budgets: (run vs flock, run vs the
    script; hand-over is in handover_table)."""
    t = Table(("metric", f"dlock ({backend})", "compared with", "other", "ratio", "budget", "ok"),
              ["---", "---:", "---", "---:", "---:", "---:", ":-:"])
    flock = "flock FILE true"
    vs_flock, vs_client = budgets
    for metric, pick, data, other, versus, budget in (
            ("run x -- true", median, m["run"], flock, FLOCK, vs_flock),
            ("run p90", p90, m["run"], flock, FLOCK, None),
            ("run CPU (usr+sys)", median, m["run CPU"], flock, FLOCK, None),
            ("run x -- true", median, m["run"], client_label, client, vs_client),
            ("run p90", p90, m["run"], client_label, client, None),
            ("run CPU (usr+sys)", median, m["run CPU"], client_label, client, None)):
        d, o = pick(data[who]), pick(data[versus])
        t.rows.append([metric, ms(d), other, ms(o), *t.ratio(f"{metric} ({backend}) vs {other}", d, o, budget)])
    t.rows.append(["peak RSS", mib(m["rss"][who]), "flock", mib(m["rss"][FLOCK]), "-", "-", "-"])
    return t


def zk_table(m):
    t = client_table(m, ZK, "zk", KAZOO, "kazoo Lock, python3",
                     (BUDGET_ZK_RUN_VS_FLOCK, BUDGET_ZK_RUN_VS_KAZOO))
    add_mode_rows(t, m, ZK, "zk")
    return t


def pg_table(m):
    # Both pay libpq's connection and authentication, most of a run: the
    # goal is against the libpq C client, in pg_setups_table.
    t = client_table(m, PG, "pg", PSYCOPG2, "psycopg2 advisory lock, python3", (None, None))
    add_mode_rows(t, m, PG, "pg")
    return t


def pg_setups_table(m):
    """`run x -- true` on PostgreSQL against the same lock in a minimal C
    program on libpq (scripts/bench.d/pq_lock.c), the floor of any client on
    libpq, in each authentication setup; goal GOAL_PG_RUN_VS_LIBPQ. Beside
    it, without a goal, the same C client also taking dlock's durable fence
    (pq_lock --fence: its commit waits for a WAL flush)."""
    t = Table(("setup", "dlock (pg)", "libpq C client", "ratio", "goal", "ok", "C client + fence", "ratio",
               "dlock CPU", "libpq CPU"), ["---", "---:", "---:", "---:", "---:", ":-:", "---:", "---:", "---:", "---:"])
    for setup, (dlock, libpq, fenced) in zip(PG_SETUPS, pg_setup_contenders()):
        d, o, f = median(m["run"][dlock]), median(m["run"][libpq]), median(m["run"][fenced])
        t.rows.append([setup, ms(d), ms(o), *t.ratio(f"run x -- true (pg, {setup}) vs libpq C client", d, o,
                                                      GOAL_PG_RUN_VS_LIBPQ, "goal"),
                       ms(f), f"{d / f:.2f}x", ms(median(m["run CPU"][dlock])), ms(median(m["run CPU"][libpq]))])
    return t


def etcd_table(m):
    # Against flock for scale only (no budget); etcdctl's peak RSS too, as
    # etcdctl is what dlock on etcd replaces.
    t = client_table(m, ETCD, "etcd", ETCDCTL, "etcdctl lock x true",
                     (None, BUDGET_ETCD_RUN_VS_ETCDCTL))
    t.rows.append(["peak RSS", mib(m["rss"][ETCD]), "etcdctl", mib(m["rss"][ETCDCTL]), "-", "-", "-"])
    add_mode_rows(t, m, ETCD, "etcd")
    return t


def handover_table(m, who, backend):
    """dlock's hand-over on an engine against each of the engine's tools, from
    the same rounds, the ratio of the medians; GOAL_HANDOVER_VS_TOOLS is on
    the row of the fastest tool (the lowest median), each of ENGINE_FLOORS
    (PostgreSQL's C client with the fence) has its own goal, and flock's row
    is there for scale only."""
    t = Table(("hand-over vs", f"dlock ({backend})", "dlock p90", "other", "other p90", "ratio", "goal", "ok"),
              ["---", "---:", "---:", "---:", "---:", "---:", "---:", ":-:"])
    samples = m["hand-over"]
    d, d90 = median(samples[who]), p90(samples[who])
    tools = ENGINE_TOOLS[who]
    best = min((tool for tool, _ in tools), key=lambda tool: median(samples[tool]))
    rows = [(tool, label, GOAL_HANDOVER_VS_TOOLS if tool == best else None,
             f"hand-over ({backend}) vs the fastest tool, {label}") for tool, label in tools]
    rows += [(tool, label, goal, f"hand-over ({backend}) vs {label}") for tool, label, goal in ENGINE_FLOORS.get(who, ())]
    for tool, label, goal, what in (*rows, (FLOCK, "flock FILE CMD", None, "")):
        o = median(samples[tool])
        row = [label, ms(d), ms(d90), ms(o), ms(p90(samples[tool])), *t.ratio(what, d, o, goal, "goal")]
        if tool == best:
            row[-2] = f"{row[-2]} (fastest)"
        t.rows.append(row)
    return t


# The scale section (issue 22 point 2): at every N, against N = 1.
GOAL_SCALE_HANDOVER_RATIO = 1.5
GOAL_SCALE_WORK_RATIO = 1.5
# Where dlock's man page promises that waiters are served in the order they joined.
FIFO_PROMISED = (REDIS, ZK, PG, ETCD)


def scale_ratio(t, what, mine, base, goal, fmt):
    if base is None or mine is None or base <= 0:
        return "-", True
    r = mine / base
    ok = goal is None or r <= goal
    if not ok:
        t.misses.append(f"{what}: {fmt(mine)} vs {fmt(base)} at N = 1 = {r:.2f}x, goal {goal:g}x")
    return f"{r:.2f}x", ok


def scale_table(who, backend, results, unit):
    """Per N: the hand-over in a chain of N waiters (median, p90, max; the
    median against N = 1), the server's work per hand-over (against N = 1) and whether the
    waiters were served in the order they joined."""
    t = Table(("waiters N", "hand-overs", "median", "p90", "max", "vs N=1", f"work ({unit or 'not counted'})", "vs N=1",
               "order", "ok"), ["---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---", ":-:"])
    base = results[min(results)]
    count = lambda v: "-" if v is None else f"{v:.1f}"
    for n in sorted(results):
        r = results[n]
        med = median(r["hand-over"])
        lat, lat_ok = scale_ratio(t, f"scale ({backend}): hand-over median at N = {n}", med,
                                  median(base["hand-over"]), GOAL_SCALE_HANDOVER_RATIO, ms)
        work, work_ok = scale_ratio(t, f"scale ({backend}): {unit} per hand-over at N = {n}", r["work"], base["work"],
                                    GOAL_SCALE_WORK_RATIO, count)
        fifo = r["inversions"] == 0
        order = ("FIFO" if fifo else f"not FIFO ({r['inversions']} inversions)") + \
            ("" if who in FIFO_PROMISED else " (not promised)")
        order_ok = fifo or who not in FIFO_PROMISED
        if not order_ok:
            t.misses.append(f"scale ({backend}): waiters at N = {n} not served in the order they joined "
                            f"({r['inversions']} inversions)")
        t.rows.append([str(n), str(len(r["hand-over"])), ms(med), ms(p90(r["hand-over"])), ms(max(r["hand-over"])), lat,
                       count(r["work"]), work,
                       order, "yes" if lat_ok and work_ok and order_ok else "NO"])
    return t


def scale_limit_table(backend, results, unit):
    """Per N: the time to admit N holders of --limit N spawned at once, and
    the hand-over from one of them to a waiter while the other N - 1 hold;
    no goals, for scale."""
    t = Table(("holders N", "admit N (median)", "hand-over with N held", "vs N=1", f"work ({unit or 'not counted'})",
               "samples"), ["---:", "---:", "---:", "---:", "---:", "---:"])
    base = results[min(results)]
    for n in sorted(results):
        r = results[n]
        med = median(r["hand-over"])
        t.rows.append([str(n), ms(median(r["admit"])), ms(med), f"{med / median(base['hand-over']):.2f}x",
                       "-" if r["work"] is None else f"{r['work']:.1f}", str(len(r["hand-over"]))])
    return t
