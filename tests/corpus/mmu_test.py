#!/usr/bin/env python3
"""`traceidx mmu` (go tool trace's minimum mutator utilization page, /mmu) end to end, on the
real binary.

- Go's traces (the parser's own event lists, events.txt of the goldens): Go's utilization
  functions (MutatorUtilizationV2) and its MMU curve (the banded search, the worst windows),
  modelled here over those events, against `mmu --json` (Go's plot) and `mmu --window --json`
  (its details), for several choices of what counts as GC, to the last bit of every double;
- the model itself against a brute-force minimum (every window with an edge on a change);
- testdata/mmu/basic.test: values worked out by hand from its events;
- a trace given instead of its index, the text table, and the command line's errors.

usage: mmu_test.py TRACEIDX REPO_TESTDATA
"""
import bisect
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from fractions import Fraction

from common import TESTDATA, fail, refuses_garbage, run, without_section
from goevents import golden_indexes, parse

TDX, OURS = sys.argv[1], sys.argv[2]
STW, BACKGROUND, ASSIST, SWEEP, PERPROC = 1, 2, 4, 8, 16
NAMES = {"stw": STW, "background": BACKGROUND, "assist": ASSIST, "sweep": SWEEP}

METRIC = re.compile(r' Name="([^"]*)" Value=Value\{Uint64\((\d+)\)\}')
RANGE = re.compile(r' Name=(".*?") Scope=(\w+)(?:\((-?\d+)\))?')
LABEL = re.compile(r' Label=(".*") Resource=')


def events(path):
    """(time, kind, p, g, detail) of every event of an events.txt (goevents.parse's)."""
    out = []
    for ev in parse(path):
        d, rest = None, ev.rest
        if ev.kind == "Metric":
            mm = METRIC.search(rest)
            d = (mm.group(1), int(mm.group(2))) if mm else (None, 0)
        elif ev.kind.startswith("Range"):
            rm = RANGE.search(rest)
            d = (json.loads(rm.group(1)), int(rm.group(3)) if rm.group(2) == "Goroutine" else -1)
        elif ev.kind == "Label":
            d = json.loads(LABEL.search(rest).group(1))
        elif ev.kind == "StateTransition" and ev.goid is not None:
            d = (ev.goid, ev.old, ev.new)
        out.append((ev.time, ev.kind, ev.p, -1 if ev.g is None else ev.g, d))
    return out


def add_util(u, t, v):
    if u:
        if v == u[-1][1]:
            return
        if t == u[-1][0]:
            if v < u[-1][1]:
                u[-1] = (t, v)
            return
    u.append((t, v))


def executing(s):
    return s in ("Running", "Syscall")


def utilization(evs, flags):
    """Go's MutatorUtilizationV2 over the events (RangeActive counts only before the first Sync,
    which the parser always sends first)."""
    out, ps, stw = [], [], 0  # ps: [gc, series]
    ingc, bgmark, seen_sync = set(), set(), False
    per = bool(flags & PERPROC)
    for t, kind, p, g, d in evs:
        if kind == "Sync":
            seen_sync = True
        if kind == "Metric" and d[0] == "/sched/gomaxprocs:threads":
            n = d[1]
            if len(ps) > n:
                if per:
                    for x in ps[n:]:
                        add_util(out[x[1]], t, 0)
                del ps[n:]
            while len(ps) < n:
                s = 0
                if per or not out:
                    s = len(out)
                    out.append([(t, 1)])
                ps.append([0, s])
        if not ps:
            continue
        if kind == "RangeActive" and not seen_sync:
            fail("RangeActive before any Sync: the model does not do Go's back-fill")
        if kind in ("RangeBegin", "RangeEnd"):
            name, scope_g = d
            delta = 1 if kind == "RangeBegin" else -1
            if flags & STW and name.startswith("stop-the-world") and "GC" in name:
                stw += delta
            elif flags & SWEEP and name == "GC incremental sweep":
                ps[p][0] += delta
            elif flags & ASSIST and name == "GC mark assist":
                ps[p][0] += delta
                if scope_g != -1:
                    (ingc.add if delta > 0 else ingc.discard)(scope_g)
        elif kind == "StateTransition" and d:
            goid, old, new = d
            if goid in ingc or goid in bgmark:
                if not executing(old) and executing(new):
                    ps[p][0] += 1
                elif executing(old) and not executing(new):
                    ps[p][0] -= 1
        elif kind == "Label":
            if flags & BACKGROUND and d.startswith("GC ") and d != "GC (idle)":
                if not (per and d == "GC (dedicated)"):
                    bgmark.add(g)
                    ps[p][0] += 1
        if not per:
            gcps = len(ps) if stw > 0 else sum(1 for x in ps if x[0] > 0)
            add_util(out[0], t, 1 - gcps / len(ps))
        else:
            for x in ps:
                add_util(out[x[1]], t, 0.0 if stw > 0 or x[0] > 0 else 1.0)
    for x in ps:
        add_util(out[x[1]], evs[-1][0], 0)
    return out


