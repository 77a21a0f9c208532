#!/usr/bin/env python3
"""A fenced register for the chaos suite (python3 standard library only).

    register.py [--port N] [--port-file FILE] [--report FILE]
                [--mode exclusive|sem|rw] [--limit N]

Listens on 127.0.0.1:PORT (0, the default, picks a free port; the port is
printed on stdout and written to --port-file). One request per line, one
reply per line, so that a bash job can talk to it through /dev/tcp:

    READ <fence> <section-id>            -> the current value (an integer)
    WRITE <value> <fence> <section-id>   -> OK, or STALE when <fence> is lower
                                            than the highest fence accepted

The highest fence accepted counts READs too (a READ whose fence is lower is
still answered, and counted as a stale read): a holder that read with fence
F turns away every later write with a fence < F, so an old holder cannot
slip a write in between a newer holder's READ and WRITE (which would lose
an increment although every write carried a fence).

With --mode sem (a --limit N semaphore's sections) or --mode rw (a shared
lock's readers and writers) the requests are (see ModeRegister):

    ENTER <role> <fence> <slot> <section-id>          -> the current value
    LEAVE <role> <fence> <slot> <section-id> <value>  -> OK or STALE

role: sem, r (reader) or w (writer); slot: DLOCK_SLOT, or - if unset;
value: the writer's value + 1, - for the others. The report then has
overlaps (sem: sections that began while N others ran; rw: overlapping
pairs with a writer in them), reader_overlaps, max_concurrent, fence_order,
slots and without_slot besides the counters below.

    STATS                                -> one line of JSON: counters so far
    DUMP                                 -> writes the report, replies OK FILE
    anything else                        -> ERR ...

A section is what one section-id did: its READ up to its WRITE. A section
whose connection closed without a WRITE (its job was killed) ends when the
connection closed. Every access is recorded with time.time() and
time.monotonic().

On SIGTERM or SIGINT the report is written (to --report, else to stdout) and
the server exits 0. The report is one JSON document:

  sections                 number of sections (section-ids seen)
  overlaps                 pairs of complete sections (different ids) whose
                           [read, write] intervals overlap
  open_overlaps            pairs where one section never wrote (its job was
                           killed): [read, connection closed] overlaps
  longest_open_overlap_ms  the longest of those
  overlaps_both_wrote      ... of which both sections had a write accepted
  longest_overlap_ms       the longest such overlap
  stale_writes_rejected    writes answered STALE
  stale_reads              READs with a fence below the highest seen
  stale_writes_accepted    writes accepted although a different section
                           with a fence >= theirs had already written
                           (must be 0)
  lost_increments          accepted writes whose value was not the previous
                           accepted value + 1
  accepted_writes, final_value   (final_value == accepted_writes when no
                           increment was lost)
  records                  per section: id, fence, read/write wall and
                           monotonic times, values, result
"""

import argparse
import asyncio
import json
import os
import signal
import sys
import time


class Overlaps:
    """The overlaps of complete sections and, apart, those with an
    unfinished section in them (its job killed before its write), each with
    the longest span in seconds."""

    def __init__(self):
        self.complete = self.open = 0
        self.longest = self.open_longest = 0.0

    def add(self, complete, span):
        if complete:
            self.complete += 1
            self.longest = max(self.longest, span)
        else:
            self.open += 1
            self.open_longest = max(self.open_longest, span)


