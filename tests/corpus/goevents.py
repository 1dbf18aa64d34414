"""Go's parser output as the goldens hold it (events.txt: `go tool trace -d=parsed`), read into
the fields the analysis tests model cmd/trace with."""
import gzip
import json
import os
import re

EVENT = re.compile(r'^M=\S+ P=(\S+) G=(\S+) (\w+) Time=(-?\d+)(.*)$')
TRANSITION = re.compile(r' GoID=(\d+) (\w+)->(\w+) Reason=(".*")$')
REGION = re.compile(r' Task=\d+ Type=(".*")$')
FRAME = re.compile(r'^\t(.*) @ 0x([0-9a-f]+)$')
WHERE = re.compile(r'^\t\t(.*):(\d+)$')


class Ev:
    """One event: time, kind, g (the event's goroutine, None for -1), p (its P, -1 for none),
    rest (the text after its time), and for a goroutine's state transition goid, old, new and
    reason; for a region its type; stack (the event's own) and tstack (a transition's), tuples
    of frames (func, file, line, pc), innermost first."""
    __slots__ = ("time", "kind", "g", "p", "rest", "goid", "old", "new", "reason", "rtype",
                 "stack", "tstack")

    def __init__(self, time, kind, g, p=-1, rest=""):
        self.time, self.kind, self.g, self.p, self.rest = time, kind, g, p, rest
        self.goid = self.old = self.new = self.rtype = None
        self.reason = ""
        self.stack = self.tstack = ()


def parse(path):
    """The events of an events.txt (or events.txt.gz)."""
    if not os.path.exists(path):
        path += ".gz"
    opener = gzip.open if path.endswith(".gz") else open
    evs, which = [], None
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = EVENT.match(line)
            if m:
                g, rest = int(m.group(2)), m.group(5)
                ev = Ev(int(m.group(4)), m.group(3), None if g == -1 else g, int(m.group(1)), rest)
                tm = TRANSITION.search(rest) if ev.kind == "StateTransition" else None
                if tm:
                    ev.goid, ev.old, ev.new = int(tm.group(1)), tm.group(2), tm.group(3)
                    ev.reason = json.loads(tm.group(4))
                rm = REGION.search(rest) if ev.kind in ("RegionBegin", "RegionEnd") else None
                if rm:
                    ev.rtype = json.loads(rm.group(1))
                evs.append(ev)
                which = None
            elif line in ("Stack=", "TransitionStack="):
                which = "stack" if line == "Stack=" else "tstack"
            elif which and FRAME.match(line):
                fm = FRAME.match(line)
                frames = getattr(evs[-1], which)
                setattr(evs[-1], which, frames + ((fm.group(1), None, None, int(fm.group(2), 16)),))
            elif which and WHERE.match(line):
                wm = WHERE.match(line)
                frames = getattr(evs[-1], which)
                fn, _, _, pc = frames[-1]
                setattr(evs[-1], which, frames[:-1] + ((fn, wm.group(1), int(wm.group(2)), pc),))
    return evs


def parse_dump(tdx, trace, tmp):
    """Our own event list of a trace (`dump --events` prints Go's), read as the goldens'."""
    from common import run
    path = os.path.join(tmp, "events.txt")
    with open(path, "wb") as f:
        f.write(run([tdx, "dump", "--events", trace], ok=True).stdout)
    return parse(path)


def golden_traces(testdata):
    """(name, trace path, events.txt path) of every golden of a successful trace but the large
    synthetic one."""
    golden = os.path.join(testdata, "golden")
    for name in sorted(os.listdir(golden)):
        d = os.path.join(golden, name)
        if not os.path.isdir(d) or name == "synth-split" or \
                os.path.exists(os.path.join(d, "error.txt")):
            continue
        if name == "go122":
            trace = os.path.join(testdata, "seed", "go122.test")
        else:
            trace = next((p for p in (os.path.join(testdata, "go-tests-bin", name + ".trace"),
                                      os.path.join(testdata, "v1", name + ".trace"))
                          if os.path.exists(p)), None)
        yield name, trace, os.path.join(d, "events.txt")


def golden_indexes(tdx, testdata, tmp):
    """golden_traces, each trace indexed into tmp: (name, index path, events.txt path)."""
    from common import fail, run
    for name, trace, events in golden_traces(testdata):
        if not trace:
            fail("%s: no trace for the golden" % name)
        idx = os.path.join(tmp, name + ".tidx")
        run([tdx, "build", trace, "-o", idx], ok=True)
        yield name, idx, events


