#!/usr/bin/env python3
"""End-to-end checks of `traceidx query` and `traceidx ranges` (the real binary), one ctest test
per case.

usage: query.py TRACEIDX TRACEGEN CHECK [ARG...]

checks:
  golden NAME        build the index of a golden trace (default and tiny checkpoint intervals);
                     every view of golden/NAME (full, mid, thread, goroutine-G, ranges) must equal
                     Go's under viewer-json-diff.py
  synth              the split trace: `ranges --json` and `--range '#N'` against the goldens
  differential TRACE every goroutine and task query equals the direct generator's output
                     (`traceidx viewjson`), with checkpoints every few events
  background         a generated trace whose background task (task 0) has more goroutines and
                     regions than one TASKX record holds: its task documents equal the direct
                     generator's, from an index written with spilled sorts
  window TRACE|gen   time windows: equal to the direct generator's (`viewjson --window`), and
                     exactly the overlap of the whole output plus counters as of the start
  idle               a generated server with 80000 idle connections: checkpoints spaced by the
                     goroutines that exist (by default only), windows and goroutine documents
                     equal to the direct generator's, the index the same for -j1 and -j2
  stitch             adjacent windows of a generated multi-generation trace cover the joined one
  invariants         the seed trace's query output passes viewer-json.md section 8
  split              a generated trace large enough to split: the stored ranges equal the
                     splitter run over the recorded output, partition it, and '#N' serves them
  cli                errors and file handling of query/ranges
"""
import collections
import filecmp
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

from common import SANITIZE, TESTDATA, fail, need
from common import run as run_cmd

TMP = None
T = None
TRACEGEN = None


def run(args, timeout=600, ok=True):
    return run_cmd(args, timeout, ok)


def tool_diff():
    return need(os.path.join(TESTDATA, "..", "tools", "viewer-json-diff.py"))


def json_equal(golden, actual, what):
    # the same bytes are the same document, if it is one (the canonical comparison of a large
    # one takes seconds); anything else goes through it
    if filecmp.cmp(golden, actual, shallow=False):
        try:
            load(actual)
        except ValueError as e:
            fail("%s: not a JSON document: %s" % (what, e))
        return
    p = subprocess.run([sys.executable, tool_diff(), golden, actual], capture_output=True)
    if p.returncode != 0:
        fail("%s differs from %s:\n%s" % (what, golden, p.stdout.decode(errors="replace")[:3000]))


def build(trace, every=None, name="ix.tidx", extra=()):
    out = os.path.join(TMP, name)
    args = [T, "build", "--quiet", "-o", out, trace] + list(extra)
    if every:
        args += ["--checkpoint-every", every]
    run(args)
    return out


def query(index, *args, out="q.json"):
    path = os.path.join(TMP, out)
    run([T, "query", index, "-o", path] + list(args))
    return path


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return json.loads(f.read())


def params(d, f):
    return json.load(open(os.path.join(d, "params.json")))[f]["query"]


def gen_trace(size, seed, extra=()):
    path = os.path.join(TMP, "gen-%s-%d.trace" % (size, seed))
    run([TRACEGEN, "--size", size, "--seed", seed, "--quiet", "-o", path] + list(extra))
    return path


# ---- golden ----

def check_golden(name):
    d = need(os.path.join(TESTDATA, "golden", name))
    trace = need(os.path.join(TESTDATA, "go-tests-bin", name + ".trace"))
    for every in (None, "7"):
        ix = build(trace, every)
        tag = "%s (checkpoints every %s events)" % (name, every or "default")
        json_equal(os.path.join(d, "full.json"), query(ix), tag + " full")
        p = params(d, "mid.json")
        json_equal(os.path.join(d, "mid.json"), query(ix, "--start", p["start"], "--end", p["end"]), tag + " mid")
        json_equal(os.path.join(d, "thread.json"), query(ix, "--view", "threads"), tag + " thread")
        for f in sorted(os.listdir(d)):
            m = re.match(r"goroutine-(\d+)\.json$", f)
            if m:
                json_equal(os.path.join(d, f), query(ix, "--goroutine", m.group(1)), tag + " " + f)
        got = json.loads(run([T, "ranges", "--json", ix]).stdout)
        want = json.load(open(os.path.join(d, "ranges.json")))
        if [{k: r[k] for k in ("name", "start", "end", "startTime", "endTime")} for r in got] != want:
            fail("%s ranges: got %r, want %r" % (tag, got, want))
    print("ok: %s: full, mid, thread, goroutine and ranges equal Go's" % name)


