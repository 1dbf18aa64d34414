#!/usr/bin/env python3
"""`traceidx goroutines` (Go's goroutine analysis) end to end, on the real binary.

- testdata/gostats/basic.test: every statistic against values worked out by hand from its
  events (the trace's comment says what each goroutine does);
- the same answers from the trace, from its index (the GSTATS section), from an index without
  GSTATS (decoding its events), for every -j, and whatever the spill budget (records of ended
  goroutines merged back from a scratch file, the last of each id winning: goid-reused-large
  reuses ids);
- Go's conformance traces and a generated one: the same, plus the sums Go's tables imply;
- the command line's errors.

usage: gostats_test.py TRACEIDX TRACEGEN REPO_TESTDATA
"""
import json
import os
import shutil
import sys
import tempfile

from common import TESTDATA, Sealed, fail, refuses_garbage, run

TDX, TRACEGEN, OURS = sys.argv[1], sys.argv[2], sys.argv[3]
GSTATS = 21
GSTATS1 = 20  # the retired kind of GSTATS' first layout
FIXED = ["Execution time", "Sched wait time", "Syscall execution time", "Block time (syscall)",
         "Unknown time"]


def out(*args, code=0):
    p = run([TDX, "goroutines"] + list(args))
    if p.returncode != code:
        fail("goroutines %s: exit %d, wanted %d\n%s" % (" ".join(args), p.returncode, code,
                                                       p.stderr.decode(errors="replace")))
    return p.stdout.decode()


def groups(path, *extra):
    return json.loads(out(path, "--json", *extra))


def group(path, name, *extra):
    """--name's JSON, each goroutine's "stats" and "ranges" arrays made dicts by the group's
    "columns" and "ranges" (checking they are as long)."""
    d = json.loads(out(path, "--name", name, "--json", *extra))
    for x in d["goroutines"]:
        if len(x["stats"]) != len(d["columns"]) or len(x["ranges"]) != len(d["ranges"]):
            fail("%s --name %r: goroutine %d's arrays do not match the columns" % (path, name,
                                                                                 x["id"]))
        x["stats"] = dict(zip(d["columns"], x["stats"]))
        x["ranges"] = dict(zip(d["ranges"], x["ranges"]))
    return d


def everything(path, *extra):
    """The group table and every group's goroutines, as text and JSON."""
    g = groups(path, *extra)
    parts = [out(path, *extra), json.dumps(g)]
    for gr in g["groups"]:
        parts.append(out(path, "--name", gr["name"], *extra))
        parts.append(out(path, "--name", gr["name"], "--json", *extra))
    return "\n".join(parts)


