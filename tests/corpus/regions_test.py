#!/usr/bin/env python3
"""`traceidx regions` (go tool trace's user region page, /userregions) end to end, on the real
binary.

- testdata/regions/basic.test: every row against values worked out by hand from its events;
- Go's traces (the parser's own event lists, events.txt of the goldens): Go's summary of regions
  (each goroutine's list: ended, never begun, inherited at creation, and those its end or the
  trace's closes, unless the goroutine is a system one), grouped by type and the outermost frame
  of the stack each began with, modelled here over those events, against `regions --json`;
- a trace given instead of its index, the text table, and the command line's errors.

usage: regions_test.py TRACEIDX REPO_TESTDATA
"""
import json
import math
import os
import shutil
import sys
import tempfile

from common import TESTDATA, fail, refuses_garbage, run, without_section
from goevents import golden_indexes, parse, parse_dump, track_goroutine

TDX, OURS = sys.argv[1], sys.argv[2]
LOG_DIV = math.log(math.pow(10, 1.0 / 5))
NO_FRAME = ("", "", 0, 0)


def is_system(name):
    return name == "" or (name != "runtime.main" and name.startswith("runtime."))


def outermost(stack):
    f = stack[-1] if stack else NO_FRAME
    return (f[0], f[1] or "", f[2] or 0, f[3])


def regions(evs):
    """The rows `regions --json` should give for these events."""
    t0 = evs[0].time
    tend = [e.time for e in evs if e.kind == "Sync"][-1]
    recs, done = {}, []  # done: (type, frame, duration) in the order the regions ended

    def close(rec, end):
        if not is_system(rec["name"]):
            for typ, start, frame in rec["active"]:
                done.append((typ, frame, (end if end is not None else tend) - start))
        rec["active"] = []

    for ev in evs:
        if ev.goid is not None and ev.old != ev.new:
            rec, ended = track_goroutine(recs, ev, lambda e: ("", e.time, outermost(e.stack)))
            if ended:
                close(rec, ev.time)
        elif ev.kind == "RegionBegin":
            recs[ev.g]["active"].append((ev.rtype, ev.time, outermost(ev.stack)))
        elif ev.kind == "RegionEnd":
            rec = recs[ev.g]
            if rec["active"]:
                typ, start, frame = rec["active"].pop()
                done.append((typ, frame, ev.time - start))
            else:
                done.append((ev.rtype, NO_FRAME, ev.time - t0))
    for rec in recs.values():
        close(rec, None)
    groups = {}
    for typ, frame, d in done:
        h = groups.setdefault((typ, frame), {"count": 0, "b": {}, "min": 0, "max": 0})
        b = int(math.log(d) / LOG_DIV) if d > 0 else 0
        h["b"][b] = h["b"].get(b, 0) + 1
        if b < h["min"] or h["max"] == 0:  # Go's TimeHistogram.Add
            h["min"] = b
        h["max"] = max(h["max"], b)
        h["count"] += 1
    rows = []
    for (typ, (fn, file, line, pc)), h in sorted(
            groups.items(), key=lambda kv: (kv[0][0].encode(), kv[0][1][3], kv[0][1][0].encode(),
                                            kv[0][1][1].encode(), kv[0][1][2])):
        rows.append({"type": typ, "func": fn, "pc": "0x%x" % pc, "file": file, "line": line,
                     "count": h["count"],
                     "histogram": [{"min_ns": int(math.exp(b * LOG_DIV)),
                                    "max_ns": int(math.exp((b + 1) * LOG_DIV)),
                                    "count": h["b"].get(b, 0)}
                                   for b in range(h["min"], h["max"] + 1)]})
    return {"regions": len(done), "types": rows}


def ours(idx):
    return json.loads(run([TDX, "regions", idx, "--json"], ok=True).stdout)


def check_basic(tmp):
    """testdata/regions/basic.test: its first event (a Sync) is at 1 ns, its last at 2311 ns."""
    trace = os.path.join(OURS, "regions", "basic.test")
    idx = os.path.join(tmp, "basic.tidx")
    run([TDX, "build", trace, "-o", idx], ok=True)
    got = ours(idx)
    by_hand = [  # type, pc, line, duration: G2's inherited region ends with G2 (2100 - 1200);
        # G3's is left out (a system goroutine); "orphan" counts from the first event; the
        # second "outer" runs to the trace's end (2311 - 1800)
        ("", 0x1002, 12, 900), ("inner", 0x1000, 10, 150), ("orphan", 0, 0, 1749),
        ("outer", 0x1000, 10, 600), ("outer", 0x1001, 11, 511)]
    rows = [(r["type"], int(r["pc"], 16), r["line"], r["count"],
             [(h["min_ns"], h["count"]) for h in r["histogram"]]) for r in got["types"]]
    want = [(t, pc, line, 1, [(int(math.exp(int(math.log(d) / LOG_DIV) * LOG_DIV)), 1)])
            for t, pc, line, d in by_hand]
    if got["regions"] != 5 or rows != want:
        fail("basic: regions --json:\n%s\nwanted:\n%s" % (rows, want))
    if got != regions(parse_dump(TDX, trace, tmp)):
        fail("basic: the model of Go's summary disagrees with the values by hand")
    text = run([TDX, "regions", idx], ok=True).stdout.decode()
    for w in ["5 regions, 5 types by where they began\n",
              'Region type "outer": 1 region, begun at main.main @ 0x1001 (main.go:11)\n',
              'Region type "orphan": 1 region, begun at (no stack)\n', "      1.584µs  ####"]:
        if w not in text:
            fail("basic: regions' text lacks %r:\n%s" % (w, text))
    # a trace is answered from the index beside it, and only then
    beside = os.path.join(tmp, "beside.test")
    shutil.copyfile(trace, beside)
    p = run([TDX, "regions", beside])
    if p.returncode != 1 or b"traceidx build" not in p.stderr:
        fail("regions of a trace with no index: exit %d\n%s" % (p.returncode, p.stderr))
    run([TDX, "build", beside], ok=True)
    if ours(beside) != got:
        fail("regions TRACE differs from regions INDEX")


def check_cli(tmp):
    idx = os.path.join(tmp, "basic.tidx")
    if "usage: traceidx regions" not in run([TDX, "regions", "--help"], ok=True).stdout.decode():
        fail("regions --help")
    for args in [[], [idx, "--frobnicate"], [idx, idx]]:
        p = run([TDX, "regions"] + args)
        if p.returncode != 2 or not p.stderr:
            fail("regions %s: exit %d, wanted a usage error (2)" % (args, p.returncode))
    refuses_garbage(TDX, "regions", tmp)
    without_section(TDX, idx, 23, ["regions"], "holds no region table", tmp)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_basic(tmp)
        check_cli(tmp)
        if not os.path.isdir(os.path.join(TESTDATA, "golden")):
            print("SKIP: %s not found: Go's traces not checked" % TESTDATA)
            return
        n = nonempty = 0
        for name, idx, events in golden_indexes(TDX, TESTDATA, tmp):
            want, got = regions(parse(events)), ours(idx)
            if got != want:
                fail("%s: regions --json:\n%s\nwanted:\n%s" % (name, got, want))
            n += 1
            nonempty += want["regions"] > 0
        if n < 20 or nonempty < 3:
            fail("only %d of Go's traces (%d with regions) checked" % (n, nonempty))
        print("ok: basic.test by hand, and %d of Go's traces (%d with regions)" % (n, nonempty))


main()
