"""Argument parsing, the outer run (one wrapper per backend and topology)
and the inner run (the cells, inside the wrapper)."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import backends, report, scenarios, server_faults  # noqa: F401 (registers)
from . import redlock_faults  # noqa: F401 (registers)
from . import net_faults  # noqa: F401 (registers)
from . import member_faults  # noqa: F401 (registers)
from .cell import DLOCK, LONG_SECTIONS, ROOT, Cell, any_failures
from .procs import Reaper, log

SCENARIOS = scenarios.REGISTRY
DEFAULT_DURATION = 6.0
DEFAULT_LONG_DURATION = 60.0


def run_inner(args):
    reaper = Reaper()
    url, extra_env, tmpdir = backends.backend_url(args.inner)
    server = backends.ServerControl(args.inner) if args.inner != "file" else None
    results = []
    try:
        for name in args.scenario_list:
            log("%s / %s ..." % (args.inner, name))
            r = Cell(reaper, args.inner, url, SCENARIOS[name], args, extra_env, server).run()
            results.append(r)
            with open(args.out, "w") as f:
                json.dump(results, f)
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return 0


def groups(backend, names):
    """[(topology, [scenario names])] in first-seen order, and the skipped
    names."""
    out, skipped = [], []
    for n in names:
        sc = SCENARIOS[n]
        if not sc.applies(backend):
            skipped.append(n)
            continue
        topo = sc.topology(backend)
        for t, lst in out:
            if t == topo:
                lst.append(n)
                break
        else:
            out.append((topo, [n]))
    return out, skipped


def run_outer(args, entry):
    t0 = time.monotonic()
    all_results = []
    setup_failures = []
    print(report.header(), flush=True)
    for b in args.backends:
        grps, skipped = groups(b, args.scenario_list)
        res_b = []
        cells = len(args.scenario_list) - len(skipped)

        def run_group(topo, names, target=None):
            fd, out = tempfile.mkstemp(prefix="dlock-chaos-%s-" % b, suffix=".json")
            os.close(fd)
            cmd = [entry, "--inner", b, "--out", out,
                   "--scenarios", ",".join(names), "--clients", str(args.clients),
                   "--duration", str(args.duration), "--cells", str(cells)] \
                + (["--long"] if args.long else []) + (["--target", str(target)] if target else [])
            cmd = backends.wrapper(ROOT, b, topo) + cmd
            rc = subprocess.call(cmd, cwd=ROOT)
            try:
                with open(out) as f:
                    res = json.load(f)
            except (OSError, ValueError):
                res = []
            os.unlink(out)
            if rc != 0 or len(res) != len(names):
                setup_failures.append("%s (%s): the run exited %d after %d of %d scenarios"
                                      % (b, topo, rc, len(res), len(names)))
            for r in res:
                if target:
                    r["scenario_label"] = r["scenario"] + " (top-up)"
                for line in report.rows(r, SCENARIOS):
                    print(line, flush=True)
            res_b.extend(res)

        for topo, names in grps:
            run_group(topo, names)
        done = sum(r["sections"] for r in res_b)
        if args.long and done < LONG_SECTIONS:
            # the fault cells are slow (and capped by --duration): the rest
            # of the backend's sections in a cell without faults
            run_group("single", ["none"], LONG_SECTIONS - done)
        for n in skipped:
            r = {"backend": b, "scenario": n, "skipped": SCENARIOS[n].skip_reason(b), "failures": []}
            print(report.row(r, SCENARIOS), flush=True)
            res_b.append(r)
        order = {n: i for i, n in enumerate(args.scenario_list)}
        all_results.extend(sorted(res_b, key=lambda r: (order.get(r["scenario"], 0), "scenario_label" in r)))
        if args.long:
            total_b = sum(r.get("sections", 0) for r in res_b if not r.get("skipped"))
            print("%s: %d critical sections in all" % (b, total_b), flush=True)
            if total_b < LONG_SECTIONS:
                setup_failures.append("%s: only %d critical sections (--long wants %d)"
                                      % (b, total_b, LONG_SECTIONS))
    total = time.monotonic() - t0
    print()
    print("Table (ok*: overlaps this cell's guarantee allows, see --help; longest_ms: the")
    print("longest overlap of two critical sections):")
    print(report.header())
    for r in all_results:
        for line in report.rows(r, SCENARIOS):
            print(line)
    print()
    for r in all_results:
        for line in report.details(r):
            print(line)
    for s in setup_failures:
        print("FAIL: %s" % s)
    print("total runtime %.1f s" % total)
    bad = setup_failures or any(any_failures(r) for r in all_results)
    print("chaos: %s" % ("FAILED" if bad else "all acceptance checks passed"))
    return 1 if bad else 0


def main(doc, entry):
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    m = ap.add_mutually_exclusive_group()
    m.add_argument("--quick", action="store_true")
    m.add_argument("--long", action="store_true")
    ap.add_argument("--scenarios", default=",".join(scenarios.ORDER))
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float,
                    help="seconds per cell: in quick mode (default %g), or at most in long mode "
                    "(default %g)" % (DEFAULT_DURATION, DEFAULT_LONG_DURATION))
    ap.add_argument("--target", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--cells", type=int, help=argparse.SUPPRESS)
    ap.add_argument("backends", nargs="*")
    args = ap.parse_args()
    if args.duration is None:
        args.duration = DEFAULT_LONG_DURATION if args.long else DEFAULT_DURATION
    args.scenario_list = [s for s in args.scenarios.split(",") if s]
    for s in args.scenario_list:
        if s not in SCENARIOS:
            ap.error("unknown scenario %s (known: %s)" % (s, " ".join(scenarios.ORDER)))
    args.backends = args.backends or backends.BACKENDS
    for b in args.backends:
        if b not in backends.BACKENDS:
            ap.error("unknown backend %s (known: %s)" % (b, " ".join(backends.BACKENDS)))
    if not os.access(DLOCK, os.X_OK):
        log("no dlock binary at %s (build it, or set DLOCK)" % DLOCK)
        return 2
    if args.inner:
        return run_inner(args)
    return run_outer(args, entry)
