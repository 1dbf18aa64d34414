#!/usr/bin/env python3
"""traceidx dump --footprint against a model of go tool trace -d=footprint (cmd/trace's
debugEventsFootprint over the raw reader): each type's count and bytes recomputed from dump's
text form of the same trace (every argument, frame value and string it prints, each uvarint at
its shortest), the shares as Go's %.2f prints them, every one of the 256 types listed, the
largest first, and the columns laid out as Go's tabwriter (minwidth 3, padding 2) lays them out.
Go's own order of equal sizes comes from its unstable sort (core/pdqsort.c, tested on its own);
here only that sizes do not increase.

usage: footprint_test.py TRACEIDX TRACEGEN REPO_TESTDATA
"""
import glob
import os
import re
import sys
import tempfile

from common import TESTDATA, fail, run

TDX, TRACEGEN, OWN = sys.argv[1], sys.argv[2], sys.argv[3]
# the length of Go's table of each version's types (Version.Specs())
SPECS = {22: 45, 23: 50, 25: 52, 26: 137}
GO_ESC = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}


def uvlen(v):
    return max(1, (v.bit_length() + 6) // 7)  # a uvarint's shortest: 7 bits a byte


def go_unquote(q):
    """The bytes of a string Go's %q printed."""
    assert q[0] == '"' and q[-1] == '"', q
    s, out, i = q[1:-1], bytearray(), 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
        elif s[i + 1] == "x":
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
        elif s[i + 1] in "uU":
            k = 4 if s[i + 1] == "u" else 8
            out += chr(int(s[i + 2:i + 2 + k], 16)).encode()
            i += 2 + k
        else:
            out.append(GO_ESC[s[i + 1]])
            i += 2
    return bytes(out)


def model(text):
    """(version, {name: [count, bytes]}, events) from dump's text form."""
    lines = text.split("\n")
    m = re.match(r"Trace Go1\.(\d+)$", lines[0])
    if not m:
        fail("dump's first line: %r" % lines[0])
    per, cur, events = {}, None, 0
    for line in lines[1:]:
        if not line:
            continue
        if line.startswith("\tdata="):
            # (the length's uvarint was counted as 1, for a string with no data line)
            d = go_unquote(line[len("\tdata="):])
            cur[1] += uvlen(len(d)) - 1 + len(d)
            continue
        fields = line.split()
        if line.startswith("\t"):  # a frame: pc func file line
            cur[1] += sum(uvlen(int(f.split("=")[1])) for f in fields)
            continue
        events += 1
        cur = per.setdefault(fields[0], [0, 0])
        cur[0] += 1
        cur[1] += 1 + sum(uvlen(int(f.split("=")[1])) for f in fields[1:])
        if fields[0] in ("String", "ExperimentalBatch"):
            cur[1] += 1  # the data's length, 0 unless a data line follows
    return int(m.group(1)), per, events


def share(v, total):
    return "NaN%" if total == 0 else "%.2f%%" % (v / total * 100)


def layout(rows):
    widths = [max(3, max(len(r[c]) for r in rows) + 2) for c in range(4)]
    return ["".join(r[c].ljust(widths[c]) for c in range(4)) + r[4] for r in rows]


def check(name, trace, canonical=True):
    p = run([TDX, "dump", "--footprint", trace])
    d = run([TDX, "dump", trace])
    if d.returncode != 0:
        if p.returncode != 1 or p.stdout or not p.stderr:
            fail("%s: dump fails but --footprint exits %d" % (name, p.returncode))
        return 0
    if p.returncode != 0:
        fail("%s: dump --footprint exits %d\n%s" % (name, p.returncode, p.stderr))
    version, per, events = model(d.stdout.decode())
    size = os.path.getsize(trace) if not trace.endswith(".test") else None
    out = p.stdout.decode().split("\n")
    if out[-1] != "" or len(out) != 2 + 256 + 1:
        fail("%s: %d lines" % (name, len(out)))
    rows = [re.split(r"  +", l, maxsplit=4) for l in out[2:-1]]
    # a name may be "" (type 0, unassigned types): then the line starts with its padding
    rows = [[""] + r[1:] if r[0] == "" else r for r in rows]
    total = None
    seen = {}
    for r in rows:
        if len(r) != 5:
            fail("%s: row %r" % (name, r))
        seen[r[0]] = seen.get(r[0], 0) + 1
    unknown = ["<unknown (%d)>" % t for t in range(SPECS[version], 256)]
    for u in unknown:
        if seen.get(u) != 1:
            fail("%s: %s listed %d times" % (name, u, seen.get(u, 0)))
    named = [n for n in seen if n and n not in unknown]
    if any(seen[n] != 1 for n in named):
        fail("%s: a type listed twice: %s" % (name, [n for n in named if seen[n] != 1]))
    if len(named) + seen.get("", 0) != SPECS[version]:
        fail("%s: %d named types and %d unnamed, of %d" % (name, len(named), seen.get("", 0),
                                                          SPECS[version]))
    for n, (c, b) in per.items():
        if n not in named:
            fail("%s: %s is not listed" % (name, n))
    sizes = [int(r[1]) for r in rows]
    if sizes != sorted(sizes, reverse=True):
        fail("%s: sizes not the largest first: %s" % (name, sizes[:20]))
    body = sum(sizes)
    if size is not None:
        # the corpus writes every uvarint at its shortest, so its bytes add up; tracegen pads
        # batch sizes, as the runtime does
        if body + 16 != size if canonical else body + 16 >= size:
            fail("%s: %d bytes of events + 16 of header, of %d" % (name, body, size))
        total = size
    else:
        total = body + 16  # (a text trace: the bytes text2bin makes of it)
    want = [["Event", "Bytes", "%", "Count", "%"], ["-"] * 5]
    for r in rows:
        c, b = per.get(r[0], [0, 0]) if r[0] in named else (0, 0)
        want.append([r[0], str(b), share(b, total), str(c), share(c, events)])
    got = out[:-1]
    if layout(want) != got:
        for w, g in zip(layout(want), got):
            if w != g:
                fail("%s: got\n%r\nwanted\n%r" % (name, g, w))
    return events


def check_hand(tmp):
    # a header alone: no event, so the counts' shares are 0/0 (Go prints NaN)
    hdr = os.path.join(tmp, "hdr.trace")
    with open(hdr, "wb") as f:
        f.write(b"go 1.22 trace\0\0\0")
    out = run([TDX, "dump", "--footprint", hdr], ok=True).stdout.decode().split("\n")
    bad = [l for l in out[2:-1] if not re.search(r"  0 +0\.00%  0 +NaN%$", l)]
    if len(out) != 259 or bad:
        fail("header only: %d lines, %r" % (len(out), bad[:3]))
    # a uvarint longer than it needs is counted at its shortest: Frequency freq=1 as 81 00
    pad = os.path.join(tmp, "pad.trace")
    with open(pad, "wb") as f:
        f.write(b"go 1.22 trace\0\0\0" + bytes([8, 0x81, 0x00]))
    out = run([TDX, "dump", "--footprint", pad], ok=True).stdout.decode().split("\n")
    if not re.match(r"Frequency +2 +10\.53% +1 +100\.00%$", out[2]):
        fail("a padded uvarint: %r" % out[2])
    # a broken trace: the raw reader's error, with the offset, and nothing printed
    cut = os.path.join(tmp, "cut.trace")
    with open(cut, "wb") as f:
        f.write(b"go 1.22 trace\0\0\0" + bytes([8, 0x81]))
    p = run([TDX, "dump", "--footprint", cut])
    if p.returncode != 1 or p.stdout or b"unexpected EOF" not in p.stderr or \
            b"17" not in p.stderr:
        fail("a cut trace: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
    p = run([TDX, "dump", "--footprint", "--events", pad])
    if p.returncode != 2:
        fail("--footprint --events: exit %d" % p.returncode)
    if "--footprint" not in run([TDX, "dump", "--help"], ok=True).stdout.decode():
        fail("dump --help does not name --footprint")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_hand(tmp)
        n = events = 0
        for v in (22, 23, 25, 26):
            t = os.path.join(tmp, "gen%d.trace" % v)
            run([TRACEGEN, "--size", "2MiB", "--version", v, "-o", t], ok=True)
            events += check("tracegen v%d" % v, t, canonical=False)
            n += 1
        for t in sorted(glob.glob(os.path.join(OWN, "*", "*.test"))):
            events += check(os.path.relpath(t, OWN), t)
            n += 1
        bins = sorted(glob.glob(os.path.join(TESTDATA, "go-tests-bin", "*.trace")))
        if not bins:
            print("SKIP (the Go corpus): %s not found" % os.path.join(TESTDATA, "go-tests-bin"))
        for t in bins:
            events += check(os.path.basename(t), t)
            n += 1
    print("ok: %d traces, %d events" % (n, events))


if __name__ == "__main__":
    main()