def check_synth():
    d = need(os.path.join(TESTDATA, "golden", "synth-split"))
    trace = need(os.path.join(TESTDATA, "synth", "synth-split.trace"))
    ix = build(trace)
    got = json.loads(run([T, "ranges", "--json", ix]).stdout)
    want = json.load(open(os.path.join(d, "ranges.json")))
    ends = json.load(open(os.path.join(d, "params.json")))["ranges.json"]["last_range_endTime_observed"]
    if len(got) != len(want):
        fail("ranges: %d, want %d" % (len(got), len(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        for k in ("start", "end", "startTime"):
            if g[k] != w[k]:
                fail("range %d %s: %r, want %r" % (i, k, g[k], w[k]))
        last = i == len(want) - 1
        if not last and (g["endTime"] != w["endTime"] or g["name"] != w["name"]):
            fail("range %d: %r, want %r" % (i, g, w))
        if last and g["endTime"] not in ends:
            fail("last range endTime %d not among Go's observed %r" % (g["endTime"], ends))
        if not 0 < g["bytes"] <= 110 << 20:
            fail("range %d bytes %d" % (i, g["bytes"]))
    for f in sorted(os.listdir(d)):
        m = re.match(r"range(\d+)\.json\.gz$", f)
        if not m:
            continue
        p = params(d, f)
        if (got[int(m.group(1))]["start"], got[int(m.group(1))]["end"]) != (p["start"], p["end"]):
            fail("%s: range bounds differ from its params" % f)
        json_equal(os.path.join(d, f), query(ix, "--range", "#" + m.group(1)), f)
    print("ok: synth-split ranges and range queries equal Go's")


# ---- differential against the direct generator ----

def ids_of(trace):
    text = run([T, "dump", "--events", trace]).stdout.decode()
    gs = sorted({int(x) for x in re.findall(r"\bG(?:oroutineID)?=(\d+)", text)})
    ts = sorted({int(x) for x in re.findall(r"\b(?:Task|ID)=(\d+)", text)})
    return gs, ts


def same_result(trace, ix, direct_args, query_args, what):
    a = os.path.join(TMP, "direct.json")
    with open(a, "wb") as f:
        p1 = subprocess.run([T, "viewjson", "--quiet"] + direct_args + [trace], stdout=f,
                            stderr=subprocess.PIPE, env=dict(os.environ, TZ="UTC"))
    p2 = run([T, "query", ix, "-o", os.path.join(TMP, "q.json")] + query_args, ok=False)
    if p1.returncode < 0:
        fail("viewjson crashed: %s" % what)
    if (p1.returncode == 0) != (p2.returncode == 0):
        fail("%s: viewjson exit %d, query exit %d: %s" % (what, p1.returncode, p2.returncode,
                                                         p2.stderr.decode(errors="replace")))
    if p1.returncode == 0:
        json_equal(a, os.path.join(TMP, "q.json"), what)
    return p1.returncode == 0


def check_differential(trace):
    # gen: many short generations, so tasks, regions and goroutines span the summary's
    # compactions (index/analysis/sumspill.c), with a sort budget small enough to spill runs
    gen = trace == "gen"
    if gen:
        trace = gen_trace("3M", 11, ["--gen-ms", "50"])
    else:
        trace = need(trace if os.path.isabs(trace) else os.path.join(TESTDATA, trace))
    gs, ts = ids_of(trace)
    rnd = random.Random(1)
    if len(gs) > (8 if gen else 40):
        gs = sorted(rnd.sample(gs, 8 if gen else 40))
    if len(ts) > (10 if gen else 30):
        ts = sorted(rnd.sample(ts, 10 if gen else 30))
    n = 0
    for every in ((None,) if gen else ("13", None)):
        ix = build(trace, every, extra=["--sort-budget", "8192"] if gen else [])
        for g in gs:
            n += same_result(trace, ix, ["--goroutine", str(g)], ["--goroutine", str(g)], "goroutine %d" % g)
        for t in ts:
            n += same_result(trace, ix, ["--focustask", str(t)], ["--task", str(t)], "task %d" % t)
            n += same_result(trace, ix, ["--taskid", str(t)], ["--taskid", str(t)], "taskid %d" % t)
    if n == 0:
        fail("no query produced a document")
    print("ok: %d goroutine/task documents equal the direct generator's" % n)


def check_background():
    # 1024 goroutines and regions go in one TASKX record (index/analysis/sumindex.c); the background task
    # of this trace has about 5,000, so its record comes in pieces (goroutines only, both,
    # regions only) over more than one block
    trace = gen_trace("16M", 12, ["--gen-ms", "50"])
    text = run([T, "dump", "--events", trace]).stdout.decode()
    regions = re.findall(r"^M=\S+ P=\S+ G=(\d+) RegionBegin .*Task=0 ", text, re.M)
    items = len(regions) + len(set(regions))
    if items <= 4 * 1024:
        fail("the background task has %d goroutines and regions: too few for five pieces" % items)
    ix = build(trace, extra=["--sort-budget", "8192"])
    if not same_result(trace, ix, ["--taskid", "0"], ["--taskid", "0"], "taskid 0"):
        fail("the background task's goroutine-oriented document was not produced")
    # cmd/trace has no task-oriented view of it ("failed to find task with id 0"): nor has query
    same_result(trace, ix, ["--focustask", "0"], ["--task", "0"], "task 0")
    print("ok: the background task's %d goroutines and regions give the direct generator's "
          "documents" % items)


# ---- time windows ----

def events_of(doc):
    return [e for e in doc["traceEvents"] if e["ph"] != "M"]


def ns(x):
    return int(round(x * 1000))


def key(e):
    return json.dumps({k: v for k, v in e.items() if k != "id"}, sort_keys=True)


def window_view(full, a, b):
    """What a window [a, b] must hold of the whole output: slices and async slices overlapping
    it, instants and counters inside it, arrows whose span overlaps it (ids dropped)."""
    out = set()
    ev = events_of(full)
    open_b = {}
    for i, e in enumerate(ev):
        ph, ts = e["ph"], ns(e["ts"])
        if ph == "X":
            if ts <= b and ts + ns(e.get("dur", 0)) >= a:
                out.add(key(e))
        elif ph in "IC":
            if a <= ts <= b:
                out.add(key(e))
        elif ph == "s":
            t = ev[i + 1]
            lo, hi = min(ts, ns(t["ts"])), max(ts, ns(t["ts"]))
            if lo <= b and hi >= a:
                out.add(key(e) + key(t))
        elif ph == "b":
            open_b[(e["id"], e.get("s"))] = e
        elif ph == "e":
            s = open_b.pop((e["id"], e.get("s")))
            if ns(s["ts"]) <= b and ts >= a:
                out.add(key(s) + key(e))
    return out


def window_items(doc):
    out = set()
    ev = events_of(doc)
    open_b = {}
    for i, e in enumerate(ev):
        if e["ph"] == "s":
            out.add(key(e) + key(ev[i + 1]))
        elif e["ph"] == "t":
            continue
        elif e["ph"] == "b":
            open_b[(e["id"], e.get("s"))] = e
        elif e["ph"] == "e":
            out.add(key(open_b.pop((e["id"], e.get("s")))) + key(e))
        else:
            out.add(key(e))
    return out


def counters_before(full, a):
    last = {}
    for e in events_of(full):
        if e["ph"] == "C" and ns(e["ts"]) < a:
            last[e["name"]] = e["args"]
    return last


def check_window_doc(full, doc, a, b, what):
    """doc (a window [a, b]) = counters as of a + the overlap of the whole output."""
    ev = events_of(doc)
    before = counters_before(full, a)
    head, i = {}, 0
    while i < len(ev) and ev[i]["ph"] == "C" and ns(ev[i]["ts"]) == a and ev[i]["name"] not in head:
        head[ev[i]["name"]] = ev[i]["args"]
        i += 1
    for name, args in before.items():
        if any(v != 0 for v in args.values()) and head.get(name) != args:
            fail("%s: counter %s at the window start is %r, want %r" % (what, name, head.get(name), args))
    for name, args in head.items():
        if args != before.get(name, {k: 0 for k in args}):
            fail("%s: counter %s at the window start is %r, want %r" % (what, name, args, before.get(name)))
    got = window_items({"traceEvents": ev[i:]})
    want = window_view(full, a, b)
    if got != want:
        extra, missing = got - want, want - got
        fail("%s: %d events too many, %d missing; e.g. %s" % (what, len(extra), len(missing),
                                                              (sorted(extra) + sorted(missing))[:2]))


def check_window(arg):
    if arg == "gen":
        trace = gen_trace("3M", 7, ["--gen-ms", "100"])
        every = "3000"
    else:
        trace = need(arg if os.path.isabs(arg) else os.path.join(TESTDATA, arg))
        every = "17" if os.path.getsize(trace) < 1 << 20 else "40000"
    windows(trace, build(trace, every))
    if arg == "gen":
        # one checkpoint however long the trace (--checkpoint-every 2^64 - 1 wrapped the interval
        # and sized its stop tables to nothing: windows lost slices overlapping their ends)
        windows(trace, build(trace, str(2**64 - 1), name="one.tidx"))


def windows(trace, ix):
    """Random windows of both views from ix equal the direct generator's."""
    info = json.loads(run([T, "info", "--json", ix]).stdout)
    span = info["span_ns"]
    # the overlap check loads the whole output: only for small traces
    small = os.path.getsize(trace) < 4 << 20
    fulls = {v: load(query(ix, *(["--view", "threads"] if v else []), out="full-%d.json" % v))
             for v in (0, 1)} if small else None
    rnd = random.Random(7)
    n = skipped = 0
    for i in range(5 if not SANITIZE else 2):
        a = rnd.randrange(0, max(span, 1))
        b = a + rnd.choice([1000, 100000, 10000000, span // 4])
        for v in (0, 1):
            vargs = ["--view", "threads"] if v else []
            d = os.path.join(TMP, "direct.json")
            with open(d, "wb") as f:
                p = subprocess.run([T, "viewjson", "--quiet", "--window", "%d:%d" % (a, b)] +
                                   (["--view", "thread"] if v else []) + [trace], stdout=f)
            if p.returncode != 0:
                fail("viewjson --window failed")
            q = os.path.join(TMP, "q.json")
            p = run([T, "query", ix, "-o", q, "--verbose", "--range", "%d:%d" % (a, b)] + vargs)
            m = re.search(rb"\((\d+) after the window skipped\)", p.stderr)
            if not m:
                fail("query --verbose does not say what the stop table skipped")
            skipped += int(m.group(1))
            json_equal(d, q, "window %d:%d view %d" % (a, b, v))
            if fulls:
                check_window_doc(fulls[v], load(q), a, b, "window %d:%d view %d" % (a, b, v))
            n += 1
    # the windows' replays stop early (the stop tables), and yet equal the direct generator
    if skipped == 0:
        fail("no window's replay stopped before its next checkpoint")
    print("ok: %d windows equal the direct generator%s; their replays skipped %d events after "
          "the windows" % (n, " and the overlap of the whole output" if fulls else "", skipped))


def check_idle():
    """A server with many idle connections: by default, checkpoints are spaced at least 4 events
    per goroutine that exists, so that saving them does not swamp the build; queries are the
    same, and so is the index for any -j."""
    idle = 80000
    trace = gen_trace("4M", 5, ["--gen-ms", "100", "--idle", str(idle)])
    ix = os.path.join(TMP, "idle.tidx")
    p = run([T, "build", "--verbose", "-j2", "-o", ix, trace])
    m = re.search(rb"views: (\d+)/(\d+)/(\d+) checkpoints", p.stderr)
    if not m:
        fail("build --verbose does not count the checkpoints")
    got = [int(x) for x in m.groups()]
    info = json.loads(run([T, "info", "--json", ix]).stdout)
    events = info["events"]
    # the fixed spacing would take one every 32768 (proc) and 131072 (thread, goroutine) events
    fixed = [-(-events // 32768), -(-events // 131072), -(-events // 131072)]
    if not all(g < f for g, f in zip(got, fixed)):
        fail("checkpoints %r: not fewer than the fixed spacing's %r with %d idle goroutines"
             % (got, fixed, idle))
    run([T, "build", "--quiet", "-j1", "-o", os.path.join(TMP, "idle1.tidx"), trace])
    if not filecmp.cmp(ix, os.path.join(TMP, "idle1.tidx"), shallow=False):
        fail("the index differs between -j1 and -j2")
    # an asked-for spacing is kept as it is
    fx = os.path.join(TMP, "idle2.tidx")
    p = run([T, "build", "--verbose", "--checkpoint-every", "32768", "-o", fx, trace])
    m = re.search(rb"views: (\d+)/", p.stderr)
    if not m or int(m.group(1)) != fixed[0]:
        fail("--checkpoint-every 32768 gave %s proc checkpoints, want %d"
             % (m and m.group(1), fixed[0]))
    windows(trace, ix)
    # short windows late in the trace, in the long intervals (whose stop tables outgrow the
    # fixed spacing's), give the same bytes from both indexes
    span = info["span_ns"]
    rnd = random.Random(11)
    for i in range(15 if not SANITIZE else 5):
        a = rnd.randrange(span * 3 // 5, span)
        r = "%d:%d" % (a, a + rnd.choice([1000, 20000, 100000]))
        for vargs in ([], ["--view", "threads"]):
            if not filecmp.cmp(query(ix, "--range", r, *vargs, out="qa.json"),
                               query(fx, "--range", r, *vargs, out="qb.json"), shallow=False):
                fail("window %s %s differs between the two spacings" % (r, vargs))
    # goroutines from the raw dump (the ordered one prints every stack: 0.6 GB here): three
    # busy ones and an idle one
    text = run([T, "dump", trace]).stdout.decode()
    seen = collections.Counter(int(x) for x in re.findall(r"\bg=(\d+)", text))
    busy = sorted(g for g, c in seen.items() if c > 8)
    quiet = sorted(g for g, c in seen.items() if c <= 3)
    rnd = random.Random(3)
    n = 0
    for g in sorted(rnd.sample(busy, 3) + rnd.sample(quiet, 1)):
        n += same_result(trace, ix, ["--goroutine", str(g)], ["--goroutine", str(g)],
                         "goroutine %d" % g)
    if n == 0:
        fail("no goroutine query produced a document")
    print("ok: %d/%d/%d checkpoints for %d events (fixed spacing: %d/%d/%d); %d goroutine "
          "documents equal the direct generator's" % (*got, events, *fixed, n))


def check_stitch():
    trace = gen_trace("8M", 11, ["--gen-ms", "100"])
    ix = build(trace, "2500")
    info = json.loads(run([T, "info", "--json", ix]).stdout)
    if info["generations"] < 3:
        fail("the generated trace has %d generations; want several" % info["generations"])
    span = info["span_ns"]
    rnd = random.Random(3)
    for i in range(3):
        a = rnd.randrange(0, span // 2)
        c = a + rnd.randrange(span // 50, span // 10)
        b = rnd.randrange(a + 1, c)
        joined = window_items(load(query(ix, "--range", "%d:%d" % (a, c), out="ac.json")))
        left = window_items(load(query(ix, "--range", "%d:%d" % (a, b), out="ab.json")))
        right = window_items(load(query(ix, "--range", "%d:+%dns" % (b, c - b), out="bc.json")))
        missing = joined - left - right
        if missing:
            fail("[%d,%d] has %d events that neither [%d,%d] nor [%d,%d] has, e.g. %s"
                 % (a, c, len(missing), a, b, b, c, sorted(missing)[:2]))
        if not joined:
            fail("empty window [%d,%d]" % (a, c))
    print("ok: adjacent windows stitch over %d generations" % info["generations"])


# ---- invariants of the seed trace (viewer-json.md section 8) ----

def check_invariants():
    trace = need(os.path.join(TESTDATA, "go-tests-bin", "go122.trace"))
    ix = build(trace, "11")
    full_path = query(ix, out="full.json")
    raw = open(full_path, "rb").read()
    doc = json.loads(raw)
    errs = []

    def check(c, m):
        if not c:
            errs.append(m)
    check(raw.startswith(b'{"displayTimeUnit":"ns"\n,"traceEvents": ['), "prefix")
    check(re.search(rb'\], "stackFrames":\{.*\}\n\}$', raw[-5000000:], re.S) is not None, "suffix")
    check(set(doc) == {"displayTimeUnit", "traceEvents", "stackFrames"}, "keys")
    ev, fr = doc["traceEvents"], doc["stackFrames"]

    def gname(n):
        p = n.split(" ", 1)
        return p[1] if len(p) == 2 and p[0].startswith("G") else None
    s10 = sum(int(e.get("dur", 0)) for e in ev if gname(e.get("name", "")) == "main.cpu10")
    s20 = sum(int(e.get("dur", 0)) for e in ev if gname(e.get("name", "")) == "main.cpu20")
    check(0 < s10 < s20, "cpu10/cpu20 execution %d %d" % (s10, s20))
    heap = [e for e in ev if e["ph"] == "C" and e.get("name") == "Heap"]
    check(any(e["args"]["Allocated"] > 0 for e in heap) and any(e["args"]["NextGC"] > 0 for e in heap), "heap")
    pn = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    check({"STATS", "PROCS"} <= pn, "process names")
    tn = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    check({"GC", "Network", "Timers", "Syscalls", "Proc 0"} <= tn, "thread names")
    started, tids = set(), set()
    for e in ev:
        if e.get("name") == "proc start":
            check(e["tid"] not in started, "started twice %r" % e)
            started.add(e["tid"])
            tids.add(e["tid"])
        elif e.get("name") == "proc stop":
            check(e["tid"] in started, "stopped, not started %r" % e)
            started.discard(e["tid"])
            tids.add(e["tid"])
    check(len(tids) == 8, "distinct proc tids %d" % len(tids))

    def root(sf):
        last = None
        while sf:
            f = fr[str(sf)]
            last = f["name"]
            sf = f.get("parent", 0)
        return last
    sys_ev = [e for e in ev if e.get("name") == "syscall" and root(e["sf"]).startswith("main.blockingSyscall:")]
    check(len(sys_ev) > 1 and sum(1 for e in sys_ev if e["args"]["blocked"] == "yes") == 1, "blocking syscall")
    check(any(e["tid"] == 1000002 and e.get("name") == "unblock (network)" and e["ph"] == "I" and e.get("s") == "t"
              for e in ev), "network unblock")
    ph = [e["ph"] for e in ev]
    first_m = ph.index("M")
    check(all(p == "M" for p in ph[first_m:]), "metadata last")
    for e in ev:
        for k in ("sf", "esf"):
            if k in e:
                check(str(e[k]) in fr, "missing frame %r" % e)
    for k, f in fr.items():
        if "parent" in f:
            check(str(f["parent"]) in fr, "missing parent %s" % k)
    nid = 1
    for i, e in enumerate(ev):
        if e["ph"] == "s":
            t = ev[i + 1]
            check(t["ph"] == "t" and t["id"] == e["id"] == nid, "flow pair at %d" % i)
            nid += 1
    for e in ev:
        for k, v in e.items():
            if k not in ("ts", "pid", "tid"):
                check(v not in (0, "", None), "zero key %s in %r" % (k, e))
    # an index range is the slice of the whole output, with the frames of its events
    n = len([e for e in ev if e["ph"] != "M"])
    s, en = n // 3, 2 * n // 3 - 1
    mid = json.loads(open(query(ix, "--start", s, "--end", en, out="mid.json"), "rb").read())
    check([e for e in mid["traceEvents"] if e["ph"] != "M"] == [e for e in ev if e["ph"] != "M"][s:en + 1],
          "index range is not the slice of the whole output")
    for k, f in mid["stackFrames"].items():
        check(fr.get(k) == f, "index range frame %s differs" % k)
    if errs:
        fail("invariants: " + "; ".join(errs[:10]))
    print("ok: seed trace passes the section 8 invariants (%d events)" % len(ev))


# ---- split ranges of a large generated trace ----

def check_split():
    trace = gen_trace("24M", 5)
    ix = build(trace)
    stored = json.loads(run([T, "ranges", "--json", ix]).stdout)
    if len(stored) < 3:
        fail("a 24 MiB generated trace should split into several ranges, got %d" % len(stored))
    recorded = json.loads(run([T, "viewjson", "--quiet", "--ranges-recorded", trace]).stdout)
    if [{k: r[k] for k in ("name", "start", "end", "startTime", "endTime")} for r in stored] != recorded:
        fail("stored ranges differ from cmd/trace's splitter over the recorded output")
    if stored[0]["start"] != 0:
        fail("first range starts at %d" % stored[0]["start"])
    for x, y in zip(stored, stored[1:]):
        if x["end"] != y["start"]:
            fail("ranges %r and %r do not meet" % (x, y))
    # a middle range served from the index is byte for byte what the whole generation gives
    k = len(stored) // 2
    part = query(ix, "--range", "#%d" % k, out="part.json")
    direct = run([T, "viewjson", "--quiet", "--start", stored[k]["start"], "--end", stored[k]["end"], trace]).stdout
    if open(part, "rb").read() != direct:
        fail("range #%d differs from the whole generation's slice [%d, %d]" % (k, stored[k]["start"], stored[k]["end"]))
    size = os.path.getsize(part)
    if abs(size - stored[k]["bytes"]) > stored[k]["bytes"] // 10:
        fail("range #%d: %d bytes of JSON, estimate %d" % (k, size, stored[k]["bytes"]))
    print("ok: %d ranges partition the output as cmd/trace's splitter does" % len(stored))


# ---- command line ----

def check_cli():
    trace = need(os.path.join(TESTDATA, "go-tests-bin", "go122-annotations.trace"))
    local = os.path.join(TMP, "a.trace")
    shutil.copy(trace, local)
    run([T, "build", "--quiet", local])
    ix = local + ".tidx"

    def expect(args, code, text):
        p = run([T] + args, ok=False)
        err = p.stderr.decode(errors="replace")
        if p.returncode != code or text not in err:
            fail("%s: exit %d, stderr %r; want exit %d and %r" % (" ".join(map(str, args)), p.returncode, err, code, text))
        if p.returncode != 0 and p.stdout:
            fail("%s wrote to stdout on failure" % " ".join(map(str, args)))
    expect(["query", ix, "--goroutine", "987654"], 1, "failed to find goroutine 987654")
    expect(["query", ix, "--task", "987654"], 1, "failed to find task with id 987654")
    expect(["query", ix, "--range", "#0"], 1, "no range #0")
    # go tool trace splits only into two ranges or more (one 100-200 MiB piece is shown whole)
    expect(["query", ix, "--range", "#0"], 1, "(go tool trace shows it whole: query without --range)")
    if b"only when its JSON fills two 100 MiB ranges or more" not in run([T, "ranges", ix]).stdout:
        fail("ranges of an unsplit trace: wrong reason")
    expect(["query", ix, "--range", "1x:2"], 2, "cannot read the times")
    expect(["query", ix, "--range", "5ms:1ms"], 2, "ends before it starts")
    # numbers as Go's time.ParseDuration reads them: digits with at most one point (C's strtod
    # would also take an exponent, hex or "inf")
    for r in ("1e3ms:", "0x1p3ms:", "inf:", "1.2.3ms:", ".ms:", "1ms:+1e1ms"):
        expect(["query", ix, "--range", r], 2, "cannot read the times")
    expect(["query", ix, "--start", "3"], 2, "go together")
    # alternatives given together are refused (they were silently combined or ignored)
    expect(["query", ix, "--range", "1ms:2ms", "--start", "0", "--end", "3"], 2, "not both")
    for v in ("--goroutine", "--taskid"):
        expect(["query", ix, "--view", "threads", v, "1"], 2, "--view is for the proc and thread views")
    expect(["query", ix, "--view", "goroutines"], 2, "procs or threads")
    expect(["query"], 2, "need an INDEX")
    expect(["ranges", ix, "--bogus"], 2, "unknown option")
    for cmd in ("query", "ranges"):
        p = run([T, cmd, "--help"])
        if b"usage: traceidx " + cmd.encode() not in p.stdout:
            fail("%s --help" % cmd)
    # the trace path works and means TRACE.tidx; a modified trace makes it stale
    a = run([T, "query", local]).stdout
    b = run([T, "query", ix]).stdout
    if a != b or not a.startswith(b'{"displayTimeUnit":"ns"'):
        fail("query TRACE differs from query TRACE.tidx")
    if run([T, "query", ix, "--range", "0:"]).stdout[:200] != run([T, "query", ix, "--range", ":+1h"]).stdout[:200]:
        fail("open-ended ranges differ")
    # START:+DUR past the largest time means to the end (START + DUR used to overflow)
    if (run([T, "query", ix, "--range", "1ms:+%d" % (2**63 - 1)]).stdout
            != run([T, "query", ix, "--range", "1ms:"]).stdout):
        fail("1ms:+(2^63-1) differs from 1ms:")
    if run([T, "query", ix, "--range", "1.5ms:+.25ms"]).stdout != run([T, "query", ix, "--range", "1500us:1750000ns"]).stdout:
        fail("1.5ms:+.25ms differs from 1500us:1750000ns")
    # a window past the last event is empty, not an error, and says so; "START:" there is that
    # empty window, not one that ends before it starts
    p = run([T, "query", ix, "--range", "1h:2h"])
    if b"starts after the trace's last event" not in p.stderr or b"the window is empty" not in p.stderr:
        fail("a window past the end: stderr %r" % p.stderr)
    if p.stdout != run([T, "query", ix, "--range", "1h:+0"]).stdout:
        fail("window past the end: 1h:2h differs from 1h:+0")
    if run([T, "query", ix, "--range", "1h:"]).stdout != run([T, "query", ix, "--range", "1h:1h"]).stdout:
        fail("1h: differs from 1h:1h")
    if b"last event" in run([T, "query", ix, "--range", "0:1h"]).stderr:
        fail("a window inside the trace got the past-the-end note")
    # -o writes atomically: a failed query leaves no file behind
    out = os.path.join(TMP, "out.json")
    p = run([T, "query", ix, "--goroutine", "987654", "-o", out], ok=False)
    if p.returncode != 1 or os.path.exists(out) or [f for f in os.listdir(TMP) if ".tmp." in f]:
        fail("failed query left a file behind")
    run([T, "query", ix, "-o", out])
    if open(out, "rb").read() != b:
        fail("-o output differs from stdout")
    data = bytearray(open(local, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(local, "wb").write(bytes(data))
    expect(["query", local], 1, "")
    print("ok: query/ranges command line")


def main():
    global TMP, T, TRACEGEN
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    T, TRACEGEN, check = sys.argv[1], sys.argv[2], sys.argv[3]
    args = sys.argv[4:]
    TMP = tempfile.mkdtemp(prefix="tdxq-")
    try:
        {"golden": check_golden, "synth": check_synth, "differential": check_differential,
         "background": check_background,
         "window": check_window, "stitch": check_stitch, "invariants": check_invariants,
         "split": check_split, "cli": check_cli, "idle": check_idle}[check](*args)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
