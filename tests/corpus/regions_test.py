#!/usr/bin/env python3
"""`traceidx regions` (go tool trace's user region page, /userregions) end to end, on the real
binary.

- testdata/regions/basic.test: every row against values worked out by hand from its events;
- Go's traces (the parser's own event lists, events.txt of the goldens): Go's summary of regions
  (each goroutine's list: ended, never begun, inherited at creation, and those its end or the
  trace's closes, unless the goroutine is a system one), grouped by type and the outermost frame
  of the stack each began with, modelled here over those events, against `regions --json`;
- a trace given instead of its index, the text table, and the command line's errors;
- one group's regions (/userregion: --type, --pc, --latmin, --latmax, --sort): basic.test by
  hand, and Go's traces against a model of Go's summary's statistics (each region's: its
  goroutine's GoroutineExecStats at its end less those at its begin), written here from
  Go's internal/trace/summary.go over the parser's events, for every group of the table and
  every bucket of its histogram.

usage: regions_test.py TRACEIDX REPO_TESTDATA
"""
import json
import math
import os
import re
import shutil
import sys
import tempfile

from common import TESTDATA, fail, refuses_garbage, run, without_section
from goevents import golden_indexes, parse, parse_dump, profiles, track_goroutine

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



# ---- one group's regions (/userregion), from Go's summary's statistics ----

RANGE = re.compile(r' Name=(".*?") Scope=(\w+)(?:\((-?\d+)\))?')
PROC = re.compile(r' ProcID=(\d+) (\w+)->(\w+) ')
TASK = re.compile(r' Task=(\d+) ')
FIXED = ["Execution time", "Sched wait time", "Syscall execution time", "Block time (syscall)",
         "Unknown time"]
ZERO = {"exec": 0, "sched": 0, "syscall": 0, "sysblock": 0, "total": 0, "block": {},
        "range": {}}


def snapshot(rec, t):
    """Go's snapshotStat: the statistics so far, the pending state counted up to t."""
    s = {k: rec[k] for k in ("exec", "sched", "syscall", "sysblock")}
    s["total"] = rec["total"] or t - rec["creation"]
    s["block"], s["range"] = dict(rec["block"]), dict(rec["range"])
    if rec["ls"]:
        s["exec"] += t - rec["ls"]
    if rec["lr"]:
        s["sched"] += t - rec["lr"]
    if rec["lb"]:
        s["block"][rec["reason"]] = s["block"].get(rec["reason"], 0) + t - rec["lb"]
    if rec["lsc"]:
        s["syscall"] += t - rec["lsc"]
    if rec["lsb"]:
        s["sched"] += t - rec["lsb"]
    for name, start in rec["lrange"].items():
        s["range"][name] = s["range"].get(name, 0) + t - start
    return s


def sub(a, b):
    r = {k: a[k] - b[k] for k in ("exec", "sched", "syscall", "sysblock", "total")}
    r["block"] = {k: v - b["block"].get(k, 0) for k, v in a["block"].items()}
    r["range"] = {k: v - b["range"].get(k, 0) for k, v in a["range"].items()}
    return r


