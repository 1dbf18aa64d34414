#!/bin/sh
# partial_test.sh TRACEIDX TRACEGEN TESTDATA_DIR: a damaged trace (cut short, or failing to order
# in the middle of a generation) is an error for `build`, with a hint; `build --partial` indexes
# it as go tool trace shows it: the views up to the last Sync read, Go's summary over every event
# the parser delivered. `viewjson` computes that from the trace itself; every query of the
# partial index must give its bytes.
set -u

T=$1
TRACEGEN=$2
D=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/partial-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# same TRACE INDEX ARGS...: `query INDEX ARGS` equals `viewjson TRACE ARGS` (ARGS in viewjson's
# words, translated for query where they differ).
same() {
    trace=$1 ix=$2
    shift 2
    "$T" viewjson --quiet "$@" "$trace" >"$tmp/want.json" 2>/dev/null || fail "viewjson $* $trace"
    qa=$(echo "$*" | sed 's/--view thread/--view threads/; s/--focustask/--task/; s/--window/--range/')
    # shellcheck disable=SC2086
    "$T" query "$ix" $qa >"$tmp/got.json" || fail "query $qa $ix"
    cmp -s "$tmp/want.json" "$tmp/got.json" || fail "query $qa of $ix differs from viewjson $*"
}

# 1. A trace cut short inside a later generation.
"$TRACEGEN" --quiet --size 2MiB --seed 3 --gen-ms 25 -o "$tmp/t.trace" || fail "tracegen"
size=$(wc -c <"$tmp/t.trace")
head -c $((size * 7 / 10)) "$tmp/t.trace" >"$tmp/cut.trace"
"$T" build --quiet "$tmp/cut.trace" -o "$tmp/cut.tidx" >/dev/null 2>"$tmp/err" &&
    fail "build of a cut trace succeeded without --partial"
grep -q "offset [0-9]*: " "$tmp/err" || fail "no offset in the error: $(head -c 300 "$tmp/err")"
grep -q "build --partial" "$tmp/err" || fail "no --partial hint: $(head -c 300 "$tmp/err")"
[ -e "$tmp/cut.tidx" ] && fail "a failed build left its target"
ls "$tmp" | grep -q "cut.tidx." && fail "a failed build left a temporary file"
"$T" build --quiet --partial -j 1 "$tmp/cut.trace" -o "$tmp/cut.tidx" >/dev/null 2>"$tmp/err" ||
    fail "build --partial: $(head -c 300 "$tmp/err")"
grep -q "warning: the trace is damaged" "$tmp/err" || fail "no warning: $(head -c 300 "$tmp/err")"
# As go tool trace, it says how much the damage cost: the bytes after the last generation read.
cut=$(wc -c <"$tmp/cut.trace")
lost=$(sed -n "s/.*(lost [0-9.]*% of the trace: \([0-9]*\) of $cut bytes).*/\1/p" "$tmp/err")
[ -n "$lost" ] && [ "$lost" -gt 0 ] && [ "$lost" -lt "$cut" ] ||
    fail "loss figure: ${lost:-none} of $cut bytes: $(head -c 300 "$tmp/err")"
"$T" build --quiet --partial -j 2 "$tmp/cut.trace" -o "$tmp/cut2.tidx" >/dev/null 2>&1 ||
    fail "build --partial -j 2"
cmp -s "$tmp/cut.tidx" "$tmp/cut2.tidx" || fail "the partial index differs between -j 1 and -j 2"
out=$("$T" info --verify "$tmp/cut.tidx" 2>&1) || fail "info --verify: $out"
echo "$out" | grep -q "^partial: .*damaged at byte offset" || fail "info has no partial line: $out"
"$T" info --json "$tmp/cut.tidx" | grep -q '"partial":{"damage_offset":' || fail "info --json"
"$T" mmu --json "$tmp/cut.tidx" | grep -q '^{"curve":\[\[' || fail "mmu of a partial index"
# The warning counts both what the views show and what the index keeps (the summary line's count).
kept=$(sed -n 's/.*the index keeps all \([0-9]*\) events read before the damage$/\1/p' "$tmp/err")
"$T" info "$tmp/cut.tidx" | grep -q "^events: *$kept\$" ||
    fail "the warning's count of events kept (${kept:-none}) is not info's"
# dump --events of the index: the trace's events, then (as for the trace) an ERROR line and exit 1;
# it exited 0 and hid the damage.
"$T" dump --events "$tmp/cut.trace" >"$tmp/dt.txt" 2>/dev/null
"$T" dump --events "$tmp/cut.tidx" >"$tmp/di.txt" 2>"$tmp/di.err"
[ $? = 1 ] || fail "dump --events of a partial index: exit status not 1"
off=$(echo "$out" | sed -n 's/^partial: .*damaged at byte offset \([0-9]*\).*/\1/p')
tail -n 1 "$tmp/di.txt" | grep -q "^ERROR: the trace is damaged at byte offset $off; " ||
    fail "dump --events of a partial index: last line $(tail -n 1 "$tmp/di.txt")"
grep -q "cut.tidx: the trace is damaged at byte offset $off" "$tmp/di.err" ||
    fail "dump --events of a partial index: stderr $(head -c 300 "$tmp/di.err")"
