#!/usr/bin/env python3
"""`traceidx info --verify` with 1, 2 and 3 threads (the real binary, a generated trace): an intact
index passes and its event counts add up across the threads; damaged event blocks are reported
as the lowest-numbered one, at its offset, the same for every -j and every run; a damaged view
state is reported before any block, as with one thread. The block directory's, the generations'
and META's numbers altered under re-sealed checksums are refused (check_directory). A pass over
every event stops before a block damaged at its end (check_block_end).

usage: verify_test.py TRACEIDX TRACEGEN
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

from common import SANITIZE, SKIP, Sealed, fail, run, uvarint

META, GENS, EVDIR, EVENTS, VIEW_PROC, VIEWDATA = 1, 5, 6, 7, 14, 17
D_OFFSET, D_LENGTH, D_NEVENTS, D_FIRST_EVENT, D_FIRST_TIME, D_LAST_TIME, D_HASH, D_SIZE = (
    0, 8, 12, 16, 24, 32, 40, 48)
G_NEVENTS, G_FIRST_TIME, G_FIRST_BLOCK, G_SIZE = 16, 24, 40, 48
M_GENERATIONS, M_EVENTS, M_LAST_TIME, M_STACKS, M_KIND0 = 8, 16, 32, 80, 96


def check_directory(tdx, data, secs, reseal, bad, verify):
    """The numbers queries search, altered under re-sealed checksums (a crafted index, or one
    written wrong): the block directory's chain, the generations' and META's totals are refused
    when the index is opened (by info and query alike); a block whose times are not its
    directory entry's, and kind counts that are not META's, by info --verify."""
    evdir, gens, meta = secs[EVDIR][1], secs[GENS][1], secs[META][1]
    ngens = secs[GENS][2] // G_SIZE

    def d(k, field):
        return evdir + k * D_SIZE + field

    def q64(b, o, f):
        struct.pack_into("<q", b, o, f(struct.unpack_from("<q", b, o)[0]))

    def q32(b, o, f):
        struct.pack_into("<I", b, o, f(struct.unpack_from("<I", b, o)[0]))

    last1 = struct.unpack_from("<q", data, d(1, D_LAST_TIME))[0]
    kinds = [struct.unpack_from("<Q", data, meta + M_KIND0 + 8 * k)[0] for k in range(15)]
    big, small = kinds.index(max(kinds)), kinds.index(min(k for k in kinds if k))
    # (what, section altered, how, the offset the error names, the section it names)
    at_open = [
        ("a block's first event index", EVDIR, lambda b: q64(b, d(2, D_FIRST_EVENT), lambda v: v + 1),
         d(2, 0), "EVDIR"),
        ("a block's event count", EVDIR, lambda b: q32(b, d(2, D_NEVENTS), lambda v: v - 1),
         d(3, 0), "EVDIR"),
        ("a block starting at its predecessor's last time", EVDIR,
         lambda b: q64(b, d(2, D_FIRST_TIME), lambda v: last1), d(2, 0), "EVDIR"),
        ("a block's last time before its first", EVDIR,
         lambda b: q64(b, d(4, D_LAST_TIME), lambda v: struct.unpack_from("<q", b, d(4, D_FIRST_TIME))[0] - 1),
         d(4, 0), "EVDIR"),
        ("a generation's event count", GENS, lambda b: q64(b, gens + G_NEVENTS, lambda v: v + 1),
         gens, "GENS"),
        ("a generation's first time", GENS, lambda b: q64(b, gens + G_FIRST_TIME, lambda v: v - 1),
         gens, "GENS"),
        ("the last generation's first block", GENS,
         lambda b: q32(b, gens + (ngens - 1) * G_SIZE + G_FIRST_BLOCK, lambda v: v + 1),
         gens + (ngens - 1) * G_SIZE, "GENS"),
        ("META's events", META, lambda b: q64(b, meta + M_EVENTS, lambda v: v + 1), meta, "META"),
        ("META's last time", META, lambda b: q64(b, meta + M_LAST_TIME, lambda v: v - 1), meta,
         "META"),
        ("META's generations", META, lambda b: q64(b, meta + M_GENERATIONS, lambda v: v + 1), gens,
         "GENS"),
        ("META's stacks", META, lambda b: q64(b, meta + M_STACKS, lambda v: v + 1), meta, "META"),
    ]
    for what, sec, alter, off, name in at_open:
        b = bytearray(data)
        alter(b)
        reseal(b, sec)
        open(bad, "wb").write(b)
        want = "offset %d: index section %s" % (off, name)
        for args in (["info", bad], ["query", bad, "--range", "0:+1ms", "-o", bad + ".json"]):
            p = run([tdx] + args, timeout=300)
            err = p.stderr.decode(errors="replace")
            if p.returncode != 1 or want not in err or "rebuild" not in err:
                fail("%s altered, %s: exit %d, %r (want %r)" % (what, args[0], p.returncode, err,
                                                                want))
    # A block whose directory times are off by one, where that keeps the directory's chain, and
    # two kind counts moved by one, their total kept: info opens it, info --verify refuses it.
    gap = [k for k in range(3, secs[EVDIR][2] // D_SIZE)
           if struct.unpack_from("<q", data, d(k, D_FIRST_TIME))[0]
           - struct.unpack_from("<q", data, d(k - 1, D_LAST_TIME))[0] >= 2]
    if not gap:
        fail("no block starts 2 ns or more after its predecessor's end (the check needs one)")
    k = gap[0]
    block_off = secs[EVENTS][1] + struct.unpack_from("<Q", data, d(k, D_OFFSET))[0]

    def kinds_moved(b):
        q64(b, meta + M_KIND0 + 8 * big, lambda v: v + 1)
        q64(b, meta + M_KIND0 + 8 * small, lambda v: v - 1)

    for what, sec, alter, want in (
            ("block %d's first time" % k, EVDIR, lambda b: q64(b, d(k, D_FIRST_TIME), lambda v: v - 1),
             "offset %d: index event block %d is corrupt" % (block_off, k)),
            ("two kinds' counts", META, kinds_moved,
             "offset %d: index section META (its events of each kind)" % meta)):
        b = bytearray(data)
        alter(b)
        reseal(b, sec)
        open(bad, "wb").write(b)
        p = run([tdx, "info", bad], timeout=300)
        if p.returncode != 0:
            fail("%s altered: info (no --verify) exit %d, %r" % (what, p.returncode, p.stderr))
        for j in ("1", "2"):
            rc, _, err = verify(bad, j)
            if rc != 1 or want not in err or "rebuild" not in err:
                fail("%s altered, info --verify -j %s: exit %d, %r (want %r)" % (what, j, rc, err,
                                                                             want))


def check_block_end(tdx, data, secs, xxh, reseal, bad, good):
    """A block damaged where only its end shows it (the last byte of a rANS lane, read last, its
    checksum re-sealed): a pass over every event (dump --events) gives every event of the blocks
    before it and none of its own, then the error naming it."""
    evdir, events = secs[EVDIR][1], secs[EVENTS][1]
    k = 1
    off = events + struct.unpack_from("<Q", data, evdir + k * D_SIZE + D_OFFSET)[0]
    length = struct.unpack_from("<I", data, evdir + k * D_SIZE + D_LENGTH)[0]
    n0 = struct.unpack_from("<I", data, evdir + D_NEVENTS)[0]
    i = off + 1  # flags
    nthr, i = uvarint(data, i)
    for _ in range(nthr + 1):  # each thread's m, then t0
        _, i = uvarint(data, i)
    _, i = uvarint(data, i)  # tables
    hlen, i = uvarint(data, i)
    i += hlen
    lane_len, i = uvarint(data, i)  # lane 0: its state (4 bytes), then its bytes
    if lane_len <= 4 or i + lane_len > off + length:
        fail("block %d's lane 0 holds no bytes to damage (%d)" % (k, lane_len))
    b = bytearray(data)
    b[i + lane_len - 1] ^= 0x5A
    struct.pack_into("<Q", b, evdir + k * D_SIZE + D_HASH, xxh(b[off:off + length]))
    reseal(b, EVDIR)
    open(bad, "wb").write(b)
    p = run([tdx, "dump", "--events", bad], timeout=300)
    err = p.stderr.decode(errors="replace")
    want = "index event block %d is corrupt" % k
    if p.returncode != 1 or want not in err:
        fail("block %d damaged at its end: dump --events exit %d, %r (want %r)" % (
            k, p.returncode, err, want))
    # The intact index's dump (hundreds of MB: only its head is read, then it is stopped) must
    # go on from exactly there with block 1's first event.
    with subprocess.Popen([tdx, "dump", "--events", good], stdout=subprocess.PIPE) as q:
        head = q.stdout.read(len(p.stdout) + 2)
        q.kill()
    got = len(re.findall(rb"^M=", p.stdout, re.M))
    if got != n0 or head != p.stdout + b"M=":
        fail("block %d damaged at its end: dump --events printed %d events, want block 0's %d "
             "and none of block %d's" % (k, got, n0, k))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    tdx, tracegen = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="tdxv-")
    try:
        trace = os.path.join(tmp, "t.trace")
        run([tracegen, "--quiet", "--size", "3MiB", "--seed", "5", "-o", trace], ok=True)
        good = os.path.join(tmp, "good.tidx")
        run([tdx, "build", "--quiet", trace, "-o", good], ok=True)
        sx = Sealed.load(good)
        if sx is None:
            print("SKIP: libxxhash.so.0 not found (needed to re-seal the checksums)")
            sys.exit(SKIP)
        data, secs, xxh, reseal = bytearray(sx.data), sx.secs, sx.xxh, sx.reseal
        nblocks = secs[EVDIR][2] // D_SIZE
        if nblocks < 6:
            fail("the generated trace has %d event blocks; the check needs at least 6" % nblocks)

        def verify(path, jobs):
            p = run([tdx, "info", "--verify", "-j", jobs, path], timeout=300)
            return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

        # Intact: every -j passes with the same description (a thread's event counts lost or
        # counted twice would fail the recount against the GOROUTINES, PROCS and THREADS tables).
        outs = set()
        for j in (1, 2, 3, 64):
            rc, out, err = verify(good, j)
            if rc != 0:
                fail("info --verify -j %d of the intact index: exit %d\n%s" % (j, rc, err[:2000]))
            outs.add(out)
        if len(outs) != 1:
            fail("info --verify describes the intact index differently for different -j")

        # Damaged blocks: each one's checksum in EVDIR no longer matches its bytes (EVDIR itself
        # re-sealed, so only the block check finds it). The error names the lowest one.
        evdir = secs[EVDIR][1]
        last = nblocks - 1
        bad = os.path.join(tmp, "bad.tidx")
        runs = 3 if SANITIZE else 6
        for blocks in ([last], [0, last], [nblocks // 3, 2 * nblocks // 3], [2, 3, last]):
            b = bytearray(data)
            for k in blocks:
                b[evdir + k * D_SIZE + D_HASH] ^= 0x01
            reseal(b, EVDIR)
            open(bad, "wb").write(b)
            k = min(blocks)
            block_off = secs[EVENTS][1] + struct.unpack_from("<Q", b, evdir + k * D_SIZE)[0]
            want = "offset %d: index event block %d is corrupt" % (block_off, k)
            for j in [1, 2, 3] + [2] * runs:
                rc, _, err = verify(bad, j)
                if rc != 1 or want not in err or "rebuild" not in err:
                    fail("blocks %s damaged, -j %d: exit %d, %r (want %r)" % (blocks, j, rc, err,
                                                                            want))

        # A view's final state altered under re-sealed checksums, and a block damaged too: the
        # views are checked first, whatever the threads found meanwhile.
        d = secs[VIEW_PROC][1]
        viewdata = secs[VIEWDATA][1]
        ref = d + 64
        boff, blen = struct.unpack_from("<QQ", data, ref)
        b = bytearray(data)
        b[viewdata + boff] ^= 0x20  # its magic
        struct.pack_into("<Q", b, ref + 16, xxh(b[viewdata + boff:viewdata + boff + blen]))
        reseal(b, VIEWDATA)
        reseal(b, VIEW_PROC)
        b[evdir + D_HASH] ^= 0x01
        reseal(b, EVDIR)
        open(bad, "wb").write(b)
        for j in (1, 2, 3):
            rc, _, err = verify(bad, j)
            if rc != 1 or "VIEWDATA is corrupt" not in err:
                fail("a view state and block 0 damaged, -j %d: exit %d, %r" % (j, rc, err))

        check_directory(tdx, data, secs, reseal, bad, verify)
        check_block_end(tdx, data, secs, xxh, reseal, bad, good)

        rc, _, err = verify(good, 0)
        if rc != 2 or "-j" not in err:
            fail("info --verify -j 0: exit %d, %r (want a usage error)" % (rc, err))
        print("info --verify: %d blocks; intact and damaged indexes give the same answer for "
              "-j 1, 2 and 3" % nblocks)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
