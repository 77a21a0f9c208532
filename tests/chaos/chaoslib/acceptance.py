"""The acceptance checks that every result row shares, the exclusive
cell's (cell.py) and each mode's (modes.py)."""


def register_failures(r, overlaps_what):
    """What the register's counters in row R must show everywhere: no stale
    write accepted, no lost increment (where the row counts them: "-"
    elsewhere), no dlock exit the scenario does not expect, and no overlap
    where the cell allows none. OVERLAPS_WHAT names the overlaps in the
    message ("overlapping sections", "sections: a writer overlapped")."""
    f = []
    if r["stale_acc"] > 0:
        f.append("%d stale writes accepted" % r["stale_acc"])
    if r["lost_inc"] != "-" and r["lost_inc"] > 0:
        f.append("%d lost increments" % r["lost_inc"])
    if r["failed"] > 0:
        f.append("%d unexpected dlock exits (exit codes %s)" % (r["failed"], r["unexpected_codes"]))
    if r["overlaps_allowed"] is None and r["overlaps"] > 0:
        f.append("%d %s (longest %.1f ms)" % (r["overlaps"], overlaps_what, r["longest_ms"]))
    return f
