#!/usr/bin/env python3
"""`traceidx info --verify` with 1, 2 and 3 threads (the real binary, a generated trace): an intact
index passes and its event counts add up across the threads; damaged event blocks are reported
as the lowest-numbered one, at its offset, the same for every -j and every run; a damaged view
state is reported before any block, as with one thread.

usage: verify_test.py TRACEIDX TRACEGEN
"""
import ctypes
import os
import shutil
import struct
import sys
import tempfile

from common import SANITIZE, SKIP, fail, run

EVDIR, EVENTS, VIEW_PROC, VIEWDATA = 6, 7, 14, 17
D_SIZE, D_HASH = 48, 40


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    tdx, tracegen = sys.argv[1], sys.argv[2]
    try:
        xx = ctypes.CDLL("libxxhash.so.0")
    except OSError:
        print("SKIP: libxxhash.so.0 not found (needed to re-seal the checksums)")
        sys.exit(SKIP)
    xx.XXH3_64bits.restype = ctypes.c_uint64
    xx.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]

    def xxh(b):
        return xx.XXH3_64bits(bytes(b), len(b))

    tmp = tempfile.mkdtemp(prefix="tdxv-")
    try:
        trace = os.path.join(tmp, "t.trace")
        run([tracegen, "--quiet", "--size", "3MiB", "--seed", "5", "-o", trace], ok=True)
        good = os.path.join(tmp, "good.tidx")
        run([tdx, "build", "--quiet", trace, "-o", good], ok=True)
        data = bytearray(open(good, "rb").read())
        toff, tcount = struct.unpack_from("<QI", data, 24)
        secs = {}
        for i in range(tcount):
            kind, _, off, length, _ = struct.unpack_from("<IIQQQ", data, toff + 32 * i)
            secs[kind] = (i, off, length)
        nblocks = secs[EVDIR][2] // D_SIZE
        if nblocks < 6:
            fail("the generated trace has %d event blocks; the check needs at least 6" % nblocks)

        def reseal(b, kind):
            i, off, length = secs[kind]
            struct.pack_into("<Q", b, toff + 32 * i + 24, xxh(b[off:off + length]))
            struct.pack_into("<Q", b, 80, xxh(b[toff:toff + 32 * tcount]))  # the section table's
            struct.pack_into("<Q", b, 120, xxh(b[0:120]))  # the header's

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

        rc, _, err = verify(good, 0)
        if rc != 2 or "-j" not in err:
            fail("info --verify -j 0: exit %d, %r (want a usage error)" % (rc, err))
        print("info --verify: %d blocks; intact and damaged indexes give the same answer for "
              "-j 1, 2 and 3" % nblocks)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
