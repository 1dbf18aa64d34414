#!/usr/bin/env python3
"""`traceidx pprof` (go tool trace's pprof-style profiles) end to end, on the real binary.

- testdata/pprof/basic.test: every profile's stacks, counts and delays against values worked out
  by hand from its events (the file's header lists them);
- Go's traces (the parser's own event lists, events.txt of the goldens): cmd/trace's algorithm
  (its summary's goroutine lives, then each profile's waits, stacks that share their first 128
  PCs as one, named by the latest) run here over those events, against `pprof --json`;
- the pprof file itself, decoded here (profile.proto), against the same stacks;
- a trace given instead of its index, -o, --top, and the command line's errors.

usage: pprof_test.py TRACEIDX REPO_TESTDATA
"""
import json
import os
import shutil
import sys
import tempfile

from common import TESTDATA, fail, refuses_garbage, run, uvarint, without_section
from goevents import golden_indexes, goroutines, parse, parse_dump, profiles

TDX, OURS = sys.argv[1], sys.argv[2]
PROFILES = ("net", "sync", "syscall", "sched")

def ours_json(idx, name, *args):
    d = json.loads(run([TDX, "pprof", name, idx, "--json"] + list(args), ok=True).stdout)
    if d["profile"] != name or d["count"] != sum(s["count"] for s in d["stacks"]) or \
            d["delay_ns"] != sum(s["delay_ns"] for s in d["stacks"]):
        fail("pprof %s --json: header %s" % (name, {k: d[k] for k in d if k != "stacks"}))
    delays = [s["delay_ns"] for s in d["stacks"]]
    if delays != sorted(delays, reverse=True):
        fail("pprof %s --json: stacks not by delay, largest first: %s" % (name, delays))
    return sorted((s["count"], s["delay_ns"],
                   tuple((f["func"], f["file"], f["line"], int(f["pc"], 16)) for f in s["frames"]))
                  for s in d["stacks"])


# ---- profile.proto, decoded ----

def fields(b):
    """(field, wire type, value) of a protobuf message: ints, or bytes for length-delimited."""
    i, out = 0, []

    def varint():
        nonlocal i
        v, i = uvarint(b, i)
        return v
    while i < len(b):
        key = varint()
        f, w = key >> 3, key & 7
        if w == 0:
            out.append((f, w, varint()))
        elif w == 2:
            n = varint()
            out.append((f, w, bytes(b[i:i + n])))
            i += n
        else:
            fail("pprof file: wire type %d" % w)
    return out


def unpack(b):
    vals, v, s = [], 0, 0
    for c in b:
        v |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            vals.append(v)
            v = s = 0
    return vals


def decode_pprof(data):
    """A profile.proto's samples: sorted [(count, ns, stack)], and its types."""
    top = fields(data)
    strs = [v.decode() for f, _, v in top if f == 6]
    if not strs or strs[0] != "":
        fail("pprof file: the string table does not start with \"\"")
    fns, locs, samples, types, period = {}, {}, [], [], None
    for f, _, v in top:
        if f == 1 or f == 11:
            m = dict((k, x) for k, _, x in fields(v))
            vt = (strs[m.get(1, 0)], strs[m.get(2, 0)])
            if f == 1:
                types.append(vt)
            else:
                period = vt
        elif f == 5:
            m = dict((k, x) for k, _, x in fields(v))
            if m.get(2, 0) != m.get(3, 0):
                fail("pprof file: a function's system name is not its name")
            fns[m[1]] = (strs[m.get(2, 0)], strs[m.get(4, 0)])
        elif f == 4:
            m = fields(v)
            lid = [x for k, _, x in m if k == 1][0]
            pc = ([x for k, _, x in m if k == 3] or [0])[0]
            line = dict((k, x) for k, _, x in fields([x for k, _, x in m if k == 4][0]))
            locs[lid] = (line[1], line.get(2, 0), pc)
        elif f == 2:
            m = fields(v)
            ids = [x for k, _, b in m if k == 1 for x in unpack(b)]
            vals = [x for k, _, b in m if k == 2 for x in unpack(b)]
            samples.append((vals[0], vals[1], ids))
    if types != [("contentions", "count"), ("delay", "nanoseconds")] or period != \
            ("trace", "count") or [v for f, _, v in top if f == 12] != [1]:
        fail("pprof file: sample types %s, period type %s" % (types, period))
    if sorted(locs) != list(range(1, len(locs) + 1)) or sorted(fns) != \
            list(range(1, len(fns) + 1)):
        fail("pprof file: locations or functions not numbered 1..n")
    locs = {i: fns[f] + (line, pc) for i, (f, line, pc) in locs.items()}
    return sorted((c, ns, tuple(locs[i] for i in ids)) for c, ns, ids in samples)


