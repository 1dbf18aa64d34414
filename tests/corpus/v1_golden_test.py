#!/usr/bin/env python3
"""Viewer JSON of the shared old-format (Go 1.19) traces, read through the index.

usage: v1_golden_test.py TRACEIDX pingpong|annotations [--print]

pingpong     `traceidx build` + `traceidx query INDEX` (proc view) of go119-pingpong equals the
             golden full.json.gz under viewer-json-diff.py.
annotations  go119-annotations, where Go's current generator panics in the proc view (a goroutine
             whose syscall was marked blocked by a GoSysBlock that no ProcStop followed is
             stopped again at its old P's next ProcStop; see reference-crash.txt and
             docs/old-traces.md). For the proc view, `--view threads` and `--goroutine 1` the
             query must give a complete, valid document that equals `traceidx viewjson` (the
             direct path) up to frame numbering and matches the pinned counts and canonical
             digest below; viewjson must warn about exactly one broken invariant in the proc
             view and none in the others; and the goroutine of the break, G13, must be drawn as
             chosen: its slice into the blocking syscall is lost (as in Go's generator, whose
             later start overwrites it), nothing is drawn for it at the ProcStop where Go
             panics, and its other two slices are drawn as usual.
--print      print the values to pin instead of checking them.

The corpus is found through $TRACEIDX_TESTDATA (default ../shared/testdata beside the repository);
without it the test prints SKIP and exits 77.
"""
import collections
import hashlib
import json
import os
import re
import sys
import tempfile

from common import SKIP, TESTDATA, fail, need, run


# Pinned results for go119-annotations, per view: number of events by phase, and the SHA-256 of
# the canonical form (events with frame ids replaced by frame-name chains, sorted; then the
# multiset of frame chains). Regenerate with --print after a deliberate change, and say why.
PINS = {
    "procs": ({"C": 114302, "I": 2037, "M": 16, "X": 56432, "s": 1303, "t": 1303},
              "dad0b492d576efcb6eeb5ec28efa46e1c5b58975688ce0079b1fa01f2868bea6"),
    "threads": ({"C": 114302, "I": 2004, "M": 22, "X": 23920, "s": 1688, "t": 1688},
                "72b530689da2796aedb16ce87cee701257d95ee358c8a4b81cdef7a05fdc9c11"),
    "goroutine-1": ({"C": 113391, "I": 1112, "M": 26, "X": 3693, "s": 420, "t": 420},
                    "bf6a4846a8b9faefd08b1a4d5b96fe87d1b87ddab77c237ea844d9e357c327f6"),
}


def validate(raw, what, procs=False):
    """A complete document in go tool trace's layout; returns it parsed. In the proc view, proc
    start and stop also alternate on each lane (the thread view of an old trace need not: see
    docs/old-traces.md)."""
    errs = []

    def check(c, m):
        if not c:
            errs.append(m)

    check(raw.startswith(b'{"displayTimeUnit":"ns"\n,"traceEvents": ['), "prefix")
    check(re.search(rb'\], "stackFrames":\{.*\}\n\}$', raw[-(1 << 20):], re.S) is not None, "suffix")
    try:
        doc = json.loads(raw)
    except ValueError as e:
        fail("%s: not JSON: %s" % (what, e))
    check(set(doc) == {"displayTimeUnit", "traceEvents", "stackFrames"}, "keys")
    ev, fr = doc["traceEvents"], doc["stackFrames"]
    check(len(ev) > 0, "no events")
    ph = [e["ph"] for e in ev]
    check("M" in ph, "no metadata")
    if "M" in ph:
        first = ph.index("M")
        check(all(p == "M" for p in ph[first:]), "metadata not last")
    for e in ev:
        for k in ("sf", "esf"):
            if k in e:
                check(str(e[k]) in fr, "missing frame %r" % e)
        check(e.get("ts", 0) >= 0, "negative ts %r" % e)
        if e["ph"] == "X":
            check(e.get("dur", 0) >= 0, "negative dur %r" % e)
        for k, v in e.items():
            if k not in ("ts", "pid", "tid"):
                check(v not in (0, "", None), "zero-valued key %s in %r" % (k, e))
    for k, f in fr.items():
        if "parent" in f:
            check(str(f["parent"]) in fr, "missing parent frame of %s" % k)
    nid = 1
    for i, e in enumerate(ev):
        if e["ph"] == "s":
            t = ev[i + 1] if i + 1 < len(ev) else {}
            check(t.get("ph") == "t" and t.get("id") == e["id"] == nid, "flow pair at %d" % i)
            nid += 1
        if e["ph"] == "b":
            t = ev[i + 1] if i + 1 < len(ev) else {}
            check(t.get("ph") == "e" and t.get("id") == e["id"], "async pair at %d" % i)
    running = set()
    for e in ev if procs else []:
        if e.get("name") == "proc start":
            check(e["tid"] not in running, "proc started twice %r" % e)
            running.add(e["tid"])
        elif e.get("name") == "proc stop":
            check(e["tid"] in running, "proc stopped while not running %r" % e)
            running.discard(e["tid"])
    if errs:
        fail("%s: invalid document: %s" % (what, "; ".join(errs[:10])))
    return doc


def canonical(doc):
    """(counts by phase, SHA-256 of the canonical form)."""
    fr = doc["stackFrames"]

    def chain(sf):
        out = []
        while sf:
            f = fr[str(sf)]
            out.append(f["name"])
            sf = f.get("parent", 0)
        return out

    lines = []
    for e in doc["traceEvents"]:
        c = dict(e)
        for k in ("sf", "esf"):
            if k in c:
                c[k] = chain(c[k])
        lines.append(json.dumps(c, sort_keys=True))
    lines.sort()
    chains = sorted(json.dumps(chain(int(k))) for k in fr)
    h = hashlib.sha256()
    for s in lines + ["--"] + chains:
        h.update(s.encode() + b"\n")
    counts = collections.Counter(e["ph"] for e in doc["traceEvents"])
    return dict(sorted(counts.items())), h.hexdigest()


