#!/bin/sh
# fuzz.index: the index fuzz target over indexes of our own traces (testdata/), the regression
# indexes of testdata/regress/index, and 60 mutants of each (bytes changed behind checksums that
# pass: trust_all.c), as ctest runs it.
# usage: index_test.sh TRACEIDX REPLAY_INDEX TESTDATA [MUTANTS]
set -e
T=$1 R=$2 D=$3 N=${4:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/ix"
n=0
for f in "$D"/*/basic.test "$D"/edge/*.test "$D"/regress/trace/*; do
    b=$(basename "$f")
    # a damaged trace is indexed as go tool trace shows it; one that has no useful part is not
    if "$T" build --quiet --partial -j 1 -o "$tmp/ix/${b%.*}.tidx" "$f" >/dev/null 2>&1; then
        n=$((n + 1))
    fi
done
[ "$n" -ge 10 ] || { echo "FAIL: only $n of our traces indexed"; exit 1; }
# the committed regression indexes: of this format version, or they would test nothing
for f in "$D"/regress/index/*; do
    [ -f "$f" ] || continue
    if "$T" info "$f" 2>&1 >/dev/null | grep -q "format version"; then
        echo "FAIL: $f is of another index format version: remake it (testdata/regress/README.md)"
        exit 1
    fi
    cp "$f" "$tmp/ix/"
done
TMPDIR=$tmp "$R" --mutate "$N" "$tmp/ix" 2>"$tmp/log" || { tail -20 "$tmp/log"; exit 1; }
