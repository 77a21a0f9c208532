"""Figures, budgets and tables for scripts/bench: what the measurements
mean against each budget, printed as aligned text or as Markdown."""

import math
import platform
import re
import statistics
import subprocess

BUDGET_RUN_RATIO = 1.30
BUDGET_HANDOVER_RATIO = 1.20
BUDGET_RSS_KIB = 8 * 1024
BUDGET_REDIS_RUN_VS_FLOCK = 2.0
BUDGET_REDIS_RUN_VS_ETCDCTL = 0.3
BUDGET_REDIS_RUN_VS_REDIS_CLI = 0.3
BUDGET_REDIS_HANDOVER_RATIO = 1.3

# The contenders, by the key their samples are filed under.
FILE = "dlock"
FLOCK = "flock"
REDIS = "dlock-redis"
ETCDCTL = "etcdctl"
REDIS_CLI = "redis-cli-sh"


# Cells that are command lines, set in code in Markdown.
COMMANDS = {"run x -- true", "flock FILE true", "etcdctl lock x true"}


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

    def ratio(self, what, mine, other, budget):
        r = mine / other
        ok = "-"
        if budget is not None:
            ok = "yes" if r <= budget else "NO"
            if ok == "NO":
                self.misses.append(f"{what}: {ms(mine)} vs {ms(other)} = {r:.2f}x, budget {budget:g}x")
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
                                       ("run CPU (usr+sys)", median, m["run CPU"], None),
                                       ("hand-over", median, m["hand-over"], BUDGET_HANDOVER_RATIO),
                                       ("hand-over p90", p90, m["hand-over"], None)):
        d, f = pick(data[FILE]), pick(data[FLOCK])
        t.rows.append([metric, ms(d), ms(f), *t.ratio(f"{metric} (file) vs flock", d, f, budget)])
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
            ("run CPU (usr+sys)", median, m["run CPU"], redis_cli, REDIS_CLI, None),
            ("hand-over", median, m["hand-over"], "flock hand-over", FLOCK, BUDGET_REDIS_HANDOVER_RATIO),
            ("hand-over p90", p90, m["hand-over"], "flock hand-over", FLOCK, None)):
        d, o = pick(data[REDIS]), pick(data[who])
        t.rows.append([metric, ms(d), other, ms(o), *t.ratio(f"{metric} (redis) vs {other}", d, o, budget)])
    t.rows.append(["peak RSS", mib(m["rss"][REDIS]), "flock", mib(m["rss"][FLOCK]), "-", "-", "-"])
    return t
