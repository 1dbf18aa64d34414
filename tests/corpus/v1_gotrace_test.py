#!/usr/bin/env python3
"""Goroutine execution slices of traceidx's proc view against `go tool trace` of an old Go.

usage: v1_gotrace_test.py TRACEIDX [--keep DIR] [SCENARIO...]

Records old-format traces with testdata/v1prog and the installed Go (1.11-1.21), then, for each
trace:

* asks that Go's `go tool trace -http=127.0.0.1:0 TRACE` for /jsontrace (every split range listed
  on its main page), and `go tool trace -d TRACE` for the events its parser saw;
* runs `traceidx build` and `traceidx query INDEX` (proc view);
* takes the goroutine execution slices of both documents (ph "X" on pid 0: ours are named
  "G<id> ...", the old generator names a labelled start by the label alone, e.g. "GC (idle)"),
  pairs them per goroutine in time order and compares name, proc (tid), start and end in ns.

The two generators differ by design (docs/old-traces.md lists every kind of difference with its
cause). From go tool trace's slices and its parser's events the test predicts ours exactly, and
every slice must match the prediction, differing from go tool trace's only in these kinds:

  offset      our times are 1 ns later throughout: the converted stream opens with a Sync 1 ns
              before the first old event, and the current generator counts from that Sync
              (removed before comparing; every other rule is stated after removing it).
  t0-start    a goroutine running when tracing started (its GoStart is in the initial state
              dump, before the first Gomaxprocs) starts at the trace start in ours.
  sysblock    the converted stream has no GoSysBlock: the goroutine stays in its syscall on the
              P, and the current generator ends its slice at the P's next ProcStop, which the
              runtime writes right after the GoSysBlock ...
  sysblock-late ... or later, after other goroutines ran on the P (a goroutine returning from a
              syscall took the P back without a ProcStart/ProcStop): ours then overlaps theirs.
  lost        ... unless the goroutine started again before that ProcStop (its start is
              overwritten: the slice is lost, and at the ProcStop the stale entry stops it
              again: Go's current generator cuts its running slice there ("cut"; a later
              syscall begin puts it back on the lane from that time: "resumed"), or panics when
              it is not running, as on go119-annotations, and traceidx draws nothing), or a
              syscall on the P replaced the P's entry first (the slice is just lost).
  insyscall-start a goroutine in a syscall when tracing began (GoInSyscall: converted to
              Undetermined->Syscall on the P of its batch) is executing on that P from the trace
              start, and the same rules follow: a slice from 0 to the P's ProcStop that go tool
              trace does not have, or the P's ProcStop cuts it later (seen with the CPU
              profiler's writer goroutine).
  tie         a start or end up to 10 ns later in ours, where the old trace has another event
              within 10 ns before it: the current reader makes equal timestamps strictly
              increasing (and the conversion adds 1 ns syscall-end and label events).
  label       the old generator names a GoStartLabel slice by the label alone; ours is
              "G<id> <function> (<label>)" ("G<id> (<label>)" for a goroutine not named yet).
  stale-label ours keeps a goroutine's last label on its later, unlabelled slices.
  pre-name    a goroutine that existed before tracing started: the old generator names it from
              the start PC the runtime lists at trace start, ours from the outermost frame of its
              first transition stack, or "G<id>" while it has had none. They differ where
              tracebacks hide the start function: G1 "runtime.main" / "main.main", a go
              statement's argument wrapper "main.f.func1.2" / the function it calls
              "main.f.func1.1".

Anything else fails, and so does a mismatch between the panics predicted and the broken
invariants `traceidx viewjson` warns about. The test also requires the kinds the scenarios are
written to produce: a t0-start and the G1 pre-name in every trace, sysblock in "syscall", label
in "gc".
Exit 77 ("SKIP: ...") without Go, or with a Go that writes the new format (1.22+).
"""
import bisect
import collections
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "..", "..", "testdata", "v1prog", "main.go")
TIE_NS = 10


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(SKIP)


def go_minor():
    try:
        out = subprocess.run(["go", "version"], capture_output=True, timeout=60).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return None, ""
    m = re.search(r"go1\.(\d+)", out)
    return (int(m.group(1)) if m else None), out.strip()


# ---- go tool trace ----

D_LINE = re.compile(r"^(\d+) (\w+) p=(-?\d+) g=(\d+) off=\d+(.*)$")