def check_basic(tmp):
    t = os.path.join(OURS, "gostats", "basic.test")
    g = groups(t)
    want = [("", 2, 480 + 1944), ("main.worker", 1, 300), ("main.sleeper", 1, 100)]
    got = [(x["name"], x["count"], x["exec_ns"]) for x in g["groups"]]
    if got != want or g["goroutines"] != 4 or g["exec_ns"] != 2824:
        fail("basic: groups %s, want %s" % (g, want))
    text = out(t)
    for line in ["4 goroutines in 3 groups, total execution time 2.824µs",
                 "(Inactive, no stack trace sampled)           2  2.424µs",
                 "main.worker                                  1  300ns"]:
        if line not in text:
            fail("basic: no line %r in\n%s" % (line, text))
    # the breakdown's rows line up on a terminal ("µs" is one column, two bytes)
    rows = out(t, "--name", "").split("\n\n")[1].splitlines()
    if len({len(r) for r in rows}) != 1:
        fail("basic: --name's columns do not line up:\n%s" % "\n".join(rows))
    # id: (creation, start, end, total, stats, ranges); times since the first event (the Sync
    # at 1 ns); the trace ends with the Sync at 2951 ns
    want = {
        # preempted, then in a syscall whose P was stolen at 2800: Go adds the 151 ns since to
        # both syscall time (from 2700) and scheduler wait time
        1: (0, 1019, None, 2950,
            {"Execution time": 480, "Block time (chan receive)": 200, "Sched wait time": 1151,
             "Syscall execution time": 251, "Block time (syscall)": 0, "Unknown time": 868},
            {"GC incremental sweep": 0}),
        # a sweep on its P, begun and ended on it (49 ns: the begin's time was pushed to 1501)
        4: (0, 1005, 2949, 2949,
            {"Execution time": 1944, "Block time (chan receive)": 0, "Sched wait time": 0,
             "Syscall execution time": 0, "Block time (syscall)": 0, "Unknown time": 1005},
            {"GC incremental sweep": 49}),
        # a 30 ns mark assist; a syscall of 200 ns whose P was stolen after 100
        2: (1099, 1399, 2499, 1400,
            {"Execution time": 300, "Sched wait time": 900, "Syscall execution time": 100,
             "Block time (syscall)": 100, "Unknown time": 0},
            {"GC mark assist": 30}),
        # blocked forever: ended there (no block time)
        3: (1199, 2199, 2299, 1100,
            {"Execution time": 100, "Sched wait time": 1000, "Syscall execution time": 0,
             "Block time (syscall)": 0, "Unknown time": 0}, {}),
    }
    seen = set()
    for name, ids, pct in [("", [1, 4], "85.84%"), ("main.worker", [2], "10.62%"),
                           ("main.sleeper", [3], "3.54%")]:
        d = group(t, name)
        # the default order is total time, the largest first
        if [x["id"] for x in d["goroutines"]] != ids or d["exec_percent"] != pct:
            fail("basic: group %r: %s" % (name, d))
        if d["columns"][0] != "Execution time" or sorted(d["columns"][1:]) != d["columns"][1:]:
            fail("basic: group %r: columns out of Go's order: %s" % (name, d["columns"]))
        for x in d["goroutines"]:
            c, s, e, tot, stats, ranges = want[x["id"]]
            if (x["creation_ns"], x["start_ns"], x["end_ns"], x["total_ns"]) != (c, s, e, tot):
                fail("basic: goroutine %d: times %s" % (x["id"], x))
            if x["stats"] != stats or x["ranges"] != ranges:
                fail("basic: goroutine %d: stats %s ranges %s, want %s %s"
                     % (x["id"], x["stats"], x["ranges"], stats, ranges))
            seen.add(x["id"])
    if seen != set(want):
        fail("basic: goroutines %s" % seen)
    # --sort by a column, and the special ranges table of the group that has range time
    d = group(t, "", "--sort", "Syscall execution time")
    if [x["id"] for x in d["goroutines"]] != [1, 4]:
        fail("basic: --sort 'Syscall execution time': %s" % d)
    d = group(t, "", "--sort", "Execution time")
    if [x["id"] for x in d["goroutines"]] != [4, 1]:
        fail("basic: --sort 'Execution time': %s" % d)
    text = out(t, "--name", "")
    if "Special ranges" not in text or "\n4 " not in text.split("Special ranges")[1] or \
            "\n1 " in text.split("Special ranges")[1]:
        fail("basic: the special ranges table lists the goroutines with range time:\n" + text)
    idx = os.path.join(tmp, "basic.tidx")
    run([TDX, "build", t, "-o", idx], ok=True)
    if everything(idx) != everything(t):
        fail("basic: the index gives other answers than the trace")