def region_stats(evs):
    """Every region of Go's summary, in the order they ended: dicts of goroutine, task, type,
    pc, start, end (Go's interval: the first event, the last Sync for missing ones) and
    stats."""
    t0, sync = evs[0].time, evs[0].time
    tend = [e.time for e in evs if e.kind == "Sync"][-1]
    recs, sys_p, sys_g, ranges_p, done = {}, {}, {}, {}, []

    def finish(rec, at, end):
        rec["end"] = end
        final = snapshot(rec, at)
        for k in ("exec", "sched", "syscall", "sysblock", "total", "block", "range"):
            rec[k] = final[k]
        if not is_system(rec["name"]):
            for r in rec["active"]:
                done.append(dict(r, end=end if end is not None else tend,
                                 stats=sub(final, r["begin"])))
        rec.update(active=[], ls=0, lr=0, lb=0, reason="", lsc=0, lsb=0, lrange={})
    for ev in evs:
        if ev.kind == "Sync":
            sync = ev.time
        if ev.goid is not None and ev.old != ev.new:
            def inherited(e):
                top = recs[e.g]["active"][-1]
                return {"goroutine": e.goid, "type": "", "task": top["task"],
                        "pc": outermost(e.stack)[3],
                        "start": e.time, "begin": ZERO}
            old = recs.get(ev.goid)
            rec, ended = track_goroutine(recs, ev, inherited)
            if rec is None:
                continue
            if rec is not old:
                rec.update(creation=sync if ev.old == "Undetermined" else ev.time, total=0,
                           exec=0, sched=0, syscall=0, sysblock=0, block={}, range={}, ls=0,
                           lr=0, lb=0, reason="", lsc=0, lsb=0, lrange={})
            elif ev.old == "Running":
                rec["exec"] += ev.time - rec["ls"]
                rec["ls"] = 0
            elif ev.old == "Waiting" and rec["lb"]:
                rec["block"][rec["reason"]] = rec["block"].get(rec["reason"], 0) + \
                    ev.time - rec["lb"]
                rec["lb"] = 0
            elif ev.old == "Runnable" and rec["lr"]:
                rec["sched"] += ev.time - rec["lr"]
                rec["lr"] = 0
            elif ev.old == "Syscall" and rec["lsc"]:
                if rec["lsb"]:
                    rec["sysblock"] += ev.time - rec["lsb"]
                    rec["syscall"] += rec["lsb"] - rec["lsc"]
                else:
                    rec["syscall"] += ev.time - rec["lsc"]
                rec["lsc"] = rec["lsb"] = 0
                sys_p.pop(sys_g.get(ev.goid, 0), None)
                sys_g.pop(ev.goid, None)
            if ev.new == "Running":
                rec["ls"] = ev.time
            elif ev.new == "Runnable":
                rec["lr"] = ev.time
            elif ev.new == "Waiting" and not ended:
                rec["lb"], rec["reason"] = ev.time, ev.reason
            elif ev.new == "Syscall":
                sys_p[ev.p], sys_g[ev.goid] = ev.goid, ev.p
                rec["lsc"] = ev.time
            if ended:
                finish(rec, ev.time, ev.time)
        elif ev.kind == "StateTransition" and PROC.search(ev.rest):
            m = PROC.search(ev.rest)
            pid, old, new = int(m.group(1)), m.group(2), m.group(3)
            if old != new and new == "Idle" and pid in sys_p:
                rec = recs.get(sys_p.pop(pid))
                if rec is not None:
                    rec["lsb"] = ev.time
        elif ev.kind in ("RangeBegin", "RangeActive", "RangeEnd"):
            m = RANGE.search(ev.rest)
            name, scope = json.loads(m.group(1)), m.group(2)
            sid = int(m.group(3)) if m.group(3) else None
            rec = None
            if ev.kind == "RangeEnd":
                if scope == "Goroutine":
                    rec = recs.get(sid)
                elif scope == "Proc" and (sid, name) in ranges_p:
                    if ranges_p[(sid, name)] == ev.g:
                        rec = recs.get(ev.g)
                    del ranges_p[(sid, name)]
                if rec is None or not rec["lrange"].get(name):
                    continue
                rec["range"][name] = rec["range"].get(name, 0) + ev.time - rec["lrange"].pop(name)
                continue
            if scope == "Goroutine":
                rec = recs.get(sid)
            elif scope == "Proc":
                rec = recs.get(ev.g)
                if rec is not None:
                    ranges_p[(sid, name)] = ev.g
            if rec is None:
                continue
            if ev.kind == "RangeActive":
                if rec["lrange"].get(name):
                    rec["range"][name] = rec["range"].get(name, 0) + sync - rec["lrange"][name]
                rec["lrange"][name] = sync
            else:
                rec["lrange"][name] = ev.time
        elif ev.kind == "RegionBegin":
            rec = recs[ev.g]
            rec["active"].append({"goroutine": ev.g, "type": ev.rtype, "task": int(TASK.search(ev.rest).group(1)),
                                  "pc": outermost(ev.stack)[3], "start": ev.time,
                                  "begin": snapshot(rec, ev.time)})
        elif ev.kind == "RegionEnd":
            rec = recs[ev.g]
            r = rec["active"].pop() if rec["active"] else \
                {"goroutine": ev.g, "type": ev.rtype,
                 "task": int(TASK.search(ev.rest).group(1)), "pc": 0,
                 "start": t0, "begin": ZERO}
            done.append(dict(r, end=ev.time, stats=sub(snapshot(rec, ev.time), r["begin"])))
    for rec in recs.values():
        finish(rec, evs[-1].time, None)
    return t0, done


