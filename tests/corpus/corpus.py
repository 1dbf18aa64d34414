#!/usr/bin/env python3
"""Corpus and end-to-end checks of the real traceidx binary, one ctest test per case.

usage: corpus.py TRACEIDX CHECK NAME-OR-PATH

The shared corpus is found through $TRACEIDX_TESTDATA (default: ../shared/testdata beside the
repository). When it is absent the check prints a SKIP line and exits 77 (ctest's skip code).
"""
import gzip
import json
import os
import subprocess
import sys

from common import SANITIZE, SKIP, TESTDATA, fail, need, run, uvarint


def read_golden(path):
    if os.path.exists(path):
        return open(path, "rb").read()
    if os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz").read()
    return None


def first_diff(a, b):
    al, bl = a.split(b"\n"), b.split(b"\n")
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            return "line %d:\n  got:  %r\n  want: %r" % (i + 1, x[:200], y[:200])
    return "lengths differ: %d vs %d lines" % (len(al), len(bl))


def trace_section(text):
    """The -- trace -- section of a txtar test file (or the whole file)."""
    marker = b"\n-- trace --\n"
    if text.startswith(b"-- trace --\n"):
        return text[len(b"-- trace --\n"):]
    i = text.find(marker)
    return text if i < 0 else text[i + len(marker):]


def binary_for(name):
    return os.path.join(TESTDATA, "go-tests-bin", name + ".trace")


def text_for(name):
    if name == "go122":
        return os.path.join(TESTDATA, "seed", "go122.test")
    return os.path.join(TESTDATA, "go-tests", name + ".test")


def check_text2bin(tdx, name, tmp):
    """text2bin gives Go's bytes exactly, and dump gives the text back exactly."""
    src, want = need(text_for(name)), need(binary_for(name))
    out = os.path.join(tmp, name + ".bin")
    p = run([tdx, "text2bin", src, "-o", out])
    if p.returncode != 0:
        fail("text2bin failed: " + p.stderr.decode())
    if open(out, "rb").read() != open(want, "rb").read():
        fail("text2bin output differs from " + want)
    p = run([tdx, "dump", want])
    if p.returncode != 0:
        fail("dump failed: " + p.stderr.decode())
    orig = trace_section(open(src, "rb").read())
    if p.stdout != orig:
        fail("dump does not reproduce the trace text: " + first_diff(p.stdout, orig))


def check_expect(tdx, path):
    """validate meets the test file's -- expect -- line, for every thread count."""
    need(path)
    for j in ("1", "2", "4"):
        p = run([tdx, "validate", "--expect", "-j", j, path])
        if p.returncode != 0:
            fail("-j %s: %s%s" % (j, p.stdout.decode(), p.stderr.decode()))


def check_events(tdx, name):
    """dump --events equals Go's parsed events byte for byte, for -j 1, 2 and 4."""
    golden = read_golden(os.path.join(TESTDATA, "golden", name, "events.txt"))
    if golden is None:
        need(os.path.join(TESTDATA, "golden", name, "events.txt"))
    if name == "synth-split":
        trace = need(os.path.join(TESTDATA, "synth", "synth-split.trace"))
    elif name.startswith("go119-"):
        trace = need(os.path.join(TESTDATA, "v1", name + ".trace"))
    else:
        trace = need(binary_for(name))
    # Under sanitizers the multi-million-event trace runs once; the small ones at every count.
    jobs = ("2",) if SANITIZE and os.path.getsize(trace) > 1 << 20 else ("1", "2", "4")
    for j in jobs:
        p = run([tdx, "dump", "--events", "-j", j, trace], timeout=900)
        if p.stdout != golden:
            fail("-j %s: events differ from the golden: %s" % (j, first_diff(p.stdout, golden)))
        has_error = golden.rstrip(b"\n").split(b"\n")[-1].startswith(b"ERROR: ")
        if (p.returncode != 0) != has_error:
            fail("-j %s: exit status %d does not match the golden's outcome" % (j, p.returncode))


def check_fuzz(tdx, name):
    """A fuzz input ends in success or one clean error line, quickly, for any thread count."""
    path = need(os.path.join(TESTDATA, "fuzz", name))
    outs = []
    for j in ("1", "4"):
        p = run([tdx, "validate", "-j", j, path], timeout=10)
        if p.returncode not in (0, 1):
            fail("exit status %d" % p.returncode)
        err = p.stderr.decode()
        if p.returncode == 1 and not err.startswith("traceidx: "):
            fail("no clean error line: %r" % err)
        e = run([tdx, "dump", "--events", "-j", j, path], timeout=10)
        outs.append((p.returncode, e.stdout))
    if outs[0] != outs[1]:
        fail("-j 1 and -j 4 differ")