def track_goroutine(recs, ev, inherited):
    """Go's summary's goroutine records, for a goroutine's state transition ev: a fresh record
    {"name", "active"} at its creation, in the unnamed region inherited(ev) when its creator is
    in a region; its name from the outermost frame of its first transition stack. Returns the
    record and whether the goroutine ended there (NotExist, or blocked forever), or (None,
    False) for a goroutine without a record."""
    if ev.old in ("Undetermined", "NotExist"):
        creator = recs.get(ev.g)
        rec = {"name": "", "active": []}
        if creator and creator["active"]:
            rec["active"] = [inherited(ev)]
        recs[ev.goid] = rec
    rec = recs.get(ev.goid)
    if rec is None:
        return None, False
    if rec["name"] == "" and ev.tstack:
        rec["name"] = ev.tstack[-1][0]
    return rec, ev.new == "NotExist" or (ev.new == "Waiting" and ev.reason == "forever")


# ---- cmd/trace's pprof-style profiles (pprof_test, and the region profiles of regions_test) ----

MAX_PCS = 128


def outermost_intervals(ivs):
    """Go's outermost regions of one goroutine: by start (then end), each kept only if it starts
    at or after the end of the last kept one (the first compared with time 0)."""
    kept, last = [], 0
    for a, b in sorted(ivs):
        if last <= a:
            kept.append((a, b))
            last = b
    return kept


def goroutines(evs):
    """The summary's goroutines (the last record of an id): [first run, end, name]."""
    gs = {}
    for ev in evs:
        t, g, old, new, reason = ev.time, ev.goid, ev.old, ev.new, ev.reason
        if g is None or old == new:
            continue
        if old in ("Undetermined", "NotExist"):
            gs[g] = [0, 0, ""]
        if g not in gs:
            continue
        if gs[g][2] == "" and ev.tstack:
            gs[g][2] = ev.tstack[-1][0]
        if new == "Running" and gs[g][0] == 0:
            gs[g][0] = t
        if new == "NotExist" or (new == "Waiting" and reason == "forever"):
            gs[g][1] = t
    return gs


def profiles(evs, gname="", regions=None):
    """cmd/trace's four profiles of the events, of the goroutines named gname ("": all):
    {profile: sorted [(count, ns, stack)]}. A wait counts within its goroutine's life, from its
    first run to its end; or, given regions ({goroutine: [(start, end)]}, the selected regions
    of the region profiles), its overlaps with the outermost of its goroutine's."""
    gs = {g: x for g, x in goroutines(evs).items() if not gname or x[2] == gname}
    if regions is not None:
        gs = {g: outermost_intervals(ivs) for g, ivs in regions.items()}
    tend = evs[-1].time
    out = {}
    for name, state, track in (
            ("net", "Waiting", lambda r: r == "network"),
            ("sync", "Waiting", lambda r: "chan" in r or "sync" in r or "select" in r),
            ("syscall", "Syscall", lambda r: True),
            ("sched", "Runnable", lambda r: True)):
        recs, tracking = {}, {}
        for ev in evs:
            t, g, new, reason, stack = ev.time, ev.goid, ev.new, ev.reason, ev.stack
            if g is None:
                continue
            began = tracking.get(g)
            if began is None:
                if new == state and track(reason):
                    tracking[g] = (t, stack)
                continue
            if new == state:
                continue
            del tracking[g]
            if g not in gs:
                continue
            if regions is not None:
                o = sum(max(min(b, t) - max(a, began[0]), 0) for a, b in gs[g])
            else:
                a, b = gs[g][0], gs[g][1] or tend
                if b < began[0] or t < a:
                    continue
                o = min(b, t) - max(a, began[0])
            if o <= 0:
                continue
            pcs = [fr[3] for fr in began[1][:MAX_PCS]]
            while pcs and pcs[-1] == 0:
                pcs.pop()
            r = recs.setdefault(tuple(pcs), [0, 0, None])
            r[0] += 1
            r[1] += o
            r[2] = began[1][:MAX_PCS]
        out[name] = sorted((c, ns, st) for c, ns, st in recs.values())
    return out
