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

# SIGTERM the moment the temporary file appears, 20 times: the file exists before the build can
# register it for removal, and a signal arriving in between must still remove it (without
# holding the signal until then, 19 of 20 such runs left the file behind).
"$PYTHON3" - "$TRACEIDX" "$tmp" <<'PY' || fail "TERM on creation"
import os, signal, subprocess, sys
exe, d = sys.argv[1], sys.argv[2]
for i in range(20):
    for f in os.listdir(d):
        if f.startswith("t.tidx"):
            os.unlink(os.path.join(d, f))
    p = subprocess.Popen([exe, "build", "-j", "1", "--quiet", d + "/t.trace", "-o", d + "/t.tidx"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while p.poll() is None:
        if any(f.startswith("t.tidx.tmp.") for f in os.listdir(d)):
            p.send_signal(signal.SIGTERM)
            break
    rc = p.wait()
    left = sorted(f for f in os.listdir(d) if f != "t.trace")
    if rc == 0 and left == ["t.tidx"]:
        continue  # it finished first
    if rc != -signal.SIGTERM or left:
        sys.exit("FAIL: TERM on creation, run %d: exit %d, left behind: %s" % (i, rc, left))
print("ok: SIGTERM as the temporary file appears (20 runs): nothing left behind")
PY