def detail(model, typ=None, pc=None, latmin=None, latmax=None, sort=None):
    """What `regions --json` with these filters should give, its rows as (goroutine, task,
    total, start, end, {column: value}, {range: value}) in order."""
    t0, regs = model
    sel = [r for r in regs if (typ is None or r["type"] == typ) and (pc is None or r["pc"] == pc)
           and (latmin is None or r["end"] - r["start"] >= latmin)
           and (latmax is None or r["end"] - r["start"] <= latmax)]
    rows, cols, rcols = [], set(), set()
    for r in sel:
        st = r["stats"]
        known = st["exec"] + st["sched"] + st["syscall"] + st["sysblock"] + sum(st["block"].values())
        vals = dict(zip(FIXED, [st["exec"], st["sched"], st["syscall"], st["sysblock"],
                                max(st["total"] - known, 0)]))
        for reason, v in st["block"].items():
            vals["Block time (%s)" % reason] = vals.get("Block time (%s)" % reason, 0) + v
        cols.update(vals)
        rcols.update(st["range"])
        rows.append((r["goroutine"], r["task"], st["total"], r["start"] - t0, r["end"] - t0, vals,
                     dict(st["range"])))
    key = (lambda x: -x[5].get(sort, 0)) if sort else (lambda x: -x[2])
    rows.sort(key=lambda x: (key(x), x[0]))  # stable: then in the order they ended
    cols = sorted(cols, key=lambda c: (c != "Execution time", c.encode()))
    return ([{"goroutine": g, "task": t, "total": tot, "start": a, "end": b,
              "stats": [v.get(c, 0) for c in cols], "ranges": [rv.get(c, 0) for c in sorted(rcols, key=str.encode)]}
             for g, t, tot, a, b, v, rv in rows], cols, sorted(rcols, key=str.encode))


def ours_detail(idx, *args):
    d = json.loads(run([TDX, "regions", idx, "--json"] + list(args), ok=True).stdout)
    if d["count"] != len(d["regions"]):
        fail("regions %s: count %d, %d regions" % (" ".join(args), d["count"], len(d["regions"])))
    return ([{"goroutine": r["goroutine"], "task": r["task"], "total": r["total_ns"],
              "start": r["start_ns"], "end": r["end_ns"], "stats": r["stats"],
              "ranges": r["ranges"]} for r in d["regions"]], d["columns"], d["ranges"]), d

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



def check_detail_basic(tmp):
    """basic.test's regions one by one (its times: see check_basic; G1 runs from the first
    Sync at 1 ns, is preempted at 1900 and runs again at 2310; G2 is runnable from its creation
    at 1200 until it runs at 1910, and ends at 2100)."""
    idx = os.path.join(tmp, "basic.tidx")
    E, S, U = 0, 1, 4  # columns: Execution, Block time (syscall), Sched wait, Syscall, Unknown
    by_hand = {  # filter -> (goroutine, total, execution, sched wait, unknown) in order
        ("--type", "outer"): [(1, 600, 600, 0, 0), (1, 511, 101, 410, 0)],
        ("--type", ""): [(2, 900, 190, 710, 0)],
        # the "orphan" end has no begin: its statistics are G1's from its creation, the Sync
        ("--type", "orphan"): [(1, 1749, 730, 0, 1019)],
        ("--pc", "0x1001"): [(1, 511, 101, 410, 0)],
        ("--pc", "1000"): [(1, 600, 600, 0, 0), (1, 150, 150, 0, 0)],
        ("--latmin", "600ns"): [(1, 1749, 730, 0, 1019), (2, 900, 190, 710, 0),
                                (1, 600, 600, 0, 0)],
        ("--latmax", "511ns"): [(1, 511, 101, 410, 0), (1, 150, 150, 0, 0)],
        # ties (no wait) by goroutine, then in the order they ended
        ("--latmin", "0", "--sort", "Sched wait time"): [
            (2, 900, 190, 710, 0), (1, 511, 101, 410, 0), (1, 150, 150, 0, 0),
            (1, 600, 600, 0, 0), (1, 1749, 730, 0, 1019)],
        ("--type", "outer", "--pc", "0x1000", "--latmin", "1us"): [],
    }
    model = region_stats(parse_dump(TDX, os.path.join(OURS, "regions", "basic.test"), tmp))
    for args, want in by_hand.items():
        (rows, cols, _), d = ours_detail(idx, *args)
        # (no region, no column: Go's columns are those of the regions listed)
        if (cols[:2] != ["Execution time", "Block time (syscall)"] or len(cols) != 5) and rows:
            fail("basic: regions %s: columns %s" % (" ".join(args), cols))
        got = [(r["goroutine"], r["total"], r["stats"][E], r["stats"][2], r["stats"][U])
               for r in rows]
        if got != want or any(r["stats"][S] or r["stats"][3] or r["task"] for r in rows):
            fail("basic: regions %s: %s\nwanted %s" % (" ".join(args), rows, want))
        m = list(args) + [None]
        kw = {"typ": m[m.index("--type") + 1] if "--type" in m else None,
              "pc": int(m[m.index("--pc") + 1], 16) if "--pc" in m else None,
              "latmin": dur(m[m.index("--latmin") + 1]) if "--latmin" in m else None,
              "latmax": dur(m[m.index("--latmax") + 1]) if "--latmax" in m else None,
              "sort": m[m.index("--sort") + 1] if "--sort" in m else None}
        if detail(model, **kw) != (rows, cols, []):
            fail("basic: the model of Go's region statistics disagrees with %s by hand" % (args,))
    _, d = ours_detail(idx, "--type", "outer", "--pc", "1000", "--latmin", "1us",
                       "--latmax", "1.5ms")
    if d["filter"] != '"outer" @ 0x1000 (latency >= 1µs) (latency <= 1.5ms)':
        fail("basic: Go's name of the filter: %r" % d["filter"])
    text = run([TDX, "regions", idx, "--type", "outer"], ok=True).stdout.decode()
    want = ('Regions: "outer"\nCount: 2\n\n'
            "Goroutine  Task  Total  Execution time  Block time (syscall)  Sched wait time  "
            "Syscall execution time  Unknown time\n"
            "1                600ns           600ns                    0s               0s  "
            "                    0s            0s\n"
            "1                511ns           101ns                    0s            410ns  "
            "                    0s            0s\n")
    if text != want:
        fail("basic: regions --type outer, text:\n%s\nwanted:\n%s" % (text, want))
    none = run([TDX, "regions", idx, "--type", "nope", "--sort", "Unknown time"],
               ok=True).stdout.decode()
    if none != 'Regions: "nope"\nCount: 0\n':
        fail("basic: no region of the type: %r" % none)


