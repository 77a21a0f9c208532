"""The table of cells and the per-cell details."""

import json

COLS = [("backend", 8), ("scenario", 36), ("sections", 8), ("overlaps", 8), ("stale_acc", 9),
        ("stale_rej", 9), ("lost_inc", 8), ("longest_ms", 10), ("outlived_ms", 11), ("open_ovl", 8),
        ("failed", 6), ("faults", 26), ("ok", 4)]


def header():
    return " ".join(k.ljust(w) for k, w in COLS)


def row(r, scenarios):
    if r.get("skipped"):
        vals = {k: "-" for k, _ in COLS}
        vals.update(backend=r["backend"], scenario=r["scenario"], faults=r["skipped"], ok="n/a")
    else:
        vals = {k: r.get(k, "") for k, _ in COLS}
        vals["scenario"] = r.get("scenario_label", r["scenario"])
        # a mode row (modes.py): what its clients saw, beside the cell's faults
        vals["faults"] = r["info"] if r.get("mode") else scenarios[r["scenario"]].faults_cell(r)
        if vals["outlived_ms"] is None:
            vals["outlived_ms"] = "-"
        ok = "FAIL" if r["failures"] else "ok"
        if ok == "ok" and r["overlaps"] and r["overlaps_allowed"]:
            ok = "ok*"
        vals["ok"] = ok
    return " ".join(str(vals[k]).ljust(w) for k, w in COLS)


def rows(r, scenarios):
    """The cell's row and those of its modes."""
    return [row(r, scenarios)] + [row(m, scenarios) for m in r.get("modes", [])]


def mode_details(m):
    lines = ["  %s: exit codes %s; sections by role %s; accepted %d, stale reads %d%s%s"
             % (m["scenario_label"].split(" ", 1)[1], json.dumps(m["exit_codes"], sort_keys=True),
                json.dumps(m["roles"], sort_keys=True), m["accepted_writes"], m["stale_reads"],
                "" if m["mode"] != "rw" else ", final value %d" % m["final_value"],
                "" if not m["overlaps"] else "; first %s" % json.dumps(m["overlap_pairs"]))]
    if m["overlaps"] and m["overlaps_allowed"]:
        lines.append("    allowed overlaps (ok*): %s" % m["overlaps_allowed"])
    for f in m["failures"]:
        lines.append("    FAIL: %s" % f)
    return lines


def details(r):
    lines = []
    if r.get("skipped"):
        return lines
    extra = ["exit codes %s" % json.dumps(r["exit_codes"], sort_keys=True),
             "accepted writes %d, final value %d" % (r["accepted_writes"], r["final_value"])]
    if r["pauses"]:
        extra.append("pauses %s" % json.dumps(r["pauses"]))
    if r["server_faults"]:
        extra.append("server faults %s" % json.dumps(
            [{"member": f["member"], "ms": f["ms"], "holder": f["holder"], "holder_rc": f.get("holder_rc"),
              **({"delay_ms": f["delay_ms"]} if "delay_ms" in f else {})} for f in r["server_faults"]]))
    o = r["outlived"]
    extra.append("observer: %d of %d sections seen held, polls %s, outlived worst %s"
                 % (o["observed"], o["observed"] + o["unobserved"], json.dumps(o["poll_ms"]),
                    json.dumps([{k: w[k] for k in ("id", "fence", "ms")} for w in o["worst"][:3]])))
    if r.get("net_stops"):
        extra.append("partitioned holders %s" % json.dumps(r["net_stops"]))
    if r["overlaps"]:
        extra.append("overlaps both wrote %d, first pairs %s"
                     % (r["overlaps_both_wrote"], json.dumps(r["overlap_pairs"][:3])))
    lines.append("%s/%s (%.1f s): %s" % (r["backend"], r["scenario"], r["seconds"], "; ".join(extra)))
    if r["overlaps"] and r["overlaps_allowed"]:
        lines.append("  allowed overlaps (ok*): %s" % r["overlaps_allowed"])
    for n in r["notes"]:
        lines.append("  note: %s" % n)
    for f in r["failures"]:
        lines.append("  FAIL: %s" % f)
    for m in r.get("modes", []):
        lines.extend(mode_details(m))
    if r["failures"] and o["worst"] and o["worst"][0].get("polls"):
        # what the backend showed around the worst section's end
        w = o["worst"][0]
        lines.append("  worst section %s (fence %s): observer polls, ms after gone [held, undecided, answers]:"
                     % (w["id"], w["fence"]))
        lines.extend("    %s" % json.dumps(p) for p in w["polls"][-40:])
    return lines
