#!/usr/bin/env python3
"""Corpus and end-to-end checks of the real traceidx binary, one ctest test per case.

usage: corpus.py TRACEIDX CHECK NAME-OR-PATH

The shared corpus is found through $TRACEIDX_TESTDATA (default: ../shared/testdata beside the
repository). When it is absent the check prints a SKIP line and exits 77 (ctest's skip code).
"""
import gzip
import os
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TESTDATA = os.environ.get("TRACEIDX_TESTDATA", os.path.join(REPO, "..", "shared", "testdata"))
SANITIZE = bool(os.environ.get("TRACEIDX_SANITIZE"))


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def need(path):
    if not os.path.exists(path):
        print("SKIP: %s not found (set TRACEIDX_TESTDATA to the shared corpus)" % path)
        sys.exit(SKIP)
    return path


def run(args, timeout=300, env=None):
    e = dict(os.environ, TZ="UTC")
    if env:
        e.update(env)
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired:
        fail("timed out after %ds: %s" % (timeout, " ".join(args)))
    if p.returncode < 0:
        fail("crashed with signal %d: %s\n%s" % (-p.returncode, " ".join(args), p.stderr.decode(errors="replace")))
    return p


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