def dur(s):
    """The few Go durations the tests pass, in ns."""
    for suffix, mult in (("ns", 1), ("us", 1000), ("ms", 1000000)):
        if s.endswith(suffix):
            return int(float(s[:-len(suffix)]) * mult)
    return int(s)


def check_detail_golden(name, idx, evs, table):
    """Every group of the table, and each of its histogram's buckets as its links bound it,
    against the model. Returns the regions and the rows with range time checked."""
    model = region_stats(evs)
    n = ranged = 0
    for row in table["types"]:
        args = ["--type", row["type"], "--pc", row["pc"]]
        rows, d = ours_detail(idx, *args)
        want = detail(model, typ=row["type"], pc=int(row["pc"], 16))
        if rows != want:
            fail("%s: regions %s:\n%s\nwanted:\n%s" % (name, args, rows, want))
        if d["count"] != row["count"]:
            fail("%s: regions %s: %d regions, the table counts %d" % (name, args, d["count"],
                                                                      row["count"]))
        n += d["count"]
        ranged += sum(any(r["ranges"]) for r in rows[0])
        for h in row["histogram"]:
            lat = ["--latmin", "%dns" % h["min_ns"], "--latmax", "%dns" % h["max_ns"]]
            got, _ = ours_detail(idx, *(args + lat))
            want = detail(model, typ=row["type"], pc=int(row["pc"], 16), latmin=h["min_ns"],
                          latmax=h["max_ns"])
            if got != want:
                fail("%s: regions %s:\n%s\nwanted:\n%s" % (name, args + lat, got, want))
    # all of one type, by another column
    if table["types"]:
        typ = table["types"][-1]["type"]
        for col in ("Sched wait time", "Unknown time"):
            got, _ = ours_detail(idx, "--type", typ, "--sort", col)
            if got != detail(model, typ=typ, sort=col):
                fail("%s: regions --type %r --sort %r disagrees with the model" % (name, typ, col))
    return n, ranged


PROFILES = ("net", "sync", "syscall", "sched")


def ours_profile(idx, name, *args):
    d = json.loads(run([TDX, "pprof", name, idx, "--json"] + list(args), ok=True).stdout)
    return sorted((s["count"], s["delay_ns"],
                   tuple((f["func"], f["file"], f["line"], int(f["pc"], 16)) for f in s["frames"]))
                  for s in d["stacks"])