def check_same(label, trace, tmp, budgets=("1",)):
    """Trace and index, -j 1 and 2, and small spill budgets all give the same bytes."""
    ref = everything(trace)
    for extra in [("-j", "1"), ("-j", "2")] + [("--spill-budget", b) for b in budgets]:
        if everything(trace, *extra) != ref:
            fail("%s: goroutines %s differs from the default" % (label, " ".join(extra)))
    idx = os.path.join(tmp, os.path.basename(trace) + ".tidx")
    run([TDX, "build", trace, "-o", idx], ok=True)
    if everything(idx) != ref:
        fail("%s: the index gives other answers than the trace" % label)
    if old_index(idx, tmp) and everything(idx) != ref:
        fail("%s: an index without GSTATS gives other answers than the trace" % label)
    g = groups(trace)
    if sum(x["count"] for x in g["groups"]) != g["goroutines"] or \
            sum(x["exec_ns"] for x in g["groups"]) != g["exec_ns"]:
        fail("%s: the groups do not add up: %s" % (label, g))
    if [x["exec_ns"] for x in g["groups"]] != sorted((x["exec_ns"] for x in g["groups"]),
                                                    reverse=True):
        fail("%s: groups not by execution time" % label)
    for gr in g["groups"]:
        d = group(trace, gr["name"])
        if d["count"] != gr["count"] or len(d["goroutines"]) != gr["count"]:
            fail("%s: group %r: %d goroutines, the table says %d"
                 % (label, gr["name"], len(d["goroutines"]), gr["count"]))
        for col in FIXED:
            if col not in d["columns"]:
                fail("%s: group %r lacks column %r" % (label, gr["name"], col))
        for x in d["goroutines"]:
            s = x["stats"]
            # Unknown time is what the others leave of the total (Go: when positive)
            if sum(s.values()) < x["total_ns"]:
                fail("%s: goroutine %d: stats %s do not cover its total %d"
                     % (label, x["id"], s, x["total_ns"]))
            if s["Unknown time"] and sum(s.values()) != x["total_ns"]:
                fail("%s: goroutine %d: unknown time %d, but the stats sum past the total"
                     % (label, x["id"], s["Unknown time"]))
        tot = [x["total_ns"] for x in d["goroutines"]]
        if tot != sorted(tot, reverse=True):
            fail("%s: group %r not by total time" % (label, gr["name"]))
    return g


def old_index(idx, tmp):
    """Rewrites idx as an index built before GSTATS existed, or with GSTATS' first layout: its
    section record renamed to the retired kind 20, which readers skip, the checksums re-sealed.
    goroutines then computes from the events (and says so), info --verify passes. False when
    libxxhash cannot be loaded."""
    import struct
    sx = Sealed.load(idx)
    if not sx:
        print("SKIP: libxxhash.so.0 not loadable: indexes without GSTATS not checked")
        return False
    b = bytearray(sx.data)
    row = sx.secs[GSTATS][0]
    struct.pack_into("<I", b, sx.toff + 32 * row, GSTATS1)
    sx.reseal(b, GSTATS)
    with open(idx, "wb") as f:
        f.write(bytes(b))
    p = run([TDX, "goroutines", idx], ok=True)
    if b"holds no goroutine statistics" not in p.stderr:
        fail("goroutines of an index without GSTATS: no note on stderr: %s" % p.stderr)
    run([TDX, "info", "--verify", idx], ok=True)
    return True


def check_crafted(tmp):
    """GSTATS altered under re-sealed checksums (its own head hash too): a last event time that
    is not META's (every total would shift), a group name given twice (--name would find only
    one) and an unknown magic are refused by goroutines and by info --verify alike."""
    import struct
    idx = os.path.join(tmp, "crafted.tidx")
    run([TDX, "build", os.path.join(OURS, "gostats", "basic.test"), "-o", idx], ok=True)
    sx = Sealed.load(idx)
    if not sx:
        print("SKIP: libxxhash.so.0 not loadable: crafted GSTATS not checked")
        return
    _, off, length, _ = sx.secs[GSTATS]
    head = struct.unpack_from("<Q", sx.data, off + 56)[0]
    nstr, ngroups = struct.unpack_from("<QQ", sx.data, off + 40)
    table = off + head - 8 - 48 * ngroups

    def crafted(what, change):
        b = bytearray(sx.data)
        change(b)
        struct.pack_into("<Q", b, off + head - 8, sx.xxh(b[off:off + head - 8]))
        sx.reseal(b, GSTATS)
        with open(idx, "wb") as f:
            f.write(bytes(b))
        for args in (["goroutines", idx, "--name", ""], ["info", "--verify", idx]):
            p = run([TDX] + args)
            if p.returncode != 1 or b"GSTATS" not in p.stderr or b"rebuild" not in p.stderr:
                fail("%s: %s: exit %d\n%s" % (what, " ".join(args), p.returncode, p.stderr))

    crafted("last event time moved", lambda b: struct.pack_into(
        "<q", b, off + 32, struct.unpack_from("<q", b, off + 32)[0] + 10**12))
    # the groups are "" (2424 ns), main.worker (300), main.sleeper (100): the last one renamed ""
    crafted("a name twice", lambda b: struct.pack_into(
        "<Q", b, table + 48 * (ngroups - 1), struct.unpack_from("<Q", b, table)[0]))
    crafted("a layout this reader does not know", lambda b: b.__setitem__(
        slice(off, off + 8), b"TDXGST09"))