class Sections:
    """What both registers keep: one record per section in order of first
    access, the counters every report has, and the report's frame (the
    sections' intervals, the overlap totals, the records)."""

    def __init__(self):
        self.value = 0
        self.sections, self.order = {}, []
        self.stale_reads = self.accepted = self.stale_rejected = 0
        self.stale_accepted = self.lost_increments = self.errors = 0

    def _record(self, sid, fence, **extra):
        """SID's record, made at its first access; EXTRA: a mode's fields."""
        rec = self.sections.get(sid)
        if rec is None:
            rec = {"id": sid, "fence": fence, **extra, "read_wall": None, "read_mono": None,
                   "read_value": None, "write_wall": None, "write_mono": None,
                   "write_value": None, "result": None, "end_mono": None,
                   "end_wall": None, "closed_without_write": False}
            self.sections[sid] = rec
            self.order.append(sid)
        return rec

    def _began(self, rec):
        """REC's READ or ENTER: the section starts, having seen the value."""
        rec["read_wall"], rec["read_mono"] = time.time(), time.monotonic()
        rec["read_value"] = self.value

    def _ended(self, rec, value):
        """REC's WRITE or LEAVE (carrying VALUE): the section ends."""
        wall, mono = time.time(), time.monotonic()
        rec["write_wall"], rec["write_mono"] = wall, mono
        rec["end_wall"], rec["end_mono"] = wall, mono
        rec["write_value"] = value

    def _reject(self, rec):
        self.stale_rejected += 1
        rec["result"] = "STALE"
        return "STALE"

    def _accept(self, rec):
        self.accepted += 1
        rec["result"] = "OK"
        return "OK"

    def closed(self, sids):
        wall, mono = time.time(), time.monotonic()
        for sid in sids:
            rec = self.sections.get(sid)
            if rec is not None and rec["end_mono"] is None:
                rec["end_wall"], rec["end_mono"] = wall, mono
                rec["closed_without_write"] = True

    def stats(self):
        return {"sections": len(self.sections), "value": self.value,
                "accepted_writes": self.accepted,
                "stale_writes_rejected": self.stale_rejected,
                "stale_reads": self.stale_reads,
                "stale_writes_accepted": self.stale_accepted,
                "lost_increments": self.lost_increments}

    def _intervals(self):
        """(start, end, id, complete) of every section that began, by start:
        [read, write] when complete, else up to its close (its job was
        killed before its write) or now."""
        now = time.monotonic()
        ivs = []
        for sid in self.order:
            r = self.sections[sid]
            start = r["read_mono"] if r["read_mono"] is not None else r["write_mono"]
            if start is None:
                continue
            end = r["end_mono"] if r["end_mono"] is not None else now
            complete = r["read_mono"] is not None and r["write_mono"] is not None
            ivs.append((start, end, sid, complete))
        ivs.sort()
        return ivs

    def _report(self, overlaps, pairs, **extra):
        """The report: stats(), EXTRA, the Overlaps, PAIRS and the records."""
        rep = self.stats()
        rep.update(extra)
        rep.update({"overlaps": overlaps.complete,
                    "longest_overlap_ms": round(overlaps.longest * 1000, 3),
                    "open_overlaps": overlaps.open,
                    "longest_open_overlap_ms": round(overlaps.open_longest * 1000, 3),
                    "final_value": self.value, "errors": self.errors, "overlap_pairs": pairs,
                    "records": [self.sections[s] for s in self.order]})
        return rep


class Register(Sections):
    def __init__(self):
        super().__init__()
        self.max_seen = None           # highest fence of any READ or accepted WRITE
        self.max_written = None        # highest fence of an accepted WRITE
        self.max_written_by = None     # the section that wrote it

    def read(self, fence, sid):
        rec = self._record(sid, fence)
        self._began(rec)
        if self.max_seen is not None and fence < self.max_seen:
            self.stale_reads += 1
            rec["stale_read"] = True
        else:
            self.max_seen = fence
        return str(self.value)

    def write(self, value, fence, sid):
        rec = self._record(sid, fence)
        self._ended(rec, value)
        if self.max_seen is not None and fence < self.max_seen:
            return self._reject(rec)
        if self.max_written is not None and fence <= self.max_written \
                and self.max_written_by != sid:
            # another section with the same fence has already written:
            # two holders were handed one fence
            self.stale_accepted += 1
            rec["stale_accepted"] = True
        if value != self.value + 1:
            self.lost_increments += 1
            rec["lost_increment"] = True
        self.value = value
        self.max_seen = fence
        self.max_written, self.max_written_by = fence, sid
        return self._accept(rec)

    def report(self):
        # complete sections ([read, write]) and unfinished ones ([read, close]:
        # killed before their write) are counted apart
        overlaps, both_wrote, pairs = Overlaps(), 0, []
        active = []  # (end, sid, complete) of earlier sections
        for start, end, sid, complete in self._intervals():
            active = [a for a in active if a[0] > start]
            for e, s, c in active:
                if s == sid:
                    continue
                ov = min(e, end) - start
                if ov <= 0:
                    continue
                a, b = self.sections[s], self.sections[sid]
                overlaps.add(c and complete, ov)
                if c and complete and a["result"] == "OK" and b["result"] == "OK":
                    both_wrote += 1
                if len(pairs) < 200:
                    pairs.append({"a": s, "b": sid, "overlap_ms": round(ov * 1000, 3),
                                  "a_fence": a["fence"], "b_fence": b["fence"],
                                  "a_result": a["result"], "b_result": b["result"]})
            active.append((end, sid, complete))
        return self._report(overlaps, pairs, overlaps_both_wrote=both_wrote)