def old_events(trace, env):
    """`go tool trace -d`: (ts, type, p, g, rest) of every event the old parser returns."""
    p = subprocess.run(["go", "tool", "trace", "-d", trace], capture_output=True, env=env, timeout=300)
    if p.returncode != 0:
        fail("go tool trace -d %s: %s" % (trace, p.stderr.decode(errors="replace")[-500:]))
    evs = []
    for line in p.stdout.decode(errors="replace").split("\n"):
        m = D_LINE.match(line)
        if m:
            evs.append((int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4)), m.group(5)))
    if not evs:
        fail("go tool trace -d %s printed no events" % trace)
    return evs


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy


def fetch(url, timeout=120):
    with OPENER.open(url, timeout=timeout) as r:
        return r.read()


def served_json(trace, env):
    """Every /jsontrace document `go tool trace -http` serves for trace (one per split range).
    The tool binary `go tool trace` runs (`go tool -n trace`) is started directly, so that the
    server is our child and is killed with it, whatever happens."""
    tool = subprocess.run(["go", "tool", "-n", "trace"], capture_output=True, env=env, timeout=60)
    path = tool.stdout.decode().strip()
    if tool.returncode != 0 or not os.path.isfile(path):
        fail("go tool -n trace: %r %s" % (path, tool.stderr.decode(errors="replace")))
    # ":0": the kernel picks a free loopback port; the tool prints it once it listens.
    proc = subprocess.Popen([path, "-http=127.0.0.1:0", trace], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env)
    try:
        base = None
        deadline = time.time() + 120
        log = b""
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            log += line
            m = re.search(rb"listening on (http://[0-9.]+:\d+)", line)
            if m:
                base = m.group(1).decode()
                break
        if not base:
            fail("go tool trace did not start serving %s: %s" % (trace, log.decode(errors="replace")[-500:]))
        while True:  # it opens the browser (BROWSER=true here) before it serves
            try:
                page = fetch(base + "/", timeout=10).decode(errors="replace")
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        links = [html.unescape(h) for h in re.findall(r'href="(/trace(?:\?[^"]*)?)"', page)]
        if not links:
            fail("no trace link on go tool trace's main page for %s" % trace)
        return [json.loads(fetch(base + "/jsontrace" + h[len("/trace"):])) for h in links]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


# ---- slices ----

GNAME = re.compile(r"^G(\d+)(?: |$)")


def ns(x):
    return int(round(x * 1000))


def old_slices(docs, evs):
    """goroutine -> [(start, end, proc, name)] from the old generator's documents."""
    starts = collections.defaultdict(list)
    for ts, typ, p, g, rest in evs:
        if typ in ("GoStart", "GoStartLabel"):
            label = rest.split(" label=", 1)[1] if " label=" in rest else None
            starts[(ts, p)].append((g, label))
    seen = set()
    out = collections.defaultdict(list)
    for doc in docs:
        for e in doc["traceEvents"]:
            if e.get("ph") != "X" or e.get("pid") != 0:
                continue
            key = (e.get("name", ""), e["tid"], ns(e["ts"]), ns(e.get("dur", 0)))
            if len(docs) > 1:  # split ranges may repeat an event at their boundary
                if key in seen:
                    continue
                seen.add(key)
            name, tid, t, d = key
            m = GNAME.match(name)
            for g, label in starts.get((t, tid), []):
                if (m and int(m.group(1)) == g) or (label is not None and name == label):
                    out[g].append((t, t + d, tid, name))
                    break
    for v in out.values():
        v.sort()
    return out


def our_slices(doc):
    out = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or e.get("pid") != 0:
            continue
        m = GNAME.match(e.get("name", ""))
        if not m:
            continue
        t = ns(e["ts"]) - 1  # the offset: our T0 is 1 ns before the old parser's
        out[int(m.group(1))].append((t, t + ns(e.get("dur", 0)), e["tid"], e["name"]))
    for v in out.values():
        v.sort()
    return out


ENDING = {"GoEnd", "GoStop", "GoSched", "GoPreempt", "GoSleep", "GoBlock", "GoBlockSend", "GoBlockRecv",
          "GoBlockSelect", "GoBlockSync", "GoBlockCond", "GoBlockNet", "GoBlockGC", "GoSysBlock"}