def check_cli(tmp):
    t = os.path.join(OURS, "gostats", "basic.test")
    if "usage: traceidx goroutines" not in out("--help"):
        fail("goroutines --help")
    for args in [[t, "--sort", "Total"], [t, "--name"], [], [t, "-j", "0"],
                 [t, "--spill-budget", "12x"], [t, "--frobnicate"]]:
        p = run([TDX, "goroutines"] + args)
        if p.returncode != 2 or not p.stderr:
            fail("goroutines %s: exit %d, wanted a usage error (2)" % (args, p.returncode))
    p = run([TDX, "goroutines", t, "--name", "main.nosuch"])
    if p.returncode != 1 or b"no goroutine starts at \"main.nosuch\"" not in p.stderr or p.stdout:
        fail("goroutines --name of no group: exit %d\n%s" % (p.returncode, p.stderr))
    p = run([TDX, "goroutines", t, "--name", "main.worker", "--sort", "Block time (nosuch)"])
    if p.returncode != 1 or b"no column \"Block time (nosuch)\"" not in p.stderr:
        fail("goroutines --sort of no column: exit %d\n%s" % (p.returncode, p.stderr))
    # A damaged trace: an error, with the way to what go tool trace shows (the events read
    # before the damage, through build --partial)
    dmg = os.path.join(OURS, "damaged", "mid-generation.test")
    p = run([TDX, "goroutines", dmg])
    if p.returncode != 1 or b"broken trace" not in p.stderr or b"build --partial" not in p.stderr:
        fail("goroutines of a damaged trace: exit %d\n%s" % (p.returncode, p.stderr))
    pidx = os.path.join(tmp, "partial.tidx")
    run([TDX, "build", "--partial", dmg, "-o", pidx], ok=True)
    p = run([TDX, "goroutines", "--json", pidx], ok=True)
    if b"the trace is damaged at byte offset" not in p.stderr or \
            json.loads(p.stdout)["goroutines"] != 1:
        fail("goroutines of a partial index: %s %s" % (p.stdout, p.stderr))
    # A trace with its index beside it is answered from the index: the partial index of the
    # damaged trace answers where reading the trace fails. Once the trace changes, the stale
    # index is passed over (with a note) and the trace is read.
    beside = os.path.join(tmp, "beside.test")
    shutil.copyfile(dmg, beside)
    run([TDX, "build", "--partial", beside], ok=True)
    p = run([TDX, "goroutines", "--json", beside], ok=True)
    if b"the trace is damaged at byte offset" not in p.stderr or \
            json.loads(p.stdout)["goroutines"] != 1:
        fail("goroutines TRACE with its partial index beside it: %s %s" % (p.stdout, p.stderr))
    shutil.copyfile(t, beside)
    p = run([TDX, "goroutines", beside], ok=True)
    if b"not using it" not in p.stderr or b"stale" not in p.stderr or \
            p.stdout.decode() != out(t):
        fail("goroutines TRACE with a stale index beside it: %s %s" % (p.stdout, p.stderr))
    refuses_garbage(TDX, "goroutines", tmp)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_basic(tmp)
        check_cli(tmp)
        check_crafted(tmp)
        check_same("goid-reused-large", os.path.join(OURS, "edge", "goid-reused-large.test"), tmp)
        gen = os.path.join(tmp, "gen.trace")
        run([TRACEGEN, "--size", "3M", "--seed", "7", "--gen-ms", "100", "-o", gen], ok=True)
        g = check_same("generated", gen, tmp, budgets=("1", "4k"))
        if g["goroutines"] < 100 or len(g["groups"]) < 3:
            fail("generated: too small to test anything: %s" % g)
        bins = os.path.join(TESTDATA, "go-tests-bin")
        if not os.path.isdir(bins):
            print("SKIP: %s not found: Go's conformance traces not checked" % bins)
        else:
            n = 0
            for f in sorted(os.listdir(bins)):
                if f.endswith(".trace") and f not in ("go122-create-syscall-with-p.trace",
                                                      "go122-fail-first-gen-first.trace"):
                    check_same(f, os.path.join(bins, f), tmp, budgets=())
                    n += 1
            print("%d conformance traces checked" % n)
    print("ok")


main()