def check_names(label, idx, evs, most=4):
    """--name: the profiles of the goroutine names with the most goroutines."""
    count = {}
    for _, _, nm in goroutines(evs).values():
        count[nm] = count.get(nm, 0) + 1
    for nm in sorted(count, key=lambda k: (-count[k], k))[:most]:
        want = profiles(evs, nm)
        for name in PROFILES:
            got = ours_json(idx, name, "--name", nm)
            if got != want[name]:
                fail("%s: pprof %s --name %r --json:\n%s\nwanted:\n%s" % (
                    label, name, nm, got, want[name]))


def check(label, idx, want, tmp):
    for name in PROFILES:
        got = ours_json(idx, name)
        if got != want[name]:
            fail("%s: pprof %s --json:\n%s\nwanted:\n%s" % (label, name, got, want[name]))
        out = os.path.join(tmp, "%s.%s.pb" % (label, name))
        run([TDX, "pprof", name, idx, "-o", out], ok=True)
        with open(out, "rb") as f:
            got = decode_pprof(f.read())
        if got != want[name]:
            fail("%s: pprof %s's file:\n%s\nwanted:\n%s" % (label, name, got, want[name]))


def check_basic(tmp):
    trace = os.path.join(OURS, "pprof", "basic.test")
    idx = os.path.join(tmp, "basic.tidx")
    run([TDX, "build", trace, "-o", idx], ok=True)
    mg, wk, hp = ("main.main", "main.go"), ("main.worker", "main.go"), ("main.helper", "main.go")

    def st(*frames):
        return tuple(frames)
    s3 = st(hp + (30, 4300), mg + (11, 4201))
    s4 = st(("runtime.chanrecv1", "chan.go", 442, 8192), wk + (21, 4100))
    s5 = st(mg + (12, 4400),)
    s6 = st(("net.(*conn).Read", "net.go", 100, 12288), mg + (13, 4202))
    s7 = st(("syscall.read", "syscall.go", 50, 16384), wk + (23, 4101))
    s8 = st(wk + (24, 4102),)
    s10 = st(("runtime.selectgo", "select.go", 300, 20480), hp + (31, 4500))
    by_hand = {"net": [(1, 150, s6)],
               "sync": sorted([(2, 200, s4), (1, 200, s10)]),
               "syscall": sorted([(1, 60, s7), (1, 295, ())]),
               "sched": sorted([(2, 450, s3), (2, 230, s5), (1, 110, s8), (1, 200, ())])}
    check("basic", idx, by_hand, tmp)
    # one name's goroutines (G2, main.worker: G1 is main.main), by hand, and the model's
    if ours_json(idx, "sched", "--name", "main.worker") != sorted([(1, 250, s3), (2, 230, s5)]):
        fail("basic: pprof sched --name main.worker: %s" % ours_json(idx, "sched", "--name",
                                                                      "main.worker"))
    evs = parse_dump(TDX, trace, tmp)
    if profiles(evs) != by_hand:
        fail("basic: the model of cmd/trace disagrees with the values by hand")
    check_names("basic", idx, evs)
    p = run([TDX, "pprof", "sync", idx, "--name", "main.nosuch", "--json"])
    if p.returncode != 0 or b'no goroutine named "main.nosuch"' not in p.stderr or \
            json.loads(p.stdout)["stacks"]:
        fail("basic: pprof --name of no goroutine: exit %d\n%s" % (p.returncode, p.stderr))
    text = run([TDX, "pprof", "sched", idx, "--top", "2"], ok=True).stdout.decode()
    for want in ["scheduler latency (sched): 6 waits, 990ns in all, over 4 stacks",
                 "#1  450ns  45.5%  2 waits\n    main.helper\n        main.go:30\n",
                 "#2  230ns  23.2%  2 waits\n", "(2 more stacks: --top 4 shows them all)"]:
        if want not in text:
            fail("basic: pprof --top's text lacks %r:\n%s" % (want, text))
    text = run([TDX, "pprof", "syscall", idx, "--top", "9"], ok=True).stdout.decode()
    if "#1  295ns  83.1%  1 wait\n    (no stack)\n" not in text or "more stacks" in text:
        fail("basic: pprof syscall --top:\n%s" % text)
    # a trace is answered from the index beside it, and only then
    beside = os.path.join(tmp, "beside.test")
    shutil.copyfile(trace, beside)
    p = run([TDX, "pprof", "sync", beside, "--json"])
    if p.returncode != 1 or b"traceidx build" not in p.stderr:
        fail("pprof of a trace with no index: exit %d\n%s" % (p.returncode, p.stderr))
    run([TDX, "build", beside], ok=True)
    if ours_json(beside, "sync") != by_hand["sync"]:
        fail("pprof TRACE differs from pprof INDEX")
    # -o replaces a file whole; stdout carries the same bytes
    out = os.path.join(tmp, "out.pb")
    with open(out, "wb") as f:
        f.write(b"x" * 100000)
    run([TDX, "pprof", "sched", idx, "-o", out], ok=True)
    with open(out, "rb") as f:
        if f.read() != run([TDX, "pprof", "sched", idx], ok=True).stdout:
            fail("pprof -o and stdout differ")