class Facts:
    """What the old parser's events say, for predicting our slices from go tool trace's."""

    def __init__(self, evs):
        self.evs = evs
        self.times = sorted(e[0] for e in evs)
        self.initial_start = set()  # goroutines running when tracing began
        self.initial_syscall = {}  # goroutine in a syscall when tracing began -> its index
        self.pre_existing = set()  # goroutines listed at trace start
        self.labels = collections.defaultdict(list)  # g -> [(ts, label)]
        self.syscalls = collections.defaultdict(list)  # g -> times of its GoSysCall events
        self.end_index = {}  # (ts, g) -> index of the event that ended a slice
        self.panics = 0
        self.lost = []
        init = True
        for i, (ts, typ, p, g, rest) in enumerate(evs):
            if typ == "Gomaxprocs":
                init = False
            if init and typ == "GoCreate":
                self.pre_existing.add(int(re.search(r" g=(\d+)", rest).group(1)))
            if init and typ in ("GoStart", "GoStartLabel"):
                self.initial_start.add(g)
            if typ == "GoInSyscall" and p >= 0:
                self.initial_syscall[g] = i
            if typ == "GoStartLabel":
                self.labels[g].append((ts, rest.split(" label=", 1)[1]))
            if typ == "GoSysCall":
                self.syscalls[g].append(ts)
            if typ in ENDING:
                self.end_index[(ts, g)] = i

    def crowded(self, t):
        """Another old event lies within TIE_NS before t (t's own event counts once)."""
        lo = bisect.bisect_left(self.times, t - TIE_NS)
        hi = bisect.bisect_right(self.times, t)
        return hi - lo >= 2

    def stale_entry(self, i):
        """The converted stream has no GoSysBlock: after the GoSysBlock evs[i] (or the initial
        GoInSyscall evs[i]) the current generator still has the goroutine in a syscall on that P,
        executing there, and stops it at the P's next ProcStop. Returns (outcome, time):
        "stop" (the ProcStop ends the slice), "restarted" (the goroutine started again first,
        which overwrote the slice's start; the ProcStop at time then stops it again), "cleared"
        (a syscall on the P replaced the P's entry first: the slice is lost when the goroutine
        starts again), or "end" (none of these before the trace ends)."""
        _, _, p, g, _ = self.evs[i]
        restarted = False
        for ts, typ, p2, g2, _ in self.evs[i + 1:]:
            if g2 == g and typ in ("GoStart", "GoStartLabel"):
                restarted = True
            if p2 == p and typ == "ProcStop":
                return ("restarted" if restarted else "stop"), ts
            if p2 == p and typ == "GoSysCall":
                return "cleared", ts
        return "end", None

    def p_next(self, i):
        """Type of the next event on the P of evs[i]."""
        p = self.evs[i][2]
        for e in self.evs[i + 1:]:
            if e[2] == p:
                return e[1]
        return None


def expected(g, old, facts, bad):
    """Our slices of goroutine g as predicted from go tool trace's, each
    [start, end, proc, name (None: any name of g), kinds, go tool trace's slice or None]."""
    exp = []
    cuts = []

    def stale(i, what, st, p, name, kinds, orig):
        outcome, t = facts.stale_entry(i)
        if outcome == "stop":
            exp.append([st, t, p, name, kinds, orig])
        elif outcome == "restarted":
            facts.lost.append((g, orig or what, "the P's ProcStop at %d stops it again" % t))
            cuts.append(t)
        elif outcome == "cleared":
            facts.lost.append((g, orig or what, "a syscall on the P at %d replaced its entry" % t))
        else:
            bad.append("G%d: %s: no later ProcStop of its P" % (g, orig or what))

    if g in facts.initial_syscall:
        i = facts.initial_syscall[g]
        stale(i, "in a syscall at trace start", -1, facts.evs[i][2], None, ["insyscall-start"], None)
    for k, (st, en, p, name) in enumerate(old):
        kinds = []
        if k == 0 and g in facts.initial_start:
            st = -1
            kinds.append("t0-start")
        i = facts.end_index.get((en, g))
        if i is not None and facts.evs[i][1] == "GoSysBlock":
            kinds.append("sysblock" if facts.p_next(i) == "ProcStop" else "sysblock-late")
            stale(i, None, st, p, name, kinds, old[k])
            continue
        exp.append([st, en, p, name, kinds, old[k]])
    # A stale entry stopping the goroutine again: Go's generator cuts its running slice there
    # (the goroutine is then off its lane: its next syscall begin puts it back, from that time),
    # or panics, when the goroutine is not running then or reaches its next stop off its lane.
    for t in cuts:
        for j, s in enumerate(exp):
            if s[0] <= t < s[1]:
                resume = [x for x in facts.syscalls[g] if t < x < s[1]]
                if resume:
                    exp.insert(j + 1, [resume[0], s[1], s[2], s[3], s[4] + ["resumed"], s[5]])
                else:
                    facts.panics += 1
                s[1] = t
                s[4] = s[4] + ["cut"]
                break
        else:
            facts.panics += 1
    exp.sort(key=lambda s: s[0])
    return exp