class ModeRegister(Sections):
    """The register of a semaphore (--mode sem --limit N) or of a shared
    lock (--mode rw). A section is [ENTER, LEAVE] (or [ENTER, close]).

    sem: per slot (DLOCK_SLOT) fenced as the exclusive register is: an ENTER
    or accepted LEAVE raises the slot's highest fence, a LEAVE with a lower
    fence is STALE, one accepted although another section of the slot had
    written with a fence >= its own counts as a stale write accepted. Without
    a slot nothing is turned away; a fence that another section used too is
    counted under stale_writes_accepted, a client's fence not above its
    previous one under fence_order. The report counts the sections that
    began while N or more others ran (over_limit).

    rw: a writer's LEAVE carries value+1 and is STALE when an ENTER or an
    accepted LEAVE of any section had a greater fence; a reader's LEAVE is
    STALE when a writer had a greater fence. An accepted LEAVE whose fence
    is not above every other section's accepted one before it (a writer) or
    is below a writer's accepted one (a reader) counts as a stale write
    accepted. The report counts writer overlaps (pairs with a writer) apart
    from reader overlaps (allowed)."""

    def __init__(self, mode, limit):
        super().__init__()
        self.mode, self.limit = mode, limit
        self.max_seen = {}             # slot (or "rw") -> highest fence of an ENTER or accepted LEAVE
        self.max_written = {}          # slot -> (fence, section) of the highest accepted LEAVE
        self.max_writer = None         # rw: highest writer fence of an ENTER or accepted LEAVE
        self.fences_used = {}          # sem without slot: fence -> section
        self.last_fence = {}           # sem without slot: client -> last fence
        self.fence_order = 0
        self.roles = {}

    def _section(self, sid, role, fence, slot):
        if sid not in self.sections:
            self.roles[role] = self.roles.get(role, 0) + 1
        return self._record(sid, fence, role=role, slot=slot)

    def _key(self, slot):
        return "rw" if self.mode == "rw" else slot

    def enter(self, role, fence, slot, sid):
        rec = self._section(sid, role, fence, slot)
        self._began(rec)
        if self.mode == "sem" and slot is None:
            return str(self.value)
        key = self._key(slot)
        floor = self.max_writer if role == "r" else self.max_seen.get(key)
        if floor is not None and fence < floor:
            self.stale_reads += 1
            rec["stale_read"] = True
        else:
            self.max_seen[key] = max(fence, self.max_seen.get(key, fence))
            if role == "w":
                self.max_writer = fence
        return str(self.value)

    def leave(self, role, fence, slot, sid, value):
        rec = self._section(sid, role, fence, slot)
        self._ended(rec, value)
        if self.mode == "sem" and slot is None:
            other = self.fences_used.get(fence)
            if other is not None and other != sid:
                self.stale_accepted += 1
                rec["stale_accepted"] = True
            self.fences_used[fence] = sid
            client = sid.split("-")[0].split("g")[0]
            last = self.last_fence.get(client)
            if last is not None and fence <= last:
                self.fence_order += 1
                rec["fence_order"] = True
            self.last_fence[client] = fence
            return self._accept(rec)
        key = self._key(slot)
        floor = self.max_writer if role == "r" else self.max_seen.get(key)
        if floor is not None and fence < floor:
            return self._reject(rec)
        written = self.max_written.get(key)
        if role == "r":
            bad = self.max_writer is not None and fence < self.max_writer
        else:
            bad = written is not None and fence <= written[0] and written[1] != sid
        if bad:
            self.stale_accepted += 1
            rec["stale_accepted"] = True
        if role == "w":
            if value != self.value + 1:
                self.lost_increments += 1
                rec["lost_increment"] = True
            self.value = value
            self.max_writer = fence
        self.max_seen[key] = max(fence, self.max_seen.get(key, fence))
        if written is None or fence > written[0]:
            self.max_written[key] = (fence, sid)
        return self._accept(rec)

    def stats(self):
        return dict(super().stats(), mode=self.mode, limit=self.limit, roles=self.roles,
                    fence_order=self.fence_order)

    def report(self):
        ivs = self._intervals()
        slots = sorted({r["slot"] for r in self.sections.values() if r["slot"] is not None})
        without_slot = sum(1 for r in self.sections.values() if r["slot"] is None)
        overlaps, pairs = Overlaps(), []
        if self.mode == "sem":
            # a section that began while `limit` or more others ran: more
            # than limit at once; complete sections apart from the others
            max_conc = 0
            active = []
            for start, end, sid, complete in ivs:
                active = [a for a in active if a[0] > start]
                done = [a for a in active if a[2]]
                if complete:
                    max_conc = max(max_conc, len(done) + 1)
                both = complete and len(done) >= self.limit
                if both or len(active) >= self.limit:
                    # more than limit at once from here until enough of
                    # them ended
                    ends = sorted([a[0] for a in (done if both else active)] + [end])
                    span = ends[len(ends) - self.limit - 1] - start
                    overlaps.add(both, span)
                    if len(pairs) < 200:
                        pairs.append({"section": sid, "fence": self.sections[sid]["fence"],
                                      "slot": self.sections[sid]["slot"],
                                      "running": [[a[1], self.sections[a[1]]["fence"],
                                                   self.sections[a[1]]["slot"]] for a in active],
                                      "overlap_ms": round(span * 1000, 3)})
                active.append((end, sid, complete))
            extra = {"max_concurrent": max_conc, "reader_overlaps": 0}
        else:
            readers = 0
            active = []
            for start, end, sid, complete in ivs:
                active = [a for a in active if a[0] > start]
                b = self.sections[sid]
                for e, s, c in active:
                    ov = min(e, end) - start
                    if ov <= 0:
                        continue
                    a = self.sections[s]
                    if a["role"] == "r" and b["role"] == "r":
                        readers += 1
                        continue
                    overlaps.add(complete and c, ov)
                    if len(pairs) < 200:
                        pairs.append({"a": s, "b": sid, "overlap_ms": round(ov * 1000, 3),
                                      "a_role": a["role"], "b_role": b["role"],
                                      "a_fence": a["fence"], "b_fence": b["fence"],
                                      "a_result": a["result"], "b_result": b["result"]})
                active.append((end, sid, complete))
            extra = {"reader_overlaps": readers}
        return self._report(overlaps, pairs, slots=slots, without_slot=without_slot, **extra)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--report")
    ap.add_argument("--mode", choices=("exclusive", "sem", "rw"), default="exclusive")
    ap.add_argument("--limit", type=int, default=1)
    args = ap.parse_args()
    reg = Register() if args.mode == "exclusive" else ModeRegister(args.mode, args.limit)
    done = None

    def write_report():
        rep = reg.report()
        if args.report:
            tmp = args.report + ".tmp"
            with open(tmp, "w") as f:
                json.dump(rep, f)
            os.replace(tmp, args.report)
        else:
            json.dump(rep, sys.stdout)
            sys.stdout.write("\n")
            sys.stdout.flush()

    async def handle(reader, writer):
        sids = set()
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                parts = line.decode(errors="replace").split()
                try:
                    if len(parts) == 3 and parts[0] == "READ":
                        sids.add(parts[2])
                        reply = reg.read(int(parts[1]), parts[2])
                    elif len(parts) == 4 and parts[0] == "WRITE":
                        sids.add(parts[3])
                        reply = reg.write(int(parts[1]), int(parts[2]), parts[3])
                    elif args.mode != "exclusive" and len(parts) == {"ENTER": 5, "LEAVE": 6}.get(parts[0]) \
                            and parts[1] in ("sem", "r", "w"):
                        role, fence, sid = parts[1], int(parts[2]), parts[4]
                        slot = None if parts[3] == "-" else int(parts[3])
                        sids.add(sid)
                        if parts[0] == "ENTER":
                            reply = reg.enter(role, fence, slot, sid)
                        else:
                            reply = reg.leave(role, fence, slot, sid,
                                              None if parts[5] == "-" else int(parts[5]))
                    elif parts == ["STATS"]:
                        reply = json.dumps(reg.stats())
                    elif parts == ["DUMP"]:
                        write_report()
                        reply = "OK " + (args.report or "-")
                    else:
                        reg.errors += 1
                        reply = "ERR bad request"
                except ValueError:
                    reg.errors += 1
                    reply = "ERR bad number"
                writer.write(reply.encode() + b"\n")
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            reg.closed(sids)
            writer.close()

    async def serve():
        nonlocal done
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(s, done.set)
        server = await asyncio.start_server(handle, "127.0.0.1", args.port, backlog=128)
        port = server.sockets[0].getsockname()[1]
        if args.port_file:
            tmp = args.port_file + ".tmp"
            with open(tmp, "w") as f:
                f.write("%d\n" % port)
            os.replace(tmp, args.port_file)
        print(port, flush=True)
        async with server:
            await done.wait()
        write_report()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