def check_region_profiles(name, idx, evs, table):
    """Go's four region profiles (/regionio, ...) of every group of the table, of one type
    whatever the frame, and of a latency bound, against cmd/trace's algorithm (goevents.profiles)
    over the model's regions. Returns the count of non-empty profiles."""
    _, regs = region_stats(evs)
    sels = [(["--region", r["type"], "--pc", r["pc"]],
             lambda x, r=r: x["type"] == r["type"] and x["pc"] == int(r["pc"], 16))
            for r in table["types"]]
    typ = table["types"][-1]["type"]
    sels.append((["--region", typ], lambda x: x["type"] == typ))
    sels.append((["--latmin", "50us"], lambda x: x["end"] - x["start"] >= 50000))
    nonempty = 0
    for args, pick in sels:
        chosen = {}
        for x in regs:
            if pick(x):
                chosen.setdefault(x["goroutine"], []).append((x["start"], x["end"]))
        want = profiles(evs, regions=chosen)
        for prof in PROFILES:
            got = ours_profile(idx, prof, *args)
            if got != want[prof]:
                fail("%s: pprof %s %s:\n%s\nwanted:\n%s" % (name, prof, args, got, want[prof]))
            nonempty += bool(got)
    return nonempty

def check_cli(tmp):
    idx = os.path.join(tmp, "basic.tidx")
    if "usage: traceidx regions" not in run([TDX, "regions", "--help"], ok=True).stdout.decode():
        fail("regions --help")
    for args in [[], [idx, "--frobnicate"], [idx, idx]]:
        p = run([TDX, "regions"] + args)
        if p.returncode != 2 or not p.stderr:
            fail("regions %s: exit %d, wanted a usage error (2)" % (args, p.returncode))
    for args in [[idx, "--sort", "Total"], [idx, "--type"], [idx, "--pc", "0xg"],
                 [idx, "--pc", ""], [idx, "--latmin", "-1s"], [idx, "--latmax", "soon"]]:
        p = run([TDX, "regions"] + args)
        if p.returncode != 2 or not p.stderr:
            fail("regions %s: exit %d, wanted a usage error (2)" % (args, p.returncode))
    p = run([TDX, "regions", idx, "--type", "outer", "--sort", "Block time (nope)"])
    if p.returncode != 1 or b'they have: "Execution time"' not in p.stderr:
        fail("regions --sort of a column they lack: exit %d\n%s" % (p.returncode, p.stderr))
    p = run([TDX, "pprof", "sync", idx, "--region", "no such type", "--json"])
    if p.returncode != 0 or b"no region is selected" not in p.stderr or \
            json.loads(p.stdout)["stacks"] != []:
        fail("pprof --region of no region: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
    top = run([TDX, "pprof", "sched", idx, "--region", "outer", "--top", "1"]).stdout.decode()
    if not top.startswith('scheduler latency (sched) within 2 regions "outer": 1 wait, 410ns'):
        fail("pprof --region --top names the selection:\n%s" % top)
    refuses_garbage(TDX, "regions", tmp)
    without_section(TDX, idx, 23, ["regions"], "holds no region table", tmp)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_basic(tmp)
        check_detail_basic(tmp)
        check_cli(tmp)
        if not os.path.isdir(os.path.join(TESTDATA, "golden")):
            print("SKIP: %s not found: Go's traces not checked" % TESTDATA)
            return
        n = nonempty = listed = ranged = profiled = 0
        for name, idx, events in golden_indexes(TDX, TESTDATA, tmp):
            evs = parse(events)
            want, got = regions(evs), ours(idx)
            if got != want:
                fail("%s: regions --json:\n%s\nwanted:\n%s" % (name, got, want))
            n += 1
            nonempty += want["regions"] > 0
            if want["regions"]:
                k, r = check_detail_golden(name, idx, evs, want)
                listed, ranged = listed + k, ranged + r
                profiled += check_region_profiles(name, idx, evs, want)
        if n < 20 or nonempty < 3 or listed < 2200 or ranged < 900 or profiled < 20:
            fail("only %d of Go's traces (%d with regions; %d regions listed, %d with range "
                 "time; %d non-empty region profiles) checked" % (n, nonempty, listed, ranged,
                                                                 profiled))
        print("ok: basic.test by hand, and %d of Go's traces (%d with regions; %d regions listed "
              "one by one, %d with range time; %d non-empty region profiles)" %
              (n, nonempty, listed, ranged, profiled))


main()