grep -v '^ERROR: ' "$tmp/dt.txt" >"$tmp/dt.ev"
grep -v '^ERROR: ' "$tmp/di.txt" >"$tmp/di.ev"
cmp -s "$tmp/dt.ev" "$tmp/di.ev" || fail "dump --events of the partial index differs from the trace's"
same "$tmp/cut.trace" "$tmp/cut.tidx"
same "$tmp/cut.trace" "$tmp/cut.tidx" --view thread
same "$tmp/cut.trace" "$tmp/cut.tidx" --window 10000000:12000000
# Given the trace, query finds TRACE.tidx and checks it was built from these bytes: the identity
# of a damaged trace is hashed whole (the reader's own hash stopped at the damage).
"$T" build --quiet --partial "$tmp/cut.trace" >/dev/null 2>&1 || fail "build --partial (default OUT)"
"$T" query "$tmp/cut.trace" >"$tmp/got2.json" 2>"$tmp/err" || fail "query TRACE: $(head -c 300 "$tmp/err")"
"$T" query "$tmp/cut.tidx" >"$tmp/got.json" || fail "query"
cmp -s "$tmp/got.json" "$tmp/got2.json" || fail "query TRACE differs from query INDEX"
"$T" viewjson --quiet --ranges "$tmp/cut.trace" >"$tmp/want.json" 2>/dev/null
"$T" ranges --json "$tmp/cut.tidx" >"$tmp/got.json" || fail "ranges"
# (The index lists the ranges of the default proc view, as viewjson --ranges does; a trace this
# small has none, which both must say.)
[ "$(grep -o '"start"' "$tmp/want.json" | wc -l)" = "$(grep -o '"start"' "$tmp/got.json" | wc -l)" ] ||
    fail "ranges differ from viewjson --ranges"

# A partial index gone stale: the advice rebuilds it with --partial.
printf 'x' >>"$tmp/cut.trace"
"$T" query "$tmp/cut.trace" >/dev/null 2>"$tmp/err" && fail "query of a changed trace succeeded"
grep -q "traceidx build --partial " "$tmp/err" || fail "stale advice: $(head -c 300 "$tmp/err")"

# 2. The intact trace's index has no partial line.
"$T" build --quiet "$tmp/t.trace" -o "$tmp/t.tidx" >/dev/null || fail "build of the intact trace"
"$T" info "$tmp/t.tidx" | grep -q "^partial:" && fail "an intact trace's index says partial"

# 3. Damage right after the header: the parser delivers only the first Sync, and go tool trace
# shows that (an empty trace); so does the index.
head -c 16 "$tmp/t.trace" >"$tmp/head.trace"
printf '\377\377' >>"$tmp/head.trace"
"$T" build --quiet --partial "$tmp/head.trace" -o "$tmp/head.tidx" >/dev/null 2>"$tmp/err" ||
    fail "build --partial of a trace damaged after its header: $(head -c 300 "$tmp/err")"
grep -q "its views show the 1 event up to .*; the index keeps all 1 event read before the damage" \
    "$tmp/err" || fail "warning: $(head -c 300 "$tmp/err")"
same "$tmp/head.trace" "$tmp/head.tidx"

# 3b. Damage before the first Sync (Go's fuzz corpus: a batch's first timestamp): nothing to show,
# in cmd/trace's words.
fz="${TRACEIDX_TESTDATA:-$D/../../shared/testdata}/fuzz/malformed-timestamp"
if [ -f "$fz" ]; then
    "$T" build --quiet --partial "$fz" -o "$tmp/fz.tidx" >/dev/null 2>"$tmp/err" &&
        fail "build --partial of $fz succeeded"
    grep -q "failed to parse any useful part of the trace" "$tmp/err" ||
        fail "no reason: $(head -c 300 "$tmp/err")"
    [ -e "$tmp/fz.tidx" ] && fail "left an index of nothing"
else
    echo "SKIP: $fz absent (the shared corpus): damage before the first Sync not checked"
fi

# 4. An ordering error in the middle of generation 2 (our text trace): the summary has its
# events before the error (task 7 ends there), the views stop at the Sync before them.
m="$D/damaged/mid-generation.test"
if [ -f "$m" ]; then
    "$T" build --quiet "$m" -o "$tmp/m.tidx" >/dev/null 2>&1 && fail "build of $m succeeded"
    "$T" build --quiet --partial "$m" -o "$tmp/m.tidx" >/dev/null 2>&1 || fail "build --partial $m"
    "$T" info "$tmp/m.tidx" | grep -q "event 5 of 8" || fail "info: $("$T" info "$tmp/m.tidx")"
    same "$m" "$tmp/m.tidx"
    same "$m" "$tmp/m.tidx" --view thread
    same "$m" "$tmp/m.tidx" --goroutine 9
    same "$m" "$tmp/m.tidx" --taskid 7
    same "$m" "$tmp/m.tidx" --focustask 7
    grep -q '"name":"request 42"' "$tmp/got.json" || fail "task 7 missing from the focustask view"
else
    fail "missing $m"
fi

[ "$fails" -eq 0 ] || exit 1
echo "ok"