def check_pingpong(tdx, tmp):
    trace = need(os.path.join(TESTDATA, "v1", "go119-pingpong.trace"))
    golden = need(os.path.join(TESTDATA, "golden", "go119-pingpong", "full.json.gz"))
    diff = need(os.path.join(TESTDATA, "..", "tools", "viewer-json-diff.py"))
    idx = os.path.join(tmp, "pingpong.tidx")
    p = run([tdx, "build", "--quiet", "-j", "2", trace, "-o", idx])
    if p.returncode != 0:
        fail("build: " + p.stderr.decode(errors="replace"))
    out = os.path.join(tmp, "pingpong.json")
    p = run([tdx, "query", idx, "-o", out])
    if p.returncode != 0:
        fail("query: " + p.stderr.decode(errors="replace"))
    validate(open(out, "rb").read(), "go119-pingpong", procs=True)
    p = run([sys.executable, diff, "-q", golden, out])
    print(p.stdout.decode(errors="replace").strip())
    if p.returncode != 0 or not p.stdout.startswith(b"EQUAL"):
        fail("go119-pingpong proc view differs from full.json.gz: " + p.stdout.decode(errors="replace")
             + p.stderr.decode(errors="replace"))


VIEWS = {  # pin name -> (query arguments, viewjson arguments)
    "procs": ([], []),
    "threads": (["--view", "threads"], ["--view", "thread"]),
    "goroutine-1": (["--goroutine", "1"], ["--goroutine", "1"]),
}
WARNING = re.compile(r"warning: (\d+) goroutine stops? broke an invariant of Go's generator")


def check_annotations(tdx, tmp, printing):
    trace = need(os.path.join(TESTDATA, "v1", "go119-annotations.trace"))
    idx = os.path.join(tmp, "annotations.tidx")
    p = run([tdx, "build", "--quiet", "-j", "2", trace, "-o", idx])
    if p.returncode != 0:
        fail("build: " + p.stderr.decode(errors="replace"))
    pins = {}
    for view, (qargs, vargs) in VIEWS.items():
        q = run([tdx, "query", idx] + qargs)
        if q.returncode != 0:
            fail("query %s: %s" % (" ".join(qargs), q.stderr.decode(errors="replace")))
        doc = validate(q.stdout, "go119-annotations " + view, procs=view == "procs")
        v = run([tdx, "viewjson", "--quiet", "-j", "2"] + vargs + [trace])
        if v.returncode != 0:
            fail("viewjson %s: %s" % (" ".join(vargs), v.stderr.decode(errors="replace")))
        counts, digest = canonical(doc)
        if canonical(json.loads(v.stdout)) != (counts, digest):
            fail("%s: query (from the index) and viewjson (from the trace) differ" % view)
        m = WARNING.search(v.stderr.decode(errors="replace"))
        broken = int(m.group(1)) if m else 0
        want_broken = 1 if view == "procs" else 0
        if broken != want_broken:
            fail("%s: viewjson reports %d broken invariant(s), want %d: %r" %
                 (view, broken, want_broken, v.stderr.decode(errors="replace")))
        pins[view] = (counts, digest)
        if view == "procs":
            check_g13(doc)
        print("%-12s %d events %s %s broken=%d" % (view, len(doc["traceEvents"]), counts, digest[:16], broken))
    if printing:
        print(json.dumps(pins, indent=4))
        return
    for view, got in pins.items():
        want = PINS[view]
        if want is None:
            fail("%s: nothing pinned (run with --print)" % view)
        if tuple(want[0].items()) != tuple(got[0].items()) or want[1] != got[1]:
            fail("%s: the document changed: counts %s (pinned %s), digest %s (pinned %s)" %
                 (view, got[0], want[0], got[1], want[1]))


def check_g13(doc):
    """The goroutine of the break, as chosen: in Go's trace times (ns from the first old event,
    our ts - 1 ns), G13 ran 20440092..20453108 on P0 into a blocking syscall, left it through the
    syscall P, ran 20780760..20780908 on P1 and ended; P0's ProcStop at 21062708 is where Go's
    generator stops it again and panics."""
    g13 = sorted((round(e["ts"] * 1000) - 1, round(e.get("dur", 0) * 1000), e["tid"])
                 for e in doc["traceEvents"] if e["ph"] == "X" and e.get("name", "").startswith("G13 "))
    want = [(401485, 690, 0), (20780760, 148, 1)]
    if g13 != want:
        fail("G13's slices in the proc view are %r, want %r" % (g13, want))
    at_stop = [e for e in doc["traceEvents"] if e["ph"] == "X" and
               round((e["ts"] + e.get("dur", 0)) * 1000) - 1 == 21062708]
    if at_stop:
        fail("slices end at the ProcStop where Go panics: %r" % at_stop)
    stops = [e for e in doc["traceEvents"] if e.get("name") == "proc stop" and e["tid"] == 0 and
             round(e["ts"] * 1000) - 1 == 21062708]
    if len(stops) != 1:
        fail("P0's proc stop at 21062708 ns is not drawn once: %r" % stops)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    tdx, what = sys.argv[1], sys.argv[2]
    printing = "--print" in sys.argv[3:]
    with tempfile.TemporaryDirectory(prefix="v1golden.") as tmp:
        if what == "pingpong":
            check_pingpong(tdx, tmp)
        elif what == "annotations":
            check_annotations(tdx, tmp, printing)
        else:
            print(__doc__)
            sys.exit(2)
    print("PASS")


if __name__ == "__main__":
    main()