# ---- Go's MMUCurve ----

class Series:
    def __init__(self, util):
        self.util = util
        self.sums, s, prev = [], 0.0, (0, 0.0)
        for u in util:
            s += prev[1] * float(u[0] - prev[0])
            self.sums.append(s)
            prev = u
        nb = min(1000, len(util))
        dur = util[-1][0] - util[0][0]
        self.bd = max(1, (dur + nb - 1) // nb)
        self.bands = []
        left = Integ(self, 0)
        for i in range(nb + 1):
            st, en = self.band_time(i)
            cum = left.advance(st)
            mn, j = 1.0, left.pos
            while j < len(util) and util[j][0] < en:
                mn = min(mn, util[j][1])
                j += 1
            self.bands.append((mn, cum, left.pos))

    def band_time(self, i):
        st = i * self.bd + self.util[0][0]
        return st, st + self.bd


class Integ:
    def __init__(self, s, pos):
        self.s, self.pos = s, pos

    def advance(self, t):
        u = self.s.util
        pos = self.pos
        if pos + 8 < len(u) and u[pos + 8][0] > t:
            while pos + 1 < len(u) and u[pos + 1][0] <= t:
                pos += 1
        else:
            lo, hi = pos, len(u)
            while lo < hi:
                h = (lo + hi) // 2
                if u[h][0] <= t:
                    lo = h + 1
                else:
                    hi = h
            pos = lo - 1
        self.pos = pos
        partial = u[pos][1] * float(t - u[pos][0]) if t != u[pos][0] else 0.0
        return self.s.sums[pos] + partial

    def next(self, t):
        u = self.s.util
        for i in range(self.pos, len(u)):
            if u[i][0] > t:
                return u[i][0]
        return (1 << 63) - 1


def down(h, less, i0, n):
    i = i0
    while True:
        j1 = 2 * i + 1
        if j1 >= n:
            break
        j = j1
        if j1 + 1 < n and less(h[j1 + 1], h[j1]):
            j = j1 + 1
        if not less(h[j], h[i]):
            break
        h[i], h[j] = h[j], h[i]
        i = j
    return i > i0


def up(h, less, j):
    while j > 0:
        i = (j - 1) // 2
        if not less(h[j], h[i]):
            break
        h[i], h[j] = h[j], h[i]
        j = i


def win_less(a, b):
    return a[1] > b[1] if a[1] != b[1] else a[0] > b[0]


class Acc:
    def __init__(self, nworst):
        self.mmu, self.bound, self.nworst, self.w = 1.0, 1.0, nworst, []

    def add(self, t, mu, window):
        self.mmu = min(self.mmu, mu)
        self.bound = self.mmu
        if self.nworst == 0:
            return mu == 0
        w = self.w
        if len(w) < self.nworst or mu < w[0][1]:
            keep = False
            for i, ui in enumerate(w):
                if t + window > ui[0] and ui[0] + window > t:
                    if ui[1] <= mu:
                        keep = True
                    else:
                        n = len(w) - 1
                        if n != i:
                            w[i], w[n] = w[n], w[i]
                            if not down(w, win_less, i, n):
                                up(w, win_less, i)
                        w.pop()
                    break
            if not keep:
                w.append((t, mu))
                up(w, win_less, len(w) - 1)
                if len(w) > self.nworst:
                    w[0], w[-1] = w[-1], w[0]
                    down(w, win_less, 0, len(w) - 1)
                    w.pop()
        self.bound = 1.0 if len(w) < self.nworst else max(self.bound, w[0][1])
        return len(w) == self.nworst and w[0][1] == 0


def band_utils(s, si, window):
    bd = s.bd
    minb, maxb = (window + bd - 1) // bd, (window + 2 * (bd - 1)) // bd
    tail = window % bd
    out = []
    for i in range(max(0, len(s.bands) - maxb + 1)):
        l, r1, r2 = s.bands[i][0], s.bands[i + minb - 1][0], s.bands[i + maxb - 1][0]
        mb = min(l, min(r1, r2))
        util = 0.0
        if minb == 1:
            util += mb * float(window)
        else:
            util += mb * float(bd)
            mid = min(r1, r2) if mb == l else min(l, r2) if mb == r1 else min(l, r1)
            util += mid * float(tail)
        if minb > 2:
            util += s.bands[i + minb - 1][1] - s.bands[i + 1][1]
        out.append((si, i, util / float(window)))
    return out


def band_mmu(s, bi, window, acc):
    left = Integ(s, s.bands[bi][2])
    right = Integ(s, s.bands[bi][2])
    t, end = s.band_time(bi)
    end = min(end, s.util[-1][0] - window)
    while True:
        r = right.advance(t + window)
        mu = (r - left.advance(t)) / float(window)
        if acc.add(t, mu, window) or t == end:
            break
        min_t = t + int((mu - acc.bound) * float(window))
        t1, t2 = left.next(t), right.next(t + window) - window
        t = t1 if t1 < t2 else t2
        t = max(t, min_t)
        if t >= end:
            t = end


def run_curve(series, window, acc):
    if window <= 0:
        acc.mmu = 0
        return
    h, wins = [], []
    for si, s in enumerate(series):
        wins.append(min(window, s.util[-1][0] - s.util[0][0]))
        h += band_utils(s, si, wins[-1])
    less = lambda a, b: a[2] < b[2]  # noqa: E731
    for i in range(len(h) // 2 - 1, -1, -1):
        down(h, less, i, len(h))
    while h and h[0][2] < acc.bound:
        band_mmu(series[h[0][0]], h[0][1], wins[h[0][0]], acc)
        h[0], h[-1] = h[-1], h[0]
        down(h, less, 0, len(h) - 1)
        h.pop()


def mmu(series, window):
    a = Acc(0)
    run_curve(series, window, a)
    return a.mmu


def worst(series, window, n=10):
    a = Acc(n)
    run_curve(series, window, a)
    return sorted(a.w, key=lambda w: (w[1], w[0]))


def plot(series, util):
    x = 1000000000
    while x > 1:
        if mmu(series, x) < 0.0001:
            break
        x //= 1000
    xmax = min(x * 1000000, max(u[-1][0] for u in util) - min(u[0][0] for u in util))
    lmin, lmax = math.log(float(x)), math.log(float(xmax))
    curve = []
    for i in range(100):
        w = int(math.exp(float(i) / 99 * (lmax - lmin) + lmin))
        curve.append([float(w), mmu(series, w)])
    return {"curve": curve, "quantiles": None, "xMax": xmax, "xMin": x}


def brute(util, window):
    """The exact minimum mean over windows inside the function, from every window with an edge
    on a change (the windowed mean is piecewise linear between those)."""
    t0, t1 = util[0][0], util[-1][0]
    window = min(window, t1 - t0)
    if window <= 0:
        return None
    starts = {t0, t1 - window}
    for t, _ in util:
        for s in (t, t - window):
            if t0 <= s <= t1 - window:
                starts.add(s)

    times, pre = [t for t, _ in util], [Fraction(0)]
    for (ta, va), (tb, _) in zip(util, util[1:]):
        pre.append(pre[-1] + Fraction(va) * (tb - ta))

    def integral(x):
        k = bisect.bisect_right(times, x) - 1
        return pre[k] + Fraction(util[k][1]) * (x - times[k])
    return min((integral(s + window) - integral(s)) / window for s in sorted(starts))


def flagstr(flags):
    return ",".join(k for k, v in NAMES.items() if flags & v)


def check_golden(name, idx, evs_path):
    evs = events(evs_path)
    checked = 0
    for flags in (STW | BACKGROUND | ASSIST, STW | BACKGROUND | ASSIST | SWEEP | PERPROC,
                  STW, BACKGROUND, ASSIST | PERPROC, SWEEP, 0):
        util = utilization(evs, flags)
        args = [TDX, "mmu", idx, "--include", flagstr(flags)] + \
            (["--per-goroutine"] if flags & PERPROC else [])
        if not util:
            p = run(args + ["--json"])
            if p.returncode != 1 or b"GOMAXPROCS" not in p.stderr:
                fail("%s: no GOMAXPROCS, but exit %d: %s" % (name, p.returncode, p.stderr))
            continue
        series = [Series(u) for u in util]
        want = plot(series, util)
        got = json.loads(run(args + ["--json"], ok=True).stdout)
        if got != want:
            diff = [(a, b) for a, b in zip(got["curve"], want["curve"]) if a != b][:3]
            fail("%s flags %s: plot differs: %s / %s, rows %s" %
                 (name, flagstr(flags), {k: got[k] for k in ("xMin", "xMax")},
                  {k: want[k] for k in ("xMin", "xMax")}, diff))
        # the model's minimum against the exact one (coarse windows keep this quick)
        for w in (want["xMin"] * 10, want["xMax"] // 3):
            for u in util[:4]:
                exact = brute(u, w)
                if exact is not None and abs(float(exact) - mmu([Series(u)], w)) > 1e-9:
                    fail("%s flags %s: the model's MMU(%d) of a function is %r, exactly %r" %
                         (name, flagstr(flags), w, mmu([Series(u)], w), float(exact)))
        for w in (want["xMin"] * 100, want["xMax"] // 7 or 1, 10 ** 6):
            rows = worst(series, w)
            got = json.loads(run(args + ["--window", str(w), "--json"], ok=True).stdout)
            want_rows = [{"Time": t, "MutatorUtil": u,
                          "URL": "/trace?view=proc&start=0&end=0#%s:%s" %
                          (gofmt_v(t / 1e6), gofmt_v((t + w) / 1e6))} for t, u in rows]
            if got != (want_rows or None):
                fail("%s flags %s window %d: worst windows %s, want %s" %
                     (name, flagstr(flags), w, got[:3] if got else got, want_rows[:3]))
        checked += 1
    return checked


def gofmt_v(v):
    """fmt's %v of a float64 (strconv's 'g' with the shortest digits): positional from 1e-4
    below 1e6, else an exponent of at least two digits (2.6937730680384e+07)."""
    r = repr(v)
    if v != 0 and (abs(v) < 1e-4 or abs(v) >= 1e6):
        d = next(s for s in ("%.*e" % (p, v) for p in range(17)) if float(s) == v)
        mant, exp = d.split("e")
        return "%se%s%02d" % (mant, exp[0], abs(int(exp)))
    return r[:-2] if r.endswith(".0") else r


def check_synth(tmp):
    """The details' links on a split trace: Go links the first split range whose end time (an
    elapsed time) exceeds the window's start (a trace time), else the last range."""
    trace = os.path.join(TESTDATA, "synth", "synth-split.trace")
    ranges = os.path.join(TESTDATA, "golden", "synth-split", "ranges.json")
    if not os.path.exists(trace) or not os.path.exists(ranges):
        print("SKIP: %s not found: the links to split ranges not checked" % trace)
        return
    rs = json.load(open(ranges))
    idx = os.path.join(tmp, "synth.tidx")
    run([TDX, "build", trace, "-o", idx], ok=True)
    rows = mmu_json(idx, "--window", "10ms")
    if not rows or len(rows) != 10:
        fail("synth-split: %s worst windows" % rows)
    for r in rows:
        pick = next((x for x in rs if x["endTime"] > r["Time"]), rs[-1])
        t, e = gofmt_v(r["Time"] / 1e6), gofmt_v((r["Time"] + 10 ** 7) / 1e6)
        want = "/trace?view=proc&start=%d&end=%d#%s:%s" % (pick["start"], pick["end"], t, e)
        if r["URL"] != want:
            fail("synth-split: the window at %d links %s, Go %s" % (r["Time"], r["URL"], want))


def mmu_json(idx, *args):
    return json.loads(run([TDX, "mmu", idx, "--json"] + list(args), ok=True).stdout)


def mmu_at(idx, window, *args):
    """The MMU for one window, from the worst window's utilization."""
    rows = mmu_json(idx, "--window", str(window), *args)
    return rows[0]["MutatorUtil"]


def check_basic(tmp):
    """testdata/mmu/basic.test (see its header) against values worked out by hand."""
    trace = os.path.join(OURS, "mmu", "basic.test")
    idx = os.path.join(tmp, "basic.tidx")
    run([TDX, "build", trace, "-o", idx], ok=True)

    def close(got, want, what):
        if abs(got - want) > 1e-12:
            fail("basic: %s is %r, by hand %r" % (what, got, want))
    # default (stw, background, assist), one function for the system: 1 from 1030; 0 in the
    # stop-the-world; 0.5 for the assist's two halves, the worker's first run from its label,
    # and from its second run to the end (Go's double count); 0 at the final Sync, 5001
    plot = mmu_json(idx)
    if (plot["xMin"], plot["xMax"], plot["quantiles"]) != (1, 5001 - 1030, None):
        fail("basic: plot span %s" % {k: plot[k] for k in ("xMin", "xMax", "quantiles")})
    rows = mmu_json(idx, "--window", "100")
    if rows[0]["Time"] != 1100 or rows[0]["MutatorUtil"] != 0 or \
            rows[0]["URL"] != "/trace?view=proc&start=0&end=0#0.0011:0.0012":
        fail("basic: the worst 100ns window is %s, by hand the stop-the-world at 1100" % rows[0])
    if len(rows) != 10 or any(r["MutatorUtil"] < 0.5 for r in rows[1:]):
        fail("basic: the other worst 100ns windows %s" % rows[1:])
    # mark assists only: P0 in GC 1300-1400 and 1500-1600
    rows = mmu_json(idx, "--window", "100", "--include", "assist")
    if [(r["Time"], r["MutatorUtil"]) for r in rows[:2]] != [(1300, 0.5), (1500, 0.5)] or \
            rows[2]["MutatorUtil"] <= 0.5:
        fail("basic: assists' worst windows %s" % rows[:3])
    close(mmu_at(idx, 300, "--include", "assist"), 200 / 300, "the assists' MMU(300ns)")
    # background workers only: P1 stays in GC after its worker's second run (2300 on), so a
    # 2000ns window there is at 0.5 (it would be 1 without Go's double count)
    close(mmu_at(idx, 2000, "--include", "background"), 0.5, "the workers' MMU(2us)")
    rows = mmu_json(idx, "--window", "100", "--include", "background")
    if rows[0]["MutatorUtil"] != 0.5 or not any(r["Time"] >= 2300 and r["MutatorUtil"] == 0.5
                                                 for r in rows):
        fail("basic: the workers' worst windows %s" % rows)
    # per P: a dedicated worker does not count; the stop-the-world stops both Ps
    close(mmu_at(idx, 100, "--per-goroutine", "--include", "background"), 1.0,
          "per P, the workers' MMU")
    close(mmu_at(idx, 100, "--per-goroutine"), 0.0, "per P, MMU(100ns)")
    close(mmu_at(idx, 150, "--per-goroutine"), 1 / 3, "per P, MMU(150ns)")
    close(mmu_at(idx, 100, "--include", ""), 1.0, "counting nothing, MMU(100ns)")
    pct = mmu_json(idx, "--percentiles")
    if pct["quantiles"] != [0, 0.001, 0.01, 0.05] or \
            pct["curve"] != [r + r[1:] * 3 for r in plot["curve"]]:
        fail("basic: --percentiles %s" % pct["curve"][:3])
    # the model agrees with the values by hand
    util = utilization(events_of(trace, tmp), STW | BACKGROUND | ASSIST)
    want = [[(1030, 1), (1100, 0), (1200, 1), (1300, 0.5), (1400, 1), (1500, 0.5), (1600, 1),
             (2010, 0.5), (2100, 1), (2200, 0.5), (5001, 0)]]
    if util != want:
        fail("basic: the model's function %s, by hand %s" % (util, want))
    text = run([TDX, "mmu", idx], ok=True).stdout.decode()
    for w in ["Minimum mutator utilization (system; counting stop-the-world, background "
              "workers, mark assists)\n", "\n100ns        0.0000\n", "\n2µs "]:
        if w not in text:
            fail("basic: mmu's text lacks %r:\n%s" % (w, text))
    if text.count("\n") != 12 or "\n1ns" in text:
        fail("basic: mmu's text has not 10 windows (2ns to 2us):\n%s" % text)
    if mmu_json(idx)["curve"][0] != [1, 0]:
        fail("basic: Go's MMU(1ns) is 0 (a window at the trace's end)")
    text = run([TDX, "mmu", idx, "--window", "100ns"], ok=True).stdout.decode()
    if "  0.000 at 1.099µs" not in text or "--range 1099:+100\n" not in text:
        fail("basic: mmu --window's text:\n%s" % text)
    # a trace is answered from the index beside it
    beside = os.path.join(tmp, "beside.test")
    shutil.copyfile(trace, beside)
    run([TDX, "build", beside], ok=True)
    if mmu_json(beside) != plot:
        fail("mmu TRACE differs from mmu INDEX")
    return idx


def events_of(trace, tmp):
    path = os.path.join(tmp, "events.txt")
    with open(path, "wb") as f:
        f.write(run([TDX, "dump", "--events", trace], ok=True).stdout)
    return events(path)


def check_cli(tmp, idx):
    if "usage: traceidx mmu" not in run([TDX, "mmu", "--help"], ok=True).stdout.decode():
        fail("mmu --help")
    for args in [[], [idx, "--frobnicate"], [idx, idx], [idx, "--include", "gc"],
                 [idx, "--include", "stw,"], [idx, "--window", "0"], [idx, "--window", "1q"],
                 [idx, "--window"], [idx, "--percentiles"],
                 [idx, "--json", "--percentiles", "--window", "1ms"]]:
        p = run([TDX, "mmu"] + args)
        if p.returncode != 2 or not p.stderr:
            fail("mmu %s: exit %d, wanted a usage error (2)" % (args, p.returncode))
    refuses_garbage(TDX, "mmu", tmp)
    if os.access("/dev/full", os.W_OK):
        for args in [[], ["--json"], ["--window", "1us"], ["--window", "1us", "--json"]]:
            with open("/dev/full", "wb") as full:
                p = subprocess.run([TDX, "mmu", idx] + args, stdout=full, capture_output=False,
                                   stderr=subprocess.PIPE, timeout=60)
            if p.returncode != 1 or b"write failed: No space left on device" not in p.stderr:
                fail("mmu %s >/dev/full: exit %d\n%s" % (args, p.returncode, p.stderr))
    without_section(TDX, idx, 24, ["mmu"], "mutator utilization", tmp)
    # a trace that never gives GOMAXPROCS has no utilization, as in Go
    none = os.path.join(tmp, "none.tidx")
    run([TDX, "build", os.path.join(OURS, "regions", "basic.test"), "-o", none], ok=True)
    p = run([TDX, "mmu", none])
    if p.returncode != 1 or b"GOMAXPROCS" not in p.stderr or p.stdout:
        fail("mmu of a trace without GOMAXPROCS: exit %d\n%s" % (p.returncode, p.stderr))


def main():
    tmp = tempfile.mkdtemp(prefix="tdx-mmu-")
    try:
        check_cli(tmp, check_basic(tmp))
        check_synth(tmp)
        total = traces = 0
        if os.path.isdir(os.path.join(TESTDATA, "golden")):
            for name, idx, evs in golden_indexes(TDX, TESTDATA, tmp):
                total += check_golden(name, idx, evs)
                traces += 1
            if traces < 20 or total < 30:
                fail("only %d of Go's traces, %d plots, checked" % (traces, total))
            print("Go's traces: %d (trace, flags) plots and their worst windows match the model"
                  % total)
        else:
            print("SKIP: %s/golden not found (set TRACEIDX_TESTDATA): Go's traces not checked"
                  % TESTDATA)
        print("PASS")
    finally:
        shutil.rmtree(tmp)


main()
