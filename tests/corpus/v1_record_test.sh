#!/bin/sh
# v1_record_test.sh TRACEIDX: records fresh old-format traces with testdata/v1prog (scheduling churn,
# blocking syscalls, loopback network waits, GC pressure, tasks/regions/logs, CPU profiling) using
# the installed Go, then checks that `traceidx validate` and `traceidx dump --events` read each one.
# Exit 77 (skip) without a Go toolchain, or when that Go writes the new format (Go >= 1.22).
set -u

TRACEIDX=${1:?usage: v1_record_test.sh TRACEIDX}
HERE=$(cd "$(dirname "$0")" && pwd)
PROG=$HERE/../../testdata/v1prog/main.go

if ! command -v go >/dev/null 2>&1; then
    echo "SKIP: go not installed"
    exit 77
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/v1record.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
# go needs a build cache; under ctest HOME may be unset or read-only.
if [ -z "${GOCACHE:-}" ] && { [ -z "${HOME:-}" ] || [ ! -w "${HOME:-/nonexistent}" ]; }; then
    export GOCACHE="$TMP/gocache"
fi
# A single-file program with no dependencies: no module set-up, no network.
export GOFLAGS= GO111MODULE=auto GOPROXY=off

fail=0
note() { echo "$*"; }
bad() {
    echo "FAIL: $*"
    fail=1
}

echo "recording with $(go version)"
if ! go run "$PROG" "$TMP" >"$TMP/list" 2>"$TMP/go.err"; then
    cat "$TMP/go.err"
    echo "FAIL: go run $PROG"
    exit 1
fi

n=0
v1=0
for f in "$TMP"/*.trace; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    name=$(basename "$f" .trace)
    hdr=$(head -c 13 "$f" | tr -d '\000')
    case $hdr in
    "go 1.11 trace" | "go 1.19 trace" | "go 1.21 trace") v1=$((v1 + 1)) ;;
    *) note "$name: header \"$hdr\" is not an old-format version" ;;
    esac

    if ! out=$("$TRACEIDX" validate --quiet -j 1 "$f" 2>&1); then
        bad "$name: validate: $out"
        continue
    fi
    echo "$out"
    events=$(echo "$out" | sed -n 's/.*trace: [0-9]* generations*, \([0-9]*\) events.*/\1/p')

    if ! TZ=UTC "$TRACEIDX" dump --events "$f" >"$TMP/$name.events" 2>"$TMP/$name.err"; then
        bad "$name: dump --events: $(cat "$TMP/$name.err")"
        continue
    fi
    lines=$(grep -c '^M=' "$TMP/$name.events")
    [ -n "$events" ] && [ "$lines" = "$events" ] ||
        bad "$name: dump printed $lines events, validate counted ${events:-?}"
    head -n 1 "$TMP/$name.events" | grep -q ' Sync Time=-1 N=1$' || bad "$name: does not start with Sync N=1"
    tail -n 1 "$TMP/$name.events" | grep -q ' Sync Time=[0-9]* N=2$' || bad "$name: does not end with Sync N=2"
    # Converted times strictly increase.
    awk -v name="$name" '
        /^M=/ {
            t = $5; sub("Time=", "", t); t += 0
            if (seen && t <= last) { printf "FAIL: %s: time %d after %d\n", name, t, last; bad = 1; exit }
            seen = 1; last = t
        }
        ' "$TMP/$name.events" | grep . && fail=1

    # Each scenario shows the behaviour it was written for.
    case $name in
    sched) want='Reason="runtime.Gosched"|Reason="sync.(*Cond).Wait"|Reason="forever"|Name="/sched/gomaxprocs:threads"' ;;
    syscall) want='Running->Syscall|Syscall->Runnable' ;;
    net) want='Reason="network"' ;;
    gc) want='Name="GC concurrent mark phase"|Name="GC incremental sweep"|Name="/gc/heap/goal:bytes"' ;;
    annotations) want=' TaskBegin | TaskEnd | RegionBegin | RegionEnd | Log ' ;;
    cpuprof) want=' StackSample ' ;;
    *) want='' ;;
    esac
    if [ -n "$want" ]; then
        echo "$want" | tr '|' '\n' | while IFS= read -r pat; do
            grep -Fq -- "$pat" "$TMP/$name.events" || echo "FAIL: $name: no event matching $pat"
        done | grep . && fail=1
    fi
done

if [ "$n" -eq 0 ]; then
    echo "FAIL: no traces were recorded"
    exit 1
fi
if [ "$v1" -eq 0 ]; then
    echo "SKIP: $(go version) writes the new trace format; no old-format trace to read"
    exit 77
fi
[ "$fail" -eq 0 ] && echo "ok: $n traces recorded and read"
exit $fail