def check_edge(tdx, path):
    """Our own edge-case traces: the expectation, and the events when the file lists them."""
    check_expect(tdx, path)
    text = open(path, "rb").read()
    marker = b"\n-- events --\n"
    i = text.find(marker)
    if i < 0:
        return
    want = text[i + len(marker):]
    want = want[: want.find(b"\n-- ")] + b"\n" if b"\n-- " in want else want
    for j in ("1", "3"):
        p = run([tdx, "dump", "--events", "-j", j, path])
        if p.stdout != want:
            fail("-j %s: events differ: %s" % (j, first_diff(p.stdout, want)))


def trace_path(name):
    if name == "synth-split":
        return need(os.path.join(TESTDATA, "synth", "synth-split.trace"))
    if name.startswith("go119-"):
        return need(os.path.join(TESTDATA, "v1", name + ".trace"))
    return need(binary_for(name))


def check_index(tdx, name, tmp):
    """build is byte-identical for -j 1, 2 and 4 and for a 4 KiB summary sort budget (every
    sort spilling runs to merge), and the index gives back the trace's events."""
    trace = trace_path(name)
    outs = []
    for j, extra in (("1", []), ("2", []), ("4", []), ("2", ["--sort-budget", "4096"])):
        out = os.path.join(tmp, "%s.j%s%s.tidx" % (name, j, "s" if extra else ""))
        p = run([tdx, "build", "--quiet", "-j", j] + extra + [trace, "-o", out], timeout=900)
        if p.returncode != 0:
            fail("build -j %s %s failed: %s" % (j, " ".join(extra), p.stderr.decode()))
        outs.append(open(out, "rb").read())
    if outs[1] != outs[0] or outs[2] != outs[0]:
        fail("the index differs between -j 1, -j 2 and -j 4")
    if outs[3] != outs[0]:
        fail("the index differs with --sort-budget 4096 (the summary's sorts spilled)")
    want = run([tdx, "dump", "--events", "-j", "2", trace], timeout=900).stdout
    got = run([tdx, "dump", "--events", os.path.join(tmp, name + ".j1.tidx")], timeout=900)
    if got.returncode != 0 or got.stdout != want:
        fail("events read back from the index differ: " + first_diff(got.stdout, want))
    check_resources(os.path.join(tmp, name + ".j1.tidx"), want)
    p = run([tdx, "info", "--verify", os.path.join(tmp, name + ".j1.tidx")])
    if p.returncode != 0 or b"all checksums verified" not in p.stdout:
        fail("info --verify: " + p.stderr.decode())
    # Given the trace, info and query find the index beside it and must find it current: the
    # trace identity it records (full hash and sampled hash) is the trace's, old formats included.
    beside = os.path.join(tmp, "beside.trace")
    os.symlink(os.path.abspath(trace), beside)
    with open(beside + ".tidx", "wb") as f:
        f.write(outs[0])
    for args in (["info", beside], ["query", beside, "--range", "0:+1us", "-o", beside + ".json"]):
        p = run([tdx] + args)
        if p.returncode != 0:
            fail("%s given the trace: %s" % (args[0], p.stderr.decode()))


def check_resources(index, events):
    """GOROUTINES, PROCS and THREADS as docs/index-format.md defines them, recounted from the
    events: per id, the events naming it (as the event's goroutine, proc or thread, or as a state
    transition's goroutine or proc other than the event's own) and the first and last time."""
    import struct
    want = ({}, {}, {})

    def see(kind, i, time):
        r = want[kind].get(i)
        if r is None:
            want[kind][i] = [1, time, time]
        else:
            r[0] += 1
            r[2] = time
    for line in events.decode().split("\n"):
        if not line.startswith("M="):
            continue
        f = line.split(" ")
        m, p, g = (int(x[2:]) for x in f[:3])
        time = int(f[4][len("Time="):])
        for kind, i in ((0, g), (1, p), (2, m)):
            if i >= 0:
                see(kind, i, time)
        if f[3] == "StateTransition":
            if f[5].startswith("GoID=") and int(f[5][5:]) != g:
                see(0, int(f[5][5:]), time)
            if f[5].startswith("ProcID=") and int(f[5][7:]) != p:
                see(1, int(f[5][7:]), time)
    data = open(index, "rb").read()
    secs = {kind: (off, n) for kind, off, n in sections(index)}

    def unzigzag(v):
        return (v >> 1) ^ -(v & 1)
    for kind, sec in enumerate((8, 9, 10)):  # GOROUTINES, PROCS, THREADS
        off, _ = secs[sec]
        count = struct.unpack_from("<Q", data, off)[0]
        o, rid, first, got = off + 8, 0, 0, {}
        for _ in range(count):
            fields = []
            for _ in range(4):
                v, o = uvarint(data, o)
                fields.append(v)
            rid += unzigzag(fields[0])
            first += unzigzag(fields[2])
            got[rid] = [fields[1], first, first + unzigzag(fields[3])]
        if got != want[kind]:
            diff = [(i, got.get(i), want[kind].get(i))
                    for i in sorted(set(got) | set(want[kind])) if got.get(i) != want[kind].get(i)]
            fail("section %s differs from the events (id, [events, first, last] in the index, "
                 "recounted): %s" % (("GOROUTINES", "PROCS", "THREADS")[kind], diff[:5]))


