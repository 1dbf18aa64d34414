#!/bin/sh
# vmlimit_test.sh TRACEIDX TRACEGEN: `build` reserves address space in proportion to the trace, so
# it runs under `ulimit -v` of 128 MiB + 3 x the trace (the issue's 1,000,000 KB for a 256 MiB
# trace is more than that: 896 MiB); it had reserved 64 MiB + 10 x the trace for its string table
# alone. The trace's log messages grow the string table past its first mapping; the index is the
# same for -j 1 and -j 2.
set -u

TRACEIDX=$1
TRACEGEN=$2
if [ -n "${TRACEIDX_SANITIZE:-}" ]; then
    echo "SKIP: the sanitizers reserve terabytes of address space"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vmlimit-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

"$TRACEGEN" --quiet --size 8MiB --logs 8 --seed 5 -o "$tmp/t.trace" || {
    echo "FAIL: tracegen"
    exit 1
}
size=$(wc -c <"$tmp/t.trace")
limit=$(((128 * 1048576 + 3 * size) / 1024))
for j in 1 2; do
    (ulimit -v "$limit" && "$TRACEIDX" build --quiet -j $j "$tmp/t.trace" -o "$tmp/j$j.tidx" \
        >/dev/null 2>"$tmp/err") ||
        fail "build -j $j of a $size-byte trace under ulimit -v $limit: $(head -c 300 "$tmp/err")"
done
[ $fails -eq 0 ] && ! cmp -s "$tmp/j1.tidx" "$tmp/j2.tidx" && fail "the index differs by -j"
[ $fails -eq 0 ] || exit 1
echo "ok: build -j 1 and -j 2 of a $size-byte trace under ulimit -v $limit"
