"""The semaphore (--limit N) and shared (--shared) clients of a cell.

They run in the same cells as the exclusive clients, at the same time, on
names of their own (chaos-SCENARIO-sem, chaos-SCENARIO-rw), each mode with a
register of its own (tests/chaos/register.py --mode sem|rw), so that they go
through the same faults at no extra wall time. A mode runs on a backend only
where BACKEND_MODES lists it, and only in the scenarios whose modes
attribute is true (the redlock-* scenarios work on one exclusive holder's
keys)."""

from .acceptance import register_failures

# The modes each backend offers. Adding a mode to a backend is adding it
# here (Redlock takes --limit 1 only: no semaphore).
BACKEND_MODES = {
    "file": ("sem", "rw"),
    "redis": ("sem", "rw"),
    "redlock": ("rw",),
    "zk": ("sem", "rw"),
    "postgres": ("sem", "rw"),
    "etcd": ("sem", "rw"),
}
# The backends whose semaphores number their slots (DLOCK_SLOT): fences are
# checked per slot there; elsewhere every fence must be unique and grow per
# client
SLOTTED = ("file", "redis", "postgres")

SEM_LIMIT = 2
# mode -> [(role, dlock arguments)], one entry per client loop. Fewer than
# the 8 exclusive clients: the machine has 2 cores, and the timing checks
# (a paused holder's exit within 200 ms of SIGCONT) must still hold
MODE_CLIENTS = {
    "sem": [("sem", "--limit %d" % SEM_LIMIT)] * (SEM_LIMIT + 1),
    "rw": [("r", "--shared"), ("r", "--shared"), ("w", ""), ("w", "")],
}
LABELS = {"sem": "+sem limit %d" % SEM_LIMIT, "rw": "+shared r/w"}


def modes_for(backend, scenario):
    return BACKEND_MODES.get(backend, ()) if getattr(scenario, "modes", True) else ()


def client_specs(backend, scenario, exclusive):
    """[(mode, role, dlock arguments)] per client id: EXCLUSIVE exclusive
    clients (mode None) first, then those of each mode."""
    specs = [(None, None, "")] * exclusive
    for m in modes_for(backend, scenario):
        specs += [(m, role, extra) for role, extra in MODE_CLIENTS[m]]
    return specs


def row(cell, mode, rep, failed, codes, unexpected, allowed, notes):
    """The result row of MODE in CELL from its register's report REP."""
    r = {"backend": cell.backend, "scenario": cell.scenario.name, "mode": mode,
         "scenario_label": "%s %s" % (cell.scenario.name, LABELS[mode]),
         "sections": rep["sections"], "overlaps": rep["overlaps"],
         "stale_acc": rep["stale_writes_accepted"], "stale_rej": rep["stale_writes_rejected"],
         "stale_reads": rep["stale_reads"],
         "lost_inc": rep["lost_increments"] if mode == "rw" else "-",
         "longest_ms": rep["longest_overlap_ms"], "outlived_ms": None,
         "open_ovl": rep["open_overlaps"], "failed": failed, "exit_codes": codes,
         "unexpected_codes": unexpected, "overlaps_allowed": allowed,
         "fence_order": rep["fence_order"], "roles": rep["roles"],
         "slots": rep["slots"], "without_slot": rep["without_slot"],
         "reader_overlaps": rep["reader_overlaps"], "max_concurrent": rep.get("max_concurrent"),
         "accepted_writes": rep["accepted_writes"], "final_value": rep["final_value"],
         "overlap_pairs": rep["overlap_pairs"][:3], "notes": notes}
    if mode == "sem":
        r["info"] = "max %s of %d, slots %s" % (r["max_concurrent"], SEM_LIMIT,
                                                  ",".join(map(str, r["slots"])) or "-")
    else:
        r["info"] = "r %d w %d, %d reader ovl" % (r["roles"].get("r", 0), r["roles"].get("w", 0),
                                                 r["reader_overlaps"])
    r["failures"] = acceptance(r, cell.backend)
    return r


def acceptance(r, backend):
    what = "more than %d holders at once" % SEM_LIMIT if r["mode"] == "sem" else "a writer overlapped"
    f = ["no critical section ran"] if r["sections"] == 0 else []
    # lost_inc is "-" in a sem row: a semaphore's holders do not count
    f += register_failures(r, "sections: " + what)
    if r["fence_order"] > 0:
        f.append("%d sections whose fence was not above their client's previous one" % r["fence_order"])
    if r["overlaps_allowed"] is None and r["stale_reads"] > 0:
        # with no overlap, a lower fence after a higher one was handed out
        # out of order
        f.append("%d sections entered with a fence below an earlier section's" % r["stale_reads"])
    if r["mode"] == "sem":
        if backend in SLOTTED and r["without_slot"]:
            f.append("%d sections without DLOCK_SLOT (this backend numbers its slots)" % r["without_slot"])
        if backend not in SLOTTED and r["slots"]:
            f.append("DLOCK_SLOT set (slots %s) where the harness expects none: update SLOTTED" % r["slots"])
        if r["slots"] and max(r["slots"]) >= SEM_LIMIT:
            f.append("DLOCK_SLOT %d is not below the limit %d" % (max(r["slots"]), SEM_LIMIT))
    if r["mode"] == "rw" and r["scenario"] == "none":
        # in the fault-free cell only: with two writers looping, a backend
        # that lets a waiting writer go first (Redis) can keep readers out
        # of a short fault cell
        for role in ("r", "w"):
            if not r["roles"].get(role):
                f.append("no %s section ran" % ("reader" if role == "r" else "writer"))
    return f
