"""What the corpus and end-to-end test scripts share: where the shared corpus is, ctest's skip
code, and failing, skipping and running a command the same way."""
import os
import subprocess
import sys

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests
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


def run(args, timeout=600, ok=False, env=None):
    """Runs args (TZ=UTC plus env); a timeout or a crash fails the test, and so does a non-zero
    exit when ok is set."""
    args = [str(a) for a in args]
    e = dict(os.environ, TZ="UTC")
    if env:
        e.update(env)
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired:
        fail("timed out after %ds: %s" % (timeout, " ".join(args)))
    if p.returncode < 0:
        fail("crashed with signal %d: %s\n%s" % (-p.returncode, " ".join(args),
                                                p.stderr.decode(errors="replace")))
    if ok and p.returncode != 0:
        fail("exit %d: %s\n%s" % (p.returncode, " ".join(args),
                                 p.stderr.decode(errors="replace")[:2000]))
    return p


def uvarint(b, i):
    """The unsigned LEB128 at b[i]: (value, the index after it)."""
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


class Sealed:
    """An index's bytes, its sections and XXH3 (libxxhash through ctypes), to alter an index and
    make its checksums match again: a crafted index, not a damaged one. Sealed.load returns None
    when libxxhash.so.0 cannot be loaded (the caller skips)."""

    @staticmethod
    def load(path):
        import ctypes
        try:
            xx = ctypes.CDLL("libxxhash.so.0")
        except OSError:
            return None
        xx.XXH3_64bits.restype = ctypes.c_uint64
        xx.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        xx.XXH3_64bits_withSeed.restype = ctypes.c_uint64
        xx.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
        return Sealed(xx, open(path, "rb").read())

    def __init__(self, xx, data):
        import struct
        self.xx = xx
        self.data = bytes(data)
        self.toff, self.tcount = struct.unpack_from("<QI", data, 24)
        self.secs = {}  # kind: (table row, offset, length, flags)
        for i in range(self.tcount):
            kind, flags, off, length, _ = struct.unpack_from("<IIQQQ", data, self.toff + 32 * i)
            self.secs[kind] = (i, off, length, flags)

    def xxh(self, b, seed=None):
        if seed is None:
            return self.xx.XXH3_64bits(bytes(b), len(b))
        return self.xx.XXH3_64bits_withSeed(bytes(b), len(b), seed)

    def reseal(self, b, kind):
        """After section `kind` of b changed: its hash (unless BLOCKED), the section table's and
        the header's."""
        import struct
        i, off, length, flags = self.secs[kind]
        if not flags & 1:
            struct.pack_into("<Q", b, self.toff + 32 * i + 24, self.xxh(b[off:off + length]))
        struct.pack_into("<Q", b, 80, self.xxh(b[self.toff:self.toff + 32 * self.tcount]))
        struct.pack_into("<Q", b, 120, self.xxh(b[0:120]))


def without_section(tdx, idx, kind, args, what, tmp):
    """An index from before section `kind` existed (its table row renamed to a kind no reader
    knows, which readers skip): `tdx ARGS... INDEX` says to rebuild it, naming `what`, and exits
    1. Skipped (True returned) when libxxhash cannot be loaded."""
    import struct
    sx = Sealed.load(idx)
    if sx is None:
        print("SKIP: libxxhash.so.0 not loadable: an index without section %d not made" % kind)
        return True
    b = bytearray(sx.data)
    struct.pack_into("<I", b, sx.toff + 32 * sx.secs[kind][0], 1000)
    sx.reseal(b, kind)
    old = os.path.join(tmp, "old.tidx")
    with open(old, "wb") as f:
        f.write(bytes(b))
    p = run([tdx] + args + [old])
    if p.returncode != 1 or what.encode() not in p.stderr or b"rebuild" not in p.stderr or \
            p.stdout:
        fail("%s of an index without section %d: exit %d\n%s" % (args, kind, p.returncode,
                                                               p.stderr))
    if run([tdx, "info", "--verify", old]).returncode != 0:
        fail("an index without section %d does not verify" % kind)
    return False


def refuses_garbage(tdx, command, tmp):
    """`tdx command FILE` of a file that is neither a trace nor an index: exit 1, naming it
    (command: a word, or the words before FILE)."""
    bad = os.path.join(tmp, "garbage")
    with open(bad, "wb") as f:
        f.write(b"not a trace at all\n" * 10)
    p = run([tdx] + (command if isinstance(command, list) else [command]) + [bad])
    if p.returncode != 1 or bad.encode() not in p.stderr:
        fail("%s of garbage: exit %d\n%s" % (command, p.returncode, p.stderr))
