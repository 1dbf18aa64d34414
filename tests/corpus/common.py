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
