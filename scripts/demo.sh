#!/bin/sh
# make demo: runs traceidx on traces the project makes itself and says what it did.
set -e
BUILD=${1:-build}
T="$BUILD/tools/traceidx"
OUT="$BUILD/demo"
mkdir -p "$OUT"
step() { printf '\n== %s\n$ %s\n' "$1" "$2"; }

step "Convert the hand-written text trace testdata/demo.txt to Go's binary format" \
     "traceidx text2bin testdata/demo.txt -o $OUT/demo.trace"
"$T" text2bin testdata/demo.txt -o "$OUT/demo.trace"
echo "wrote $OUT/demo.trace ($(wc -c <"$OUT/demo.trace") bytes)"

step "Validate it the way Go's parser does" "traceidx validate $OUT/demo.trace"
"$T" validate "$OUT/demo.trace"

step "Show its wire events in Go's text form (first lines)" "traceidx dump $OUT/demo.trace | head"
"$T" dump "$OUT/demo.trace" | head -n 12

step "Show the ordered events as 'go tool trace -d=parsed' prints them (first lines)" \
     "traceidx dump --events $OUT/demo.trace | head"
TZ=UTC "$T" dump --events "$OUT/demo.trace" | head -n 16

if [ -x "$BUILD/bench/tracegen" ]; then
    step "Generate a realistic 8 MiB Go 1.25 trace of a busy service" \
         "tracegen --size 8MiB --seed 1 -o $OUT/service.trace"
    "$BUILD/bench/tracegen" --size 8MiB --seed 1 -o "$OUT/service.trace"
    step "Validate it (generations ordered in parallel)" "traceidx validate -j 2 $OUT/service.trace"
    "$T" validate -j 2 "$OUT/service.trace"
fi
if "$T" --help | grep -q '^  build'; then
    step "Index it" "traceidx build $OUT/service.trace -o $OUT/service.tidx"
    "$T" build "$OUT/service.trace" -o "$OUT/service.tidx"
    step "Describe the index" "traceidx info $OUT/service.tidx"
    "$T" info "$OUT/service.tidx"
    step "Query 10 ms of it as trace-viewer JSON" \
         "traceidx query $OUT/service.tidx --range 100ms:+10ms -o $OUT/window.json"
    "$T" query "$OUT/service.tidx" --range 100ms:+10ms -o "$OUT/window.json" --verbose
    echo "wrote $OUT/window.json ($(wc -c <"$OUT/window.json") bytes); open it in chrome://tracing or Perfetto"
    step "List the ranges go tool trace would split the proc view into" "traceidx ranges $OUT/service.tidx"
    "$T" ranges "$OUT/service.tidx"
    step "Goroutine analysis: goroutines by start location (go tool trace's /goroutines page)" \
         "traceidx goroutines $OUT/service.tidx"
    "$T" goroutines "$OUT/service.tidx"
    N=$("$T" goroutines --json "$OUT/service.tidx" | sed -n 's/.*"groups": \[{"name": "\([^"]*\)".*/\1/p')
    if [ -n "$N" ]; then
        step "Where the goroutines of the busiest group spent their time (first lines)" \
             "traceidx goroutines $OUT/service.tidx --name '$N' | head"
        "$T" goroutines "$OUT/service.tidx" --name "$N" | head -n 10
    fi
    step "User tasks by type, with their durations (go tool trace's /usertasks page; first lines)" \
         "traceidx tasks $OUT/service.tidx | head -n 24"
    "$T" tasks "$OUT/service.tidx" | head -n 24
    K=$("$T" tasks "$OUT/service.tidx" --type http.request 2>/dev/null | tail -n 1 | awk '{print $3}')
    if [ -n "$K" ]; then
        step "The slowest http.request task, event by event (go tool trace's /usertask page)" \
             "traceidx tasks $OUT/service.tidx --id $K"
        "$T" tasks "$OUT/service.tidx" --id "$K"
    fi
    step "User regions by type and where they began (go tool trace's /userregions page; first lines)" \
         "traceidx regions $OUT/service.tidx | head -n 10"
    "$T" regions "$OUT/service.tidx" | head -n 10
    step "The db.Query regions that took 1ms or more, one by one: where their time went (go tool trace's /userregion page; first lines)" \
         "traceidx regions $OUT/service.tidx --type db.Query --latmin 1ms | head -n 8"
    "$T" regions "$OUT/service.tidx" --type db.Query --latmin 1ms --quiet | head -n 8
    step "Where goroutines waited on channels, selects and locks (go tool trace -pprof=sync; the top 2)" \
         "traceidx pprof sync $OUT/service.tidx --top 2 | head -n 14"
    "$T" pprof sync "$OUT/service.tidx" --top 2 | head -n 14
    step "Where the slow db.Query regions waited on the network (go tool trace's /regionio page; the top 1)" \
         "traceidx pprof net $OUT/service.tidx --region db.Query --latmin 1ms --top 1 | head -n 8"
    "$T" pprof net "$OUT/service.tidx" --region db.Query --latmin 1ms --top 1 --quiet | head -n 8
    step "The scheduler latency profile as a pprof file (go tool pprof reads it)" \
         "traceidx pprof sched $OUT/service.tidx -o $OUT/sched.pprof"
    "$T" pprof sched "$OUT/service.tidx" -o "$OUT/sched.pprof"
    echo "wrote $OUT/sched.pprof ($(wc -c <"$OUT/sched.pprof") bytes)"
    step "A longer run of the service (2 s traced), long enough for the GC to run twice" \
         "tracegen --size 40MiB --seed 1 -o $OUT/gc.trace && traceidx build $OUT/gc.trace"
    "$BUILD/bench/tracegen" --size 40MiB --seed 1 -o "$OUT/gc.trace"
    "$T" build "$OUT/gc.trace"
    step "How much of the Ps the GC left the program, at its worst, for each window size (go tool trace's /mmu page)" \
         "traceidx mmu $OUT/gc.trace.tidx"
    "$T" mmu "$OUT/gc.trace.tidx"
    step "The three worst 1ms windows, each with the query that shows it" \
         "traceidx mmu $OUT/gc.trace.tidx --window 1ms | head -n 4"
    "$T" mmu "$OUT/gc.trace.tidx" --window 1ms | head -n 4
    G=$(TZ=UTC "$T" dump --events "$OUT/service.trace" | sed -n 's/.*StateTransition.* GoID=\([0-9][0-9]*\) NotExist->Runnable.*/\1/p' | sed -n 100p)
    if [ -n "$G" ]; then
        step "Goroutine $G's view (go tool trace's goid=$G page)" \
             "traceidx query $OUT/service.tidx --goroutine $G -o $OUT/goroutine.json"
        "$T" query "$OUT/service.tidx" --goroutine "$G" -o "$OUT/goroutine.json" --verbose
        echo "wrote $OUT/goroutine.json ($(wc -c <"$OUT/goroutine.json") bytes)"
    fi
fi
printf '\nDone. Everything above was produced from files in testdata/ by the binaries in %s.\n' "$BUILD"
