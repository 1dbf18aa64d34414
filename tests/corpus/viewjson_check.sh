#!/bin/sh
# viewjson_check.sh: compares `traceidx viewjson` with the JSON goldens of the shared corpus
# (full, mid, thread, goroutine-G views; ranges; the synthetic split trace's first and last range).
# usage: viewjson_check.sh TRACEIDX [TESTDATA] [--no-synth]
set -u
T=${1:?usage: viewjson_check.sh TRACEIDX [TESTDATA] [--no-synth]}
D=${2:-$(dirname "$0")/../../../shared/testdata}
SYNTH=1
[ "${3:-}" = "--no-synth" ] && SYNTH=0
DIFF="python3 $D/../tools/viewer-json-diff.py -q"
[ -f "$D/../tools/viewer-json-diff.py" ] || DIFF="python3 /work/shared/tools/viewer-json-diff.py -q"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
pass=0

check() { # name golden actual
    if out=$($DIFF "$2" "$3" 2>&1); then
        pass=$((pass + 1))
        echo "ok   $1"
    else
        fail=$((fail + 1))
        echo "FAIL $1: $out"
    fi
}

param() { # params.json file key -> value of query.key
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]['query'][sys.argv[3]])" "$@"
}

for dir in "$D"/golden/go12*; do
    name=$(basename "$dir")
    [ -f "$dir/full.json" ] || continue
    if [ "$name" = go122 ]; then trace=$D/go-tests-bin/go122.trace; else trace=$D/go-tests-bin/$name.trace; fi
    TZ=UTC "$T" viewjson --quiet "$trace" >"$TMP/full.json" && check "$name full" "$dir/full.json" "$TMP/full.json"
    s=$(param "$dir/params.json" mid.json start)
    e=$(param "$dir/params.json" mid.json end)
    "$T" viewjson --quiet --start "$s" --end "$e" "$trace" >"$TMP/mid.json" && check "$name mid" "$dir/mid.json" "$TMP/mid.json"
    "$T" viewjson --quiet --view thread "$trace" >"$TMP/thread.json" && check "$name thread" "$dir/thread.json" "$TMP/thread.json"
    for gf in "$dir"/goroutine-*.json; do
        [ -f "$gf" ] || continue
        g=$(basename "$gf" .json | sed 's/goroutine-//')
        "$T" viewjson --quiet --goroutine "$g" "$trace" >"$TMP/g.json" && check "$name goroutine-$g" "$gf" "$TMP/g.json"
    done
    "$T" viewjson --quiet --ranges "$trace" >"$TMP/ranges.json"
    if cmp -s "$TMP/ranges.json" "$dir/ranges.json"; then pass=$((pass + 1)); echo "ok   $name ranges"
    else fail=$((fail + 1)); echo "FAIL $name ranges"; fi
done

if [ $SYNTH = 1 ] && [ -f "$D/synth/synth-split.trace" ]; then
    dir=$D/golden/synth-split
    trace=$D/synth/synth-split.trace
    "$T" viewjson --quiet --ranges "$trace" >"$TMP/ranges.json"
    if python3 - "$TMP/ranges.json" "$dir/ranges.json" "$dir/params.json" <<'EOF'
import json, sys
got, want, params = (json.load(open(p)) for p in sys.argv[1:4])
ends = params["ranges.json"]["last_range_endTime_observed"]
ok = len(got) == len(want)
for i, (g, w) in enumerate(zip(got, want)):
    for k in ("start", "end", "startTime"):
        ok &= g[k] == w[k]
    if i < len(want) - 1:
        ok &= g["endTime"] == w["endTime"] and g["name"] == w["name"]
    else:
        ok &= g["endTime"] in ends and g["name"].split("-")[0] == w["name"].split("-")[0]
print(json.dumps(got))
sys.exit(0 if ok else 1)
EOF
    then pass=$((pass + 1)); echo "ok   synth-split ranges"
    else fail=$((fail + 1)); echo "FAIL synth-split ranges"; fi
    for r in range0 range2; do
        s=$(param "$dir/params.json" "$r.json.gz" start)
        e=$(param "$dir/params.json" "$r.json.gz" end)
        "$T" viewjson --quiet --start "$s" --end "$e" "$trace" >"$TMP/$r.json" &&
            check "synth-split $r" "$dir/$r.json.gz" "$TMP/$r.json"
    done
fi
echo "viewjson goldens: $pass passed, $fail failed"
[ $fail = 0 ]