def check_cli(tmp):
    idx = os.path.join(tmp, "basic.tidx")
    if "usage: traceidx pprof" not in run([TDX, "pprof", "--help"], ok=True).stdout.decode():
        fail("pprof --help")
    for args in [[], ["sync"], ["block", idx], ["sync", idx, "--top"], ["sync", idx, "--top", "0"],
                 ["sync", idx, "--name"],
                 ["sync", idx, "--json", "--top", "3"], ["sync", idx, "-o"],
                 ["sync", idx, "--frobnicate"], ["sync", idx, idx],
                 ["sync", idx, "--region"], ["sync", idx, "--region", "t", "--name", "main.main"],
                 ["sync", idx, "--pc", "0xzz"], ["sync", idx, "--latmin", "5 apples"],
                 ["sync", idx, "--latmax"]]:
        p = run([TDX, "pprof"] + args)
        if p.returncode != 2 or not p.stderr:
            fail("pprof %s: exit %d, wanted a usage error (2)" % (args, p.returncode))
    p = run([TDX, "pprof", "sync", idx, "-o", idx])
    if p.returncode != 1 or not p.stderr or run([TDX, "info", "--verify", idx]).returncode != 0:
        fail("pprof -o INDEX: exit %d, or the index was harmed" % p.returncode)
    refuses_garbage(TDX, ["pprof", "sync"], tmp)
    without_section(TDX, idx, 22, ["pprof", "sync", "--json"], "holds no profiles", tmp)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_basic(tmp)
        check_cli(tmp)
        golden = os.path.join(TESTDATA, "golden")
        if not os.path.isdir(golden):
            print("SKIP: %s not found: Go's traces not checked" % golden)
            return
        n = nonzero = 0
        for name, idx, events in golden_indexes(TDX, TESTDATA, tmp):
            evs = parse(events)
            want = profiles(evs)
            check(name, idx, want, tmp)
            check_names(name, idx, evs)
            n += 1
            nonzero += sum(1 for k in PROFILES if want[k])
        if n < 20 or nonzero < 20:
            fail("only %d of Go's traces (%d non-empty profiles) checked" % (n, nonzero))
        print("ok: basic.test by hand, and %d of Go's traces (%d non-empty profiles)" %
              (n, nonzero))


main()
