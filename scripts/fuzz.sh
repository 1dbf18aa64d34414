#!/bin/sh
# make fuzz: runs the libFuzzer targets of tests/fuzz for SECONDS each, side by side, seeded with
# our own traces (testdata/), the indexes of them, and Go's corpus read in place when it is
# there. Corpora and findings stay in BUILD (git-ignored). Exit status 1 when a target failed.
# usage: scripts/fuzz.sh BUILD SECONDS
set -u
B=$1 SECS=$2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${TRACEIDX_TESTDATA:-$ROOT/../shared/testdata}
C=$B/fuzz-corpus F=$B/fuzz-findings
mkdir -p "$C/trace" "$C/index" "$F/trace" "$F/index" "$B/fuzz-tmp"
for f in "$ROOT"/testdata/*/*.test "$ROOT"/testdata/regress/trace/*; do
    [ -f "$f" ] && cp "$f" "$C/trace/"
done
for f in "$C"/trace/*; do
    "$B/tools/traceidx" build --quiet --partial -j 1 -o "$C/index/$(basename "$f").tidx" "$f" \
        >/dev/null 2>&1
done
[ -d "$ROOT/testdata/regress/index" ] && cp "$ROOT"/testdata/regress/index/* "$C/index/" 2>/dev/null
extra=""
for d in go-tests go-tests-bin fuzz seed; do
    [ -d "$SHARED/$d" ] && extra="$extra $SHARED/$d"
done
[ -n "$extra" ] || echo "fuzz: Go's corpus not found at $SHARED: seeding with our traces only"
# Indexes of Go's traces seed the index target too, from a directory outside the project that
# goes when the run ends (they are made from ../shared, which stays where it is).
ixseeds=$(mktemp -d "${TMPDIR:-/tmp}/traceidx-fuzz-seeds.XXXXXX")
trap 'rm -rf "$ixseeds"' EXIT
if [ -d "$SHARED/go-tests-bin" ]; then
    for f in "$SHARED"/go-tests-bin/*.trace; do
        "$B/tools/traceidx" build --quiet --partial -j 1 -o "$ixseeds/$(basename "$f").tidx" "$f" \
            >/dev/null 2>&1
    done
fi
# One core each; a finding stops its target (its input is in fuzz-findings/TARGET/).
run() {
    t=$1
    shift
    TMPDIR=$B/fuzz-tmp "$B/tests/fuzz_$t" -max_total_time="$SECS" -max_len=65536 -timeout=30 \
        -rss_limit_mb=4096 -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$F/$t/" \
        "$C/$t" "$@" >"$B/fuzz-$t.log" 2>&1
    echo $? >"$B/fuzz-$t.rc"
}
echo "fuzz: fuzz_trace and fuzz_index for ${SECS}s each (logs: $B/fuzz-*.log)"
run trace -dict="$ROOT/tests/fuzz/trace.dict" $extra &
run index "$ixseeds" &
wait
rc=0
for t in trace index; do
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$B/fuzz-$t.log")
    cov=$(grep -o 'cov: [0-9]*' "$B/fuzz-$t.log" | tail -1)
    echo "fuzz_$t: ${execs:-?} inputs run, ${cov:-cov: ?}, corpus $(ls "$C/$t" | wc -l) files"
    if [ "$(cat "$B/fuzz-$t.rc")" = 0 ]; then
        echo "  no findings"
    else
        rc=1
        grep -E 'PROPERTY BROKEN|ERROR: |runtime error|SUMMARY' "$B/fuzz-$t.log" | head -5
        for a in "$F/$t"/*; do
            [ -f "$a" ] && echo "  finding: $a (rerun: $B/tests/replay_$t $a)"
        done
    fi
done
exit $rc
