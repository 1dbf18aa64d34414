#!/bin/sh
# interrupt_test.sh TRACEIDX TRACEGEN PYTHON3: a build stopped by SIGINT or SIGTERM while it writes,
# or dying of SIGBUS or SIGSEGV (a trace truncated under its mapping, a crash), leaves neither its
# temporary file nor a target behind, and exits as killed by the signal. (Under the sanitizers,
# which handle the crash signals themselves, only SIGINT and SIGTERM.)
set -eu

TRACEIDX=$1
TRACEGEN=$2
PYTHON3=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/interrupt-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

"$TRACEGEN" --quiet --size 48MiB --seed 7 --version 25 -o "$tmp/t.trace" || fail "tracegen"

sigs="INT TERM BUS SEGV"
[ -z "${TRACEIDX_SANITIZE:-}" ] || sigs="INT TERM"
for sig in $sigs; do
    rm -f "$tmp/t.tidx"
    # (A shell starts background jobs with SIGINT ignored, which traceidx respects; a terminal's
    # Ctrl-C reaches a process whose SIGINT is at its default, as python sets it here.)
    "$PYTHON3" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$TRACEIDX" build -j 1 --quiet "$tmp/t.trace" -o "$tmp/t.tidx" >/dev/null 2>&1 &
    pid=$!
    # Signal it once its temporary file exists (it is writing), or give up after ~20 s.
    i=0
    while [ $i -lt 200 ] && ! ls "$tmp"/t.tidx.tmp.* >/dev/null 2>&1; do
        sleep 0.1
        i=$((i + 1))
    done
    ls "$tmp"/t.tidx.tmp.* >/dev/null 2>&1 || fail "$sig: no temporary file appeared"
    kill -s "$sig" "$pid"
    rc=0
    wait "$pid" || rc=$?
    left=$(ls "$tmp" | grep -v '^t\.trace$' || true)
    if [ "$rc" -eq 0 ]; then
        # It finished first: then the index is there, and nothing else.
        [ "$left" = "t.tidx" ] || fail "$sig: finished build left: $left"
        echo "note: the build finished before SIG$sig arrived"
        continue
    fi
    case $sig in
    INT) want=130 ;;
    TERM) want=143 ;;
    BUS) want=135 ;;
    SEGV) want=139 ;;
    esac
    [ "$rc" -eq "$want" ] || fail "$sig: exit status $rc, want $want"
    [ -z "$left" ] || fail "$sig: left behind: $left"
    echo "ok: SIG$sig: exit $rc, nothing left behind"
done

# SIGTERM the moment the temporary file appears, 20 times per command (and SIGBUS 10 times for
# build): the file exists before the command can register it for removal (text2bin: before the
# one call that writes and renames it returns), and a signal arriving in between must still leave
# no temporary file, and no output but a complete one. Without holding the signal until then,
# nearly every such run left the file.
"$TRACEGEN" --quiet --size 4MiB --seed 7 --version 25 -o "$tmp/s.trace" || fail "tracegen"
"$TRACEIDX" dump "$tmp/s.trace" >"$tmp/s.txt" || fail "dump"
"$TRACEIDX" text2bin "$tmp/s.txt" -o "$tmp/s.bin" || fail "text2bin"
"$PYTHON3" - "$TRACEIDX" "$tmp" "${TRACEIDX_SANITIZE:-}" <<'PY' || fail "a signal on creation"
import filecmp, os, signal, subprocess, sys
exe, d, sanitized = sys.argv[1], sys.argv[2], sys.argv[3]
def runs(name, args, out, whole=None, sig=signal.SIGTERM, n=20):
    signame = signal.Signals(sig).name
    for i in range(n):
        for f in os.listdir(d):
            if f.startswith(out):
                os.unlink(os.path.join(d, f))
        p = subprocess.Popen([exe] + args + ["-o", os.path.join(d, out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while p.poll() is None:
            if any(f.startswith(out + ".tmp.") for f in os.listdir(d)):
                p.send_signal(sig)
                break
        rc = p.wait()
        left = sorted(f for f in os.listdir(d) if f.startswith(out))
        if rc not in (0, -sig) or left not in ([], [out]):
            sys.exit("FAIL: %s: %s on creation, run %d: exit %d, left behind: %s"
                     % (name, signame, i, rc, left))
        if left and whole and not filecmp.cmp(os.path.join(d, out), whole, shallow=False):
            sys.exit("FAIL: %s: %s on creation, run %d: a partial output" % (name, signame, i))
        if left and not whole and rc != 0:
            sys.exit("FAIL: %s: %s on creation, run %d: killed, yet an output" % (name, signame, i))
    print("ok: %s: %s as the temporary file appears (%d runs): nothing left behind"
          % (name, signame, n))
runs("build", ["build", "-j", "1", "--quiet", os.path.join(d, "t.trace")], "t.tidx")
# A crash signal sent then (kill -BUS) is held too (the sanitizers keep the crash signals).
if not sanitized:
    runs("build", ["build", "-j", "1", "--quiet", os.path.join(d, "t.trace")], "t.tidx",
         sig=signal.SIGBUS, n=10)
runs("text2bin", ["text2bin", os.path.join(d, "s.txt")], "s.out", os.path.join(d, "s.bin"))
PY