def name_kind(g, x, y, facts):
    """Why go tool trace's name x of a slice starting at ts differs from ours y, or None."""
    ts, name = x
    labels = [lb for t, lb in facts.labels.get(g, []) if t <= ts]
    cur = [lb for t, lb in facts.labels.get(g, []) if t == ts]
    if cur and name == cur[0] and re.match(r"^G%d( .*)? \(%s\)$" % (g, re.escape(cur[0])), y):
        return "label"
    if labels and y == "%s (%s)" % (name, labels[-1]):
        return "stale-label"
    if g in facts.pre_existing and GNAME.match(name) and (y == "G%d" % g or y.startswith("G%d " % g)) and \
            not (labels and y.endswith(" (%s)" % labels[-1])):
        return "pre-name"
    return None


def compare(old, ours, facts):
    """Returns (kinds Counter, an example of each kind, unexplained differences, pre-name pairs)."""
    kinds = collections.Counter()
    examples = {}
    bad = []
    prenames = collections.Counter()
    for g in sorted(set(old) | set(ours)):
        exp = expected(g, old.get(g, []), facts, bad)
        got = ours.get(g, [])
        if len(exp) != len(got):
            bad.append("G%d: %d slices expected from go tool trace's %d, ours %d" %
                       (g, len(exp), len(old.get(g, [])), len(got)))
            continue
        for i, (x, y) in enumerate(zip(exp, got)):
            why = list(x[4])
            if x[2] != y[2]:
                why.append(None)
            for a, b in ((x[0], y[0]), (x[1], y[1])):
                if a != b:
                    why.append("tie" if 0 < b - a <= TIE_NS and facts.crowded(a) else None)
            if x[3] is None:
                if not GNAME.match(y[3]) or int(GNAME.match(y[3]).group(1)) != g:
                    why.append(None)
            elif x[3] != y[3]:
                why.append(name_kind(g, (x[0], x[3]), y[3], facts))
                if why[-1] == "pre-name":
                    prenames[(x[3], y[3])] += 1
            if None in why:
                bad.append("G%d slice %d: expected %r, ours %r (%s)" %
                           (g, i, x[:4], y, ",".join(w or "?" for w in why)))
                continue
            for w in why or ["identical"]:
                kinds[w] += 1
                examples.setdefault(w, (x[5], y))
    if facts.lost:
        kinds["lost"] = len(facts.lost)
    examples.pop("identical", None)
    return kinds, examples, bad, prenames


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        sys.exit(2)
    tdx = args.pop(0)
    keep = None
    if args[:1] == ["--keep"]:
        keep = args[1]
        args = args[2:]
    if not shutil.which("go"):
        skip("go not installed")
    minor, version = go_minor()
    if minor is None:
        skip("cannot tell the Go version (%s)" % version)
    if not 11 <= minor <= 21:
        skip("%s writes the new trace format and its go tool trace is the current generator" % version)
    started = time.time()
    tmp = keep or tempfile.mkdtemp(prefix="v1gotrace.")
    os.makedirs(tmp, exist_ok=True)
    env = dict(os.environ, GOFLAGS="", GO111MODULE="auto", GOPROXY="off", BROWSER="true", TZ="UTC")
    home = env.get("HOME", "")
    if not env.get("GOCACHE") and (not home or not os.access(home, os.W_OK)):
        env["GOCACHE"] = os.path.join(tmp, "gocache")
    try:
        print("recording with " + version)
        exe = os.path.join(tmp, "v1prog")
        p = subprocess.run(["go", "build", "-o", exe, PROG], capture_output=True, env=env, timeout=600)
        if p.returncode != 0:
            fail("go build %s: %s" % (PROG, p.stderr.decode(errors="replace")))
        p = subprocess.run([exe, tmp] + args, capture_output=True, env=env, timeout=600)
        if p.returncode != 0:
            fail("v1prog: %s" % p.stderr.decode(errors="replace"))
        traces = p.stdout.decode().split()
        if not traces:
            fail("v1prog recorded nothing")
        t_rec = time.time() - started
        failed = False
        total = collections.Counter()
        for trace in traces:
            name = os.path.basename(trace)[: -len(".trace")]
            with open(trace, "rb") as f:
                hdr = f.read(16)
            if not re.match(rb"go 1\.(1[1-9]|2[01]) trace", hdr):
                fail("%s: header %r is not an old-format version" % (name, hdr))
            idx = os.path.join(tmp, name + ".tidx")
            p = subprocess.run([tdx, "build", "--quiet", trace, "-o", idx], capture_output=True, timeout=300)
            if p.returncode != 0:
                fail("%s: traceidx build: %s" % (name, p.stderr.decode(errors="replace")))
            p = subprocess.run([tdx, "query", idx], capture_output=True, timeout=300)
            if p.returncode != 0:
                fail("%s: traceidx query: %s" % (name, p.stderr.decode(errors="replace")))
            ours = our_slices(json.loads(p.stdout))
            evs = old_events(trace, env)
            docs = served_json(trace, env)
            if keep:
                with open(os.path.join(tmp, name + ".ours.json"), "wb") as f:
                    f.write(p.stdout)
                with open(os.path.join(tmp, name + ".gotrace.json"), "w") as f:
                    json.dump(docs, f)
            old = old_slices(docs, evs)
            facts = Facts(evs)
            kinds, examples, bad, prenames = compare(old, ours, facts)
            n = sum(len(v) for v in old.values())
            total.update(kinds)
            summary = " ".join("%s=%d" % (k, c) for k, c in sorted(kinds.items()))
            print("%-12s %5d slices in %d range(s): %s" % (name, n, len(docs), summary))
            for k in sorted(examples):
                print("    e.g. %-13s go tool trace %r, ours %r" % (k, examples[k][0], examples[k][1]))
            for (a, b), c in sorted(prenames.items()):
                print("    pre-name: go tool trace %r, ours %r (%d)" % (a, b, c))
            for g, s, why in facts.lost:
                print("    lost: G%d %r (stale syscall entry: %s)" % (g, s, why))
            # Where Go's current generator would panic, traceidx says so (viewjson's warning).
            v = subprocess.run([tdx, "viewjson", "--quiet", "-j", "1", trace], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=300)
            err = v.stderr.decode(errors="replace")
            m = re.search(r"warning: (\d+) goroutine stops? broke an invariant", err)
            broken = int(m.group(1)) if m else 0
            if v.returncode != 0:
                bad.append("traceidx viewjson: " + err[-300:])
            elif broken != facts.panics:
                bad.append("traceidx reports %d broken invariant(s) of Go's generator, %d predicted" %
                           (broken, facts.panics))
            elif broken:
                print("    Go's current generator would panic %d time(s); traceidx warned: %s" %
                      (broken, err.strip()[-60:]))
            if n == 0:
                bad.append("no goroutine slices")
            if kinds["t0-start"] < 1:
                bad.append("no slice of a goroutine running at trace start was back-dated")
            if ("G1 runtime.main", "G1 main.main") not in prenames:
                bad.append("G1 is not named main.main (ours) / runtime.main (go tool trace)")
            if name == "syscall" and kinds["sysblock"] < 1:
                bad.append("no slice ended by a blocking syscall")
            if name == "gc" and kinds["label"] < 1:
                bad.append("no labelled (GC worker) slice")
            for msg in bad[:20]:
                print("FAIL: %s: %s" % (name, msg))
            if bad:
                failed = True
        print("all traces: " + " ".join("%s=%d" % (k, c) for k, c in sorted(total.items())))
        print("time: %.1f s (recording %.1f s)" % (time.time() - started, t_rec))
        if failed:
            sys.exit(1)
        print("PASS")
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