def sections(path):
    import struct
    data = open(path, "rb").read()
    off, count = struct.unpack_from("<QI", data, 24)
    for i in range(count):
        kind, flags, soff, slen, _ = struct.unpack_from("<IIQQQ", data, off + 32 * i)
        yield kind, soff, slen


def expect_error(tdx, args, words, what):
    p = run(args)
    err = p.stderr.decode()
    if p.returncode != 1:
        fail("%s: exit status %d (want 1): %s" % (what, p.returncode, err))
    if not err.startswith("traceidx: ") or not all(w in err for w in words):
        fail("%s: unclear error %r (want %s)" % (what, err, words))


def check_corrupt(tdx, name, tmp):
    """A damaged index, a stale one, a newer format, a non-index target: clear errors, exit 1."""
    import shutil
    import struct
    trace = trace_path(name)
    good = os.path.join(tmp, "good.tidx")
    p = run([tdx, "build", "--quiet", trace, "-o", good])
    if p.returncode != 0:
        fail("build failed: " + p.stderr.decode())
    data = open(good, "rb").read()
    bad = os.path.join(tmp, "bad.tidx")
    for kind, off, length in list(sections(good)) + [(0, 60, 1), (-1, len(data) - 10, 1)]:
        if length == 0:
            continue
        b = bytearray(data)
        b[off + length // 2] ^= 0x40
        open(bad, "wb").write(bytes(b))
        what = "flipped byte in section %d" % kind
        expect_error(tdx, [tdx, "info", "--verify", bad], ["corrupt", "rebuild"], what)
        # dump --events reads the header, tables, directories and events (kinds 1-7).
        if kind <= 7:
            expect_error(tdx, [tdx, "dump", "--events", bad], ["corrupt", "rebuild"], what)
        # goroutines reads GSTATS' table, then a group's run: one of them finds the damage.
        if kind == 21:
            listing = run([tdx, "goroutines", "--json", good], ok=True)
            names = [g["name"] for g in json.loads(listing.stdout)["groups"]]
            errs = []
            for args in [[]] + [["--name", n] for n in names]:
                p = run([tdx, "goroutines", bad] + args)
                if p.returncode not in (0, 1):
                    fail("goroutines %s of a damaged GSTATS: exit %d" % (args, p.returncode))
                if p.returncode == 1:
                    errs.append(p.stderr.decode())
            if not errs or not all("corrupt" in e and "rebuild" in e for e in errs):
                fail("goroutines found no damage in GSTATS (or said it unclearly): %s" % errs)
        # pprof reads PPROF whole (checksum first).
        if kind == 22:
            expect_error(tdx, [tdx, "pprof", "sched", bad, "--json"], ["corrupt", "rebuild"],
                         what + " (pprof)")
        if kind == 23:
            expect_error(tdx, [tdx, "regions", bad], ["corrupt", "rebuild"], what + " (regions)")
        # one group's regions (/userregion) come from every event block
        if kind in (6, 7):
            expect_error(tdx, [tdx, "regions", bad, "--latmin", "0"], ["corrupt", "rebuild"],
                         what + " (regions --latmin 0)")
        if kind == 24:
            expect_error(tdx, [tdx, "mmu", bad], ["corrupt", "rebuild"], what + " (mmu)")
        # A whole-trace query replays every event block (decoded ahead on a second thread).
        if kind == 7:
            expect_error(tdx, [tdx, "query", bad, "-o", os.path.join(tmp, "q.json")],
                         ["corrupt", "rebuild"], what + " (query)")
            if os.path.exists(os.path.join(tmp, "q.json")):
                fail("a failed query left its output file")
    open(bad, "wb").write(data[: len(data) // 2])
    expect_error(tdx, [tdx, "info", bad], ["truncated", "rebuild"], "truncated index")
    # The version is checked before the header checksum (a newer header may differ in layout).
    b = bytearray(data)
    struct.pack_into("<I", b, 8, 99)
    open(bad, "wb").write(bytes(b))
    expect_error(tdx, [tdx, "info", bad], ["newer", "upgrade"], "newer format version")
    # A header that fails its checksum may be a damaged version field: it says both.
    expect_error(tdx, [tdx, "info", bad], ["fails its checksum", "damaged"],
                 "newer format version, unsealed")
    from common import Sealed
    sx = Sealed.load(bad)
    if sx:
        struct.pack_into("<Q", b, 120, sx.xxh(b[0:120]))
        open(bad, "wb").write(bytes(b))
        expect_error(tdx, [tdx, "info", bad], ["format version 99 is newer than this traceidx reads",
                                               "upgrade"], "newer format version, sealed")
    struct.pack_into("<I", b, 8, 2)
    open(bad, "wb").write(bytes(b))
    expect_error(tdx, [tdx, "info", bad], ["older", "rebuild"], "older format version")
    # A trace changed after indexing.
    copy = os.path.join(tmp, "copy.trace")
    shutil.copy(trace, copy)
    shutil.copy(good, copy + ".tidx")
    p = run([tdx, "info", copy])
    if p.returncode != 0:
        fail("info on an unchanged trace: " + p.stderr.decode())
    t = bytearray(open(copy, "rb").read())
    t[len(t) // 2] ^= 1
    open(copy, "wb").write(bytes(t))
    expect_error(tdx, [tdx, "info", copy], ["stale", "traceidx build"], "modified trace")
    # build never replaces a file that is not an index.
    other = os.path.join(tmp, "precious.txt")
    open(other, "w").write("not an index\n")
    expect_error(tdx, [tdx, "build", "--quiet", trace, "-o", other], ["not a traceidx index", "refusing"],
                 "non-index target")
    if open(other).read() != "not an index\n":
        fail("build changed a file that is not an index")
    if [f for f in os.listdir(tmp) if ".tmp." in f]:
        fail("a temporary file was left behind")


def check_nospace(tdx, name, tmp):
    """Writes that fail midway (a file-size limit standing in for a full disk, at several points
    of the build, with and without the encoder thread): a clear error, exit 1, nothing left."""
    import resource
    import signal
    trace = trace_path(name)
    full = os.path.join(tmp, "full.tidx")
    p = run([tdx, "build", "--quiet", trace, "-o", full])
    if p.returncode != 0:
        fail("build failed: " + p.stderr.decode())
    size = os.path.getsize(full)
    os.unlink(full)
    out = os.path.join(tmp, "limited.tidx")
    for frac in (0.02, 0.3, 0.7, 0.98):
        limit = int(size * frac)

        def limited():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        for j in ("1", "2"):
            what = "build -j %s with writes failing past %d of %d bytes" % (j, limit, size)
            try:
                p = subprocess.run([tdx, "build", "--quiet", "-j", j, trace, "-o", out],
                                   capture_output=True, timeout=300, preexec_fn=limited)
            except subprocess.TimeoutExpired:
                fail(what + ": timed out")
            err = p.stderr.decode()
            if p.returncode != 1 or not err.startswith("traceidx: ") or "too large" not in err.lower():
                fail("%s: exit %d, %r" % (what, p.returncode, err))
            left = [f for f in os.listdir(tmp)]
            if left:
                fail("%s: left %s behind" % (what, left))


def sealed_index(tdx, name, tmp):
    """The index of trace `name` built into tmp, and its common.Sealed (SKIP without libxxhash)."""
    from common import Sealed
    good = os.path.join(tmp, "good.tidx")
    run([tdx, "build", "--quiet", trace_path(name), "-o", good], ok=True)
    sx = Sealed.load(good)
    if sx is None:
        print("SKIP: libxxhash.so.0 not found (needed to re-seal the checksums)")
        sys.exit(SKIP)
    return good, sx


def check_crafted(tdx, name, tmp):
    """A frame tree or FNAMES whose checksums were made to match altered bytes (a crafted index,
    not a damaged one): every query still ends with exit 0 or 1 and no sanitizer report, never
    a crash or a hang. Parent ids, name ids, text bounds and node ids are checked where read.
    Then a viewer store and generator states altered the same way: info --verify refuses them."""
    import random
    import struct
    good, sx = sealed_index(tdx, name, tmp)
    data, secs, xxh, reseal = bytearray(sx.data), sx.secs, sx.xxh, sx.reseal

    viewdata, fnames = secs[17][1], secs[19]
    rnd = random.Random(1)
    edge = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]
    bad = os.path.join(tmp, "crafted.tidx")
    queries = ([], ["--range", "0:+5ms"], ["--view", "threads"], ["--start", "10", "--end", "200"],
               ["--goroutine", "1"], ["--task", "3"], ["--taskid", "4"])
    seen = set()
    for it in range(30 if not SANITIZE else 15):
        b = bytearray(data)
        if rnd.random() < 0.7:  # a view's frame tree: its header, node ids or frame records
            view = rnd.choice([14, 15, 16])
            d = secs[view][1]
            boff, blen = struct.unpack_from("<QQ", b, d + 40)
            base = viewdata + boff
            nframes, nodes = struct.unpack_from("<QQ", b, base)
            for _ in range(rnd.randint(1, 4)):
                part = rnd.randrange(3)
                if part == 0 and nodes:
                    o = base + 16 + 4 * rnd.randrange(nodes)
                elif part == 1 and nframes:
                    o = base + 16 + 4 * nodes + 8 * rnd.randrange(nframes) + 4 * rnd.randrange(2)
                else:
                    o = base + 8 * rnd.randrange(2)
                v = rnd.choice(edge + [rnd.randrange(1 << 32), rnd.randrange(nframes + 2)])
                struct.pack_into("<I", b, o, v)
            struct.pack_into("<Q", b, d + 40 + 16, xxh(b[base:base + blen]))
            reseal(b, view)
        else:  # FNAMES: the count, a text's offset or length, a function id
            _, off, _, _ = fnames
            count = struct.unpack_from("<Q", b, off)[0]
            if count and rnd.random() < 0.8:
                o = off + 8 + 24 * rnd.randrange(count) + rnd.choice([8, 16, 20])
                struct.pack_into("<I", b, o, rnd.choice(edge + [rnd.randrange(1 << 32)]))
            else:
                struct.pack_into("<Q", b, off, rnd.choice([0, count + 1, 2 * count, 1 << 40]))
            reseal(b, 19)
        open(bad, "wb").write(b)
        for q in queries:
            p = run([tdx, "query", bad, "-o", os.path.join(tmp, "q.json")] + q, timeout=120)
            err = p.stderr.decode(errors="replace")
            if p.returncode not in (0, 1) or "Sanitizer" in err or "runtime error" in err:
                fail("crafted index %d, query %s: exit %d\n%s" % (it, " ".join(q), p.returncode,
                                                                   err[:2000]))
            seen.add(p.returncode)
    if seen != {0, 1}:
        fail("the crafted indexes gave only exit codes %s (want both: the check checks nothing)"
             % sorted(seen))
    # The viewer store's first count (identity strings) changed under a re-sealed checksum: the
    # checksums alone pass it, info --verify loads the store and refuses it, and every query
    # refuses it cleanly (a query used to crash on such a store).
    _, vg_off, _, _ = secs[11]
    for v in (0x7E, 0x7F):
        if data[vg_off + 6] == v:
            continue
        b = bytearray(data)
        b[vg_off + 6] = v
        reseal(b, 11)
        open(bad, "wb").write(b)
        for q in [["info", "--verify", bad]] + [["query", bad, "-o", os.path.join(tmp, "q.json")]
                                                 + q for q in queries]:
            p = run([tdx] + q, timeout=120)
            err = p.stderr.decode(errors="replace")
            if (p.returncode != 1 or "VGSTORE is corrupt" not in err or "rebuild" not in err
                    or "Sanitizer" in err or "runtime error" in err):
                fail("viewer store count 0x%02x, %s: exit %d\n%s" % (v, " ".join(q[:2]),
                                                                      p.returncode, err[:2000]))
    # A view's first checkpoint state, or its final state, altered under re-sealed checksums:
    # info --verify restores every state as a query would and refuses it, naming VIEWDATA, and a
    # query that restores it refuses it too.
    for view in (14, 15, 16):
        d = secs[view][1]
        nck = struct.unpack_from("<Q", data, d + 8)[0]
        for ref, label in ((d + 128 + 40, "checkpoint 0"), (d + 64, "final state")):
            if label == "checkpoint 0" and not nck:
                continue
            boff, blen = struct.unpack_from("<QQ", data, ref)
            if blen < 7:
                fail("view %d, %s: a state of %d bytes" % (view, label, blen))
            b = bytearray(data)
            b[viewdata + boff] ^= 0x20  # its magic
            struct.pack_into("<Q", b, ref + 16, xxh(b[viewdata + boff:viewdata + boff + blen]))
            reseal(b, 17)
            reseal(b, view)
            open(bad, "wb").write(b)
            vq = {14: [], 15: ["--view", "threads"], 16: ["--goroutine", "1"]}[view]
            for q in (["info", "--verify", bad], ["query", bad, "-o", os.path.join(tmp, "q.json")]
                      + vq):
                p = run([tdx] + q, timeout=120)
                err = p.stderr.decode(errors="replace")
                if (p.returncode != 1 or "VIEWDATA is corrupt" not in err or "rebuild" not in err
                        or "Sanitizer" in err or "runtime error" in err):
                    fail("view %d, %s altered, %s: exit %d\n%s" % (view, label, " ".join(q[:2]),
                                                                  p.returncode, err[:2000]))
    # the untouched index passes (so the failures above are the altered states')
    p = run([tdx, "info", "--verify", good], timeout=120)
    if p.returncode != 0:
        fail("info --verify of the good index: exit %d\n%s" % (p.returncode, p.stderr.decode()))


def check_resealed(tdx, name, tmp):
    """Bytes altered inside the checksummed pieces (event blocks, summary blocks, view blobs,
    string chunks) with every checksum made to match: no command crashes, hangs or reports
    anything but exit 0 or 1; and info --verify refuses whatever a query would find corrupt
    (deterministic cases name what is wrong; seeded random ones check the rule)."""
    import random
    import struct
    good, sx = sealed_index(tdx, name, tmp)
    data, secs = sx.data, sx.secs
    bad, out = os.path.join(tmp, "bad.tidx"), os.path.join(tmp, "q.json")
    queries = [["query", bad, "-o", out] + q for q in
               (["--range", "0:+5ms"], ["--range", "#1"], ["--range", "500ms:+20ms"],
                ["--view", "threads", "--range", "1s:+20ms"], ["--goroutine", "1"],
                ["--taskid", "0"])] + [["ranges", bad]]
    queries = [q for q in queries
               if run([tdx] + [good if a == bad else a for a in q], timeout=300).returncode == 0]
    if len(queries) < 4:
        fail("only %d of the queries work on the intact index" % len(queries))

    def attempt(b):
        """Runs verify and the queries on b: verify's exit, and the queries' (exit, stderr)."""
        open(bad, "wb").write(b)
        res = []
        for q in [["info", "--verify", bad]] + queries:
            p = run([tdx] + q, timeout=300)
            err = p.stderr.decode(errors="replace")
            if p.returncode not in (0, 1) or "Sanitizer" in err or "runtime error" in err:
                fail("%s: exit %d\n%s" % (" ".join(q[:1] + q[3:]), p.returncode, err[:2000]))
            res.append((p.returncode, err))
        return res[0], res[1:]

    u64 = lambda b, o: struct.unpack_from("<Q", b, o)[0]
    VH_NITEMS, VH_NOPT, VH_NAMES, VH_NNAMES, VH_SIZE, CK_SIZE = 16, 32, 88, 112, 128, 136
    CK_NITEMS, CK_ITEMS, CK_CROSS, CK_STOP = 32, 64, 88, 112
    viewdata = secs[17][1]

    def reblob(b, ref, view):
        """The blob at reference ref changed: its hash, then the directory's section."""
        off, n = u64(b, ref), u64(b, ref + 8)
        struct.pack_into("<Q", b, ref + 16, sx.xxh(b[viewdata + off:viewdata + off + n]))
        sx.reseal(b, view)

    def expect(b, what, want, queries_too=False):
        (vrc, verr), res = attempt(b)
        if vrc != 1 or want not in verr or "rebuild" not in verr:
            fail("%s: info --verify exit %d, %r (want %r)" % (what, vrc, verr, want))
        if queries_too and not any(rc == 1 and want in err for rc, err in res):
            fail("%s: no query refused it" % what)

    # deterministic cases, each naming what is wrong
    proc, gor = secs[14][1], secs[16][1]
    nck = u64(data, proc + 8)
    ck = [k for k in range(nck) if u64(data, proc + VH_SIZE + k * CK_SIZE + CK_NITEMS)]
    if not ck or nck < 2:
        fail("the proc view needs 2 checkpoints and long items (has %d)" % nck)
    c = proc + VH_SIZE + ck[0] * CK_SIZE
    b = bytearray(data)
    struct.pack_into("<Q", b, c + CK_NITEMS, u64(b, c + CK_NITEMS) + 1)
    sx.reseal(b, 14)
    expect(b, "a checkpoint's long item count", "section VIEW_PROC", queries_too=True)
    b = bytearray(data)
    struct.pack_into("<Q", b, c + CK_ITEMS + 8, u64(b, c + CK_ITEMS + 8) - 1)
    reblob(b, c + CK_ITEMS, 14)
    expect(b, "a long items blob one byte short", "section VIEWDATA (long items)")
    b = bytearray(data)
    cross = viewdata + u64(b, c + CK_CROSS)
    b[cross] = (b[cross] + 1) & 0x7F  # the list's count (a one-byte uvarint here)
    reblob(b, c + CK_CROSS, 14)
    expect(b, "a crossing list's count", "section VIEWDATA (long items)")
    stops = [k for k in range(nck) if u64(data, proc + VH_SIZE + k * CK_SIZE + CK_STOP + 8)]
    if stops:
        c = proc + VH_SIZE + stops[0] * CK_SIZE
        b = bytearray(data)
        b[viewdata + u64(b, c + CK_STOP)] = 0x7F  # entries: more than the interval can have
        reblob(b, c + CK_STOP, 14)
        expect(b, "a stop table's entry count", "section VIEWDATA (stop table)")
    tree = viewdata + u64(data, proc + 40)
    nframes, nodes = u64(data, tree), u64(data, tree + 8)
    if nframes >= 2:  # the last frame's caller changed (a query reads it only to print it)
        b = bytearray(data)
        rec = tree + 16 + 4 * nodes + 8 * (nframes - 1)
        struct.pack_into("<I", b, rec, 0 if struct.unpack_from("<I", b, rec)[0] else 1)
        reblob(b, proc + 40, 14)
        expect(b, "a frame's caller", "section VIEW_PROC")
    # a frame name's text and another's line: a query copies the text into stackFrames as it is
    fo = secs[19][1]
    nnames = u64(data, fo)
    if nnames >= 2:
        b = bytearray(data)
        b[fo + 8 + 24 * nnames + 1] ^= 0x20  # the first name's first letter, its case swapped
        sx.reseal(b, 19)
        expect(b, "a frame name's text", "section FNAMES")
        b = bytearray(data)
        struct.pack_into("<Q", b, fo + 8 + 24, u64(b, fo + 8 + 24) + 1)  # the second's line
        sx.reseal(b, 19)
        expect(b, "a frame name's line", "section FNAMES")
    # a generator state's flags (after its magic and view): the final state as if before any
    # event (Finish would fail: it was reported as out of memory), a checkpoint's as finished
    VH_FINAL, CK_STATE = 64, 40
    for ref, flags, what in ((proc + VH_FINAL, 0, "the final state's 'started'"),
                             (proc + VH_SIZE + (nck - 1) * CK_SIZE + CK_STATE, 3,
                              "a checkpoint's 'finished'")):
        b = bytearray(data)
        st = viewdata + u64(b, ref)
        if b[st:st + 6] != b"TDXVG2" or b[st + 7] > 3:
            fail("%s: the state's layout is not the one this test knows" % what)
        b[st + 7] = flags
        reblob(b, ref, 14)
        expect(b, what, "section VIEWDATA", queries_too=flags == 0)
    # a section every index of this format has, gone (its row renamed to a kind no reader
    # knows): verify refuses it, as the queries that need it do
    b = bytearray(data)
    struct.pack_into("<I", b, sx.toff + 32 * sx.secs[13][0], 1000)
    sx.reseal(b, 13)
    expect(b, "no SUMMARY section", "no SUMMARY section", queries_too=True)
    b = bytearray(data)
    struct.pack_into("<Q", b, gor + VH_NNAMES, u64(b, gor + VH_NNAMES) + 1)
    sx.reseal(b, 16)
    expect(b, "the goroutine view's name count", "section VIEWDATA (names)")
    so = secs[13][1]
    b = bytearray(data)
    struct.pack_into("<Q", b, so + 8 + 16, u64(b, so + 8 + 16) - 1)  # the last event's time
    struct.pack_into("<Q", b, so + 352, sx.xxh(b[so:so + 352]))
    expect(b, "the summary's last time", "section SUMMARY (its totals)")
    ro = secs[12][1]
    nr = u64(data, ro)
    if nr >= 2:
        b = bytearray(data)
        second = ro + 8 + 48 + u64(b, ro + 8 + 40)
        struct.pack_into("<Q", b, second, u64(b, second) + 1)  # range 1 no longer follows on
        sx.reseal(b, 12)
        expect(b, "a split range's start", "section RANGES", queries_too=True)
        b = bytearray(data)
        last = ro + 8
        for _ in range(nr - 1):
            last += 48 + u64(b, last + 40)
        struct.pack_into("<Q", b, last + 8, u64(b, proc + VH_NOPT) + 5)  # past the output
        sx.reseal(b, 12)
        expect(b, "the last split range's end", "section RANGES")

    # seeded random alterations inside the pieces, their own hashes made to match
    rnd = random.Random(2026)

    def scramble(b, lo, hi):
        for _ in range(rnd.choice([1, 1, 2, 4])):
            o = lo + rnd.randrange(hi - lo)
            if rnd.random() < 0.6:
                b[o] ^= 1 << rnd.randrange(8)
            else:
                b[o] = rnd.choice([0, 1, 0x7F, 0x80, 0xFF])

    def in_events(b):
        evo, (do, dl) = secs[7][1], secs[6][1:3]
        e = do + 48 * rnd.randrange(dl // 48)
        off, n = u64(b, e), struct.unpack_from("<I", b, e + 8)[0]
        scramble(b, evo + off, evo + off + n)
        struct.pack_into("<Q", b, e + 40, sx.xxh(b[evo + off:evo + off + n]))
        sx.reseal(b, 6)

    def in_summary(b):
        t = rnd.randrange(7)
        nblk, dirp, datap = struct.unpack_from("<QQQ", b, so + 72 + 40 * t + 8)
        if not nblk:
            return
        k = rnd.randrange(nblk)
        e = so + dirp + 32 * k
        off, n = u64(b, e + 8), struct.unpack_from("<I", b, e + 16)[0]
        scramble(b, so + datap + off, so + datap + off + n)
        struct.pack_into("<Q", b, e + 24, sx.xxh(b[so + datap + off:so + datap + off + n]))
        struct.pack_into("<I", b, e + 20, 0)
        struct.pack_into("<I", b, e + 20, sx.xxh(b[e:e + 32], (t << 56) ^ k) & 0xFFFFFFFF)

    def in_view(b):
        view = rnd.choice([14, 15, 16])
        d = secs[view][1]
        refs = [d + 40, d + 64, d + 88] + [d + VH_SIZE + k * CK_SIZE + x for k in range(u64(b, d + 8))
                                   for x in (40, CK_ITEMS, CK_CROSS, CK_STOP)]
        ref = rnd.choice(refs)
        off, n = u64(b, ref), u64(b, ref + 8)
        if n:
            scramble(b, viewdata + off, viewdata + off + n)
            reblob(b, ref, view)

    seen = set()
    for it in range(8 if SANITIZE else 24):
        b = bytearray(data)
        (in_events, in_summary, in_view)[it % 3](b)
        if b == data:
            continue
        (vrc, verr), res = attempt(b)
        seen.add(vrc)
        for (rc, err), q in zip(res, queries):
            if vrc == 0 and "is corrupt" in err:
                fail("alteration %d: info --verify passed it, %s found it corrupt: %s"
                     % (it, " ".join(q[:1] + q[4:]), err))
    if seen != {0, 1}:
        fail("info --verify gave only exit codes %s (want both: the check checks nothing)"
             % sorted(seen))
    print("%d queries; stop table case %s, frame case %s, range cases %s; random alterations: "
          "verify exits %s" % (len(queries), "run" if stops else "skipped (none)",
                               "run" if nframes >= 2 else "skipped", "run" if nr >= 2 else "skipped",
                               sorted(seen)))


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    tdx, check, arg = sys.argv[1:]
    tmp = os.environ.get("TMPDIR", "/tmp")
    tmp = os.path.join(tmp, "traceidx-corpus-%d" % os.getpid())
    os.makedirs(tmp, exist_ok=True)
    try:
        if check == "text2bin":
            check_text2bin(tdx, arg, tmp)
        elif check == "expect":
            check_expect(tdx, need(text_for(arg)))
        elif check == "events":
            check_events(tdx, arg)
        elif check == "fuzz":
            check_fuzz(tdx, arg)
        elif check == "index":
            check_index(tdx, arg, tmp)
        elif check == "corrupt":
            check_corrupt(tdx, arg, tmp)
        elif check == "nospace":
            check_nospace(tdx, arg, tmp)
        elif check == "crafted":
            check_crafted(tdx, arg, tmp)
        elif check == "resealed":
            check_resealed(tdx, arg, tmp)
        elif check == "edge":
            check_edge(tdx, arg)
        else:
            print("unknown check " + check)
            sys.exit(2)
    finally:
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    print("PASS")


if __name__ == "__main__":
    main()
