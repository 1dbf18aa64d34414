#!/bin/sh
# End-to-end checks of the traceidx command line: help, usage errors, bad input, file handling.
# usage: cli_test.sh TRACEIDX TESTDATA_DIR
set -u
T=$1
case $T in /*) ;; *) T=$(pwd)/$T ;; esac # (one check runs in another directory)
D=$2
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect STATUS CMD...: runs CMD, checks the exit status, keeps stdout/stderr in $W/out, $W/err.
expect() {
    want=$1
    shift
    "$@" >"$W/out" 2>"$W/err"
    got=$?
    [ "$got" = "$want" ] || fail "exit $got (want $want): $* :: $(head -c 300 "$W/err")"
}
has() { grep -q -- "$2" "$W/$1" || fail "$1 lacks \"$2\": $(head -c 300 "$W/$1")"; }

expect 0 "$T" --help
has out "usage: traceidx"
has out "Go 1.11-1.21" # old traces are read too (core/v1_*.c)
for c in validate dump text2bin build info; do
    expect 0 "$T" "$c" --help
    has out "usage: traceidx $c"
done
expect 2 "$T"
expect 2 "$T" frobnicate
has err "unknown command"
expect 2 "$T" validate
# "help CMD" is "CMD --help"
for c in build query info; do
    expect 0 "$T" help "$c"
    has out "usage: traceidx $c "
done
expect 2 "$T" help frobnicate
has err "unknown command"
expect 2 "$T" validate -j 0 x
expect 2 "$T" dump --bogus x
expect 2 "$T" text2bin onlyin
for v in 0 -5 12x ""; do
    expect 2 "$T" build --sort-budget "$v" x
    has err "sort-budget needs a positive byte count"
    expect 2 "$T" build --checkpoint-every "$v" x
    has err "checkpoint-every needs a positive event count"
    expect 2 "$T" build --string-budget "$v" x
    has err "string-budget needs a positive byte count"
done
# Byte counts take k, M and G (powers of 1024) but nothing else.
for v in 4.5M 64kk 1T 12Bk 17179869184G k; do
    expect 2 "$T" build --string-budget "$v" x
    has err "string-budget needs a positive byte count"
    expect 2 "$T" build --sort-budget "$v" x
    has err "sort-budget needs a positive byte count"
done

# Bad input: one line naming the file, the offset and the cause; exit 1.
expect 1 "$T" validate "$W/missing"
has err "traceidx: $W/missing: cannot open"
printf 'hello, not a trace at all\n' >"$W/garbage"
expect 1 "$T" validate "$W/garbage"
has err "offset 0: bad file format: not a Go execution trace?"
printf 'go 1.24 trace\0\0\0' >"$W/v24"
# dump's text form is Go 1.22+'s: an old trace is pointed to dump --events (it printed the
# header, then "invalid event type").
printf 'go 1.19 trace\0\0\0\0\0' >"$W/v19"
expect 1 "$T" dump "$W/v19"
has err "traceidx: $W/v19: a Go 1.19 trace: dump prints the wire events of Go 1.22 and later traces only; dump --events reads this one"
[ -s "$W/out" ] && fail "dump of an old trace printed: $(head -c 100 "$W/out")"
expect 1 "$T" validate "$W/v24"
has err "unknown or unsupported trace version go 1.24"
mkdir "$W/dir"
expect 1 "$T" validate "$W/dir"
has err "not a regular file"
# A FIFO with no writer is refused at once by every command that reads a file (opening it for
# reading used to wait for a writer forever), and build will not write its index over one.
mkfifo "$W/fifo"
for c in validate dump "dump --events" viewjson build info "info --verify" query ranges; do
    # shellcheck disable=SC2086 # $c holds a command and its option
    expect 1 timeout 20 "$T" $c "$W/fifo"
    has err "traceidx: $W/fifo: not a regular file"
done
expect 1 timeout 20 "$T" text2bin "$W/fifo" -o "$W/fifo.trace"
has err "not a regular file"

# A valid trace, then the same trace truncated inside its last generation.
good="$D/edge/tasks-across-generations.test"
expect 0 "$T" text2bin "$good" -o "$W/good.trace"
[ -z "$(ls "$W" | grep '\.tmp\.')" ] || fail "text2bin left a temporary file"
expect 0 "$T" validate "$W/good.trace"
has out "valid go 1.22 trace: 2 generations, 10 events"
expect 1 timeout 20 "$T" build --quiet "$W/good.trace" -o "$W/fifo"
has err "$W/fifo: exists and is not a traceidx index; refusing to overwrite it"
# An empty -o is a usage error, and -o a directory fails before any work (query and text2bin
# used to fail only at the final rename; build refuses it as not an index).
for c in build query text2bin; do
    expect 2 "$T" $c "$W/good.trace" -o ""
    has err "\-o needs a file name"
done
mkdir "$W/outdir"
expect 1 "$T" text2bin "$good" -o "$W/outdir"
has err "traceidx: $W/outdir: is a directory, not a file to write"
size=$(wc -c <"$W/good.trace")
head -c $((size - 7)) "$W/good.trace" >"$W/cut.trace"
expect 1 "$T" validate "$W/cut.trace"
has err "offset [0-9]*: "
has err "usable before the error: 2 generations, 10 events, the first [0-9]* of $((size - 7)) bytes"
expect 1 "$T" dump --events "$W/cut.trace"
has out "^ERROR: "

# A frame's function name with a NUL byte in it is printed whole, as Go's %s prints it (printf's
# %.*s stopped at the NUL). The string grows by a byte, and so does the batch that holds it.
sed 's/data="main.main"/data="main.ma\\x00in"/; s/time=0 size=246/time=0 size=247/' \
    "$D/pprof/basic.test" >"$W/nul.test"
expect 0 "$T" dump --events "$W/nul.test"
tr '\000' '#' <"$W/out" >"$W/nul.txt"
grep -q "^	main.ma#in @ 0x1068$" "$W/nul.txt" || fail "a NUL in a function name: $(grep -a -m1 main.ma "$W/nul.txt")"

# A goroutine id that comes back after its goroutine ended: the build redoes its views' pass
# keeping that goroutine (the id is far above the dense id bitmap's range) and succeeds.
expect 0 "$T" build --verbose "$D/edge/goid-reused-large.test" -o "$W/reused.tidx"
has err "redone: a goroutine id was reused"
expect 0 "$T" info --verify "$W/reused.tidx"

# A proc id at Go's FakeP (1000000): valid, as for Go's parser, but the proc view has a lane for
# every id up to the largest, and its own lanes start there; build refuses it, naming the trace,
# and leaves nothing. One below is indexed.
sed -e 's/ProcStatus dt=1 p=0 /ProcStatus dt=1 p=1000000 /' -e '0,/size=20/s//size=22/' \
    "$D/edge/goswitch.test" >"$W/fakep.test"
expect 0 "$T" validate "$W/fakep.test"
expect 1 "$T" build "$W/fakep.test" -o "$W/fakep.tidx"
has err "traceidx: $W/fakep.test: proc 1000000: the proc view has a lane for every proc id"
[ -z "$(ls "$W" | grep 'fakep.tidx')" ] || fail "a refused build left a file"
sed 's/p=1000000 /p=999999 /' "$W/fakep.test" >"$W/lastp.test"
expect 0 "$T" build --quiet "$W/lastp.test" -o "$W/lastp.tidx"
expect 0 "$T" query "$W/lastp.tidx" --range 0:+1us -o "$W/lastp.json"
# An index given where a trace is read is named as one, with the commands that read it; text2bin
# used to call an index, or any garbage, "already a binary trace".
for c in validate dump viewjson build; do
    expect 1 "$T" $c "$W/lastp.tidx"
    has err "traceidx: $W/lastp.tidx: offset 0: a traceidx index, not a Go execution trace"
done
expect 1 "$T" text2bin "$W/lastp.tidx" -o "$W/x.trace"
has err "a traceidx index, not a Go execution trace (info, query, ranges and dump --events"
expect 1 "$T" text2bin "$W/garbage" -o "$W/x.trace"
has err "traceidx: $W/garbage: offset 0: bad file format: not a Go execution trace?"
expect 1 "$T" text2bin "$W/good.trace" -o "$W/x.trace"
has err "traceidx: $W/good.trace: already a binary trace"
expect 1 "$T" query "$W/lastp.tidx" --range 0:+1us -o "$W/outdir"
has err "traceidx: $W/outdir: is a directory, not a file to write"
# -o a FIFO (or a device, or /dev/stdout on a pipe) is written in place: renaming a file over it
# used to replace the FIFO (as root, /dev/null itself) with a regular file.
"$T" query "$W/lastp.tidx" -o "$W/lastp.json"
mkfifo "$W/outfifo"
# via_fifo WHAT FILE CMD...: CMD writes to the FIFO while it is read back; it must give FILE
# (the variables are not expect's: sh has no locals).
via_fifo() {
    what=$1 gives=$2
    shift 2
    timeout 20 cat "$W/outfifo" >"$W/fromfifo" &
    reader=$!
    expect 0 timeout 20 "$@"
    wait "$reader"
    [ -p "$W/outfifo" ] || fail "$what -o FIFO replaced the FIFO"
    cmp -s "$W/fromfifo" "$gives" || fail "$what -o FIFO: not what -o FILE writes"
}
via_fifo query "$W/lastp.json" "$T" query "$W/lastp.tidx" -o "$W/outfifo"
via_fifo text2bin "$W/good.trace" "$T" text2bin "$good" -o "$W/outfifo"
if mknod "$W/null" c 1 3 2>/dev/null; then # (root only)
    expect 0 "$T" query "$W/lastp.tidx" -o "$W/null"
    [ -c "$W/null" ] || fail "query -o a device replaced the device"
fi
# Output that cannot be written is a failure with its cause, for every command (info, ranges
# and --help exited 0 on a full disk; dump --events of an index printed an unset error).
if [ -w /dev/full ]; then
    for c in "info $W/lastp.tidx" "info --json $W/lastp.tidx" "ranges --json $W/lastp.tidx" \
        "dump --events $W/lastp.tidx" "query $W/lastp.tidx" "validate $W/good.trace" --help \
        "goroutines $W/lastp.tidx" "tasks $W/lastp.tidx" "tasks --json $W/lastp.tidx" \
        "pprof sched $W/lastp.tidx" "pprof sync --json $W/lastp.tidx" \
        "pprof syscall --top 5 $W/lastp.tidx" "regions $W/lastp.tidx"; do
        # shellcheck disable=SC2086 # $c holds a command and its arguments
        "$T" $c >/dev/full 2>"$W/err"
        st=$?
        [ "$st" = 1 ] || fail "$c >/dev/full: exit $st (want 1)"
        has err "write failed: No space left on device"
        grep -q "offset" "$W/err" && fail "$c >/dev/full: $(cat "$W/err")"
        grep -q ': $' "$W/err" && fail "$c >/dev/full: an empty message: $(cat "$W/err")"
    done
fi
# A symlink to a file is written through: the file is replaced, the link stays.
echo old >"$W/real.json"
ln -s real.json "$W/link.json"
expect 0 "$T" query "$W/lastp.tidx" -o "$W/link.json"
[ -L "$W/link.json" ] || fail "query -o a symlink replaced the link"
cmp -s "$W/real.json" "$W/lastp.json" || fail "query -o a symlink: the file it names was not written"
grep -q '"name":"Proc 999999"' "$W/lastp.json" || fail "no lane for proc 999999"
rm -f "$W/lastp.json"

# Text errors name the line.
printf 'Trace Go1.22\nEventBatch gen=1 m=0 time=0 size=1\nProcStatus dt=1 p=0 pstatus=1 # no\n' >"$W/bad.txt"
expect 1 "$T" text2bin "$W/bad.txt" -o "$W/bad.trace"
has err "line 3: encountered unexpected non-space at the end of an event"
[ ! -e "$W/bad.trace" ] || fail "text2bin wrote an output for bad input"
# ... and so do the reader's errors in a text trace, whose offsets are into the converted bytes:
# the GoSwitch on line 13 waits for a sequence number that never comes.
sed 's/GoSwitch dt=1 g=2 g_seq=1/GoSwitch dt=1 g=2 g_seq=5/' "$D/edge/goswitch.test" >"$W/seq.test"
for c in validate "dump --events" build; do
    # shellcheck disable=SC2086 # $c is a command and its option
    expect 1 "$T" $c "$W/seq.test"
    has err "traceidx: $W/seq.test: line 13: broken trace: failed to advance"
done
printf 'Trace Go1.22\nEventBatch gen=1 m=0 time=0 size=5\nFrequency freq=15625000\nEventBatch gen=1 m=0 time=0 size=50\nGoCreate dt=0 new_g=1 new_stack=0 stack=0\n' >"$W/short.txt"
expect 1 "$T" validate "$W/short.txt"
has err "short.txt: line 5: failed to read full batch: read 5 but wanted 50"
has err "usable before the error: 1 generation, 2 events, the text before line 4$"

# Raw dump round trip.
expect 0 "$T" dump "$W/good.trace"
cp "$W/out" "$W/good.txt"
expect 0 "$T" text2bin "$W/good.txt" -o "$W/again.trace"
cmp -s "$W/good.trace" "$W/again.trace" || fail "dump | text2bin is not the identity"

# build and info: default output name, summary line, JSON, a trace given instead of its index.
cp "$W/good.trace" "$W/svc.trace"
expect 0 "$T" build --quiet -j1 "$W/svc.trace"
has out "indexed 10 events of 2 generations into $W/svc.trace.tidx"
# A small index's size is given in kB (it read "0.0 MB").
kb=$(awk -v n="$(wc -c <"$W/svc.trace.tidx")" 'BEGIN { printf "%.1f", n / 1000 }')
has out "svc.trace.tidx: $kb kB, "
expect 0 "$T" info "$W/svc.trace.tidx"
has out "events:       10"
expect 0 "$T" info --json "$W/svc.trace"
has out '"events":10'
# info names the file it read (TRACE.tidx for a TRACE), and --json quotes it as JSON.
has out "\"index\":\"$W/svc.trace.tidx\""
expect 0 "$T" info "$W/svc.trace"
has out "^index: *$W/svc.trace.tidx "
expect 2 "$T" info -j 2 "$W/svc.trace"
has err "\-j goes with --verify"
# viewjson takes -jN as the other commands do, and query's spelling of the thread view (it gave
# the proc view for --view threads).
expect 0 "$T" viewjson --quiet --view thread "$W/svc.trace"
cp "$W/out" "$W/vthread.json"
expect 0 "$T" viewjson --quiet -j1 --view threads "$W/svc.trace"
cmp -s "$W/out" "$W/vthread.json" || fail "viewjson --view threads differs from --view thread"
expect 0 "$T" query "$W/svc.trace" --view threads
cmp -s "$W/out" "$W/vthread.json" || fail "query --view threads differs from viewjson --view thread"
cp "$W/svc.trace" "$W/we\"ird\\name.trace"
expect 0 "$T" build --quiet "$W/we\"ird\\name.trace"
expect 0 "$T" info --json "$W/we\"ird\\name.trace.tidx"
has out "\"index\":\"$W/we\\\\\"ird\\\\\\\\name.trace.tidx\""
# query -o never writes JSON over a trace or an index (it replaced them, even the index it read),
# and -o - is stdout, as for text2bin.
cp "$W/svc.trace.tidx" "$W/svc.keep"
for o in "$W/svc.trace" "$W/svc.trace.tidx"; do
    for i in "$W/svc.trace" "$W/svc.trace.tidx"; do
        expect 1 "$T" query "$i" -o "$o"
        has err "traceidx: $o: exists and is a"
        has err "refusing to overwrite it with JSON"
    done
done
cmp -s "$W/svc.trace" "$W/good.trace" || fail "query -o replaced the trace"
cmp -s "$W/svc.trace.tidx" "$W/svc.keep" || fail "query -o replaced the index"
expect 0 "$T" query "$W/svc.trace" -o -
cp "$W/out" "$W/dash.json"
expect 0 "$T" query "$W/svc.trace"
cmp -s "$W/out" "$W/dash.json" || fail "query -o - differs from stdout"
[ -e ./- ] && fail "query -o - made a file named -"
# text2bin will not write over the file it converts (through a link, either).
cp "$good" "$W/self.test"
ln -s "$W/self.test" "$W/link.test"
expect 1 "$T" text2bin "$W/self.test" -o "$W/self.test"
has err "traceidx: $W/self.test: is the file being read ($W/self.test); refusing to overwrite it"
expect 1 "$T" text2bin "$W/link.test" -o "$W/self.test"
cmp -s "$W/self.test" "$good" || fail "text2bin replaced its own input"
expect 1 "$T" info "$W/good.trace"
has err "no index beside it"
# Advice to build only where a build would work: not for a file that is no trace, nor for an
# index path that exists but cannot be read as one.
for c in info query ranges; do
    expect 1 "$T" $c "$W/garbage"
    has err "traceidx: $W/garbage: offset 0: neither a traceidx index nor a Go execution trace"
done
cp "$W/good.trace" "$W/dirbeside.trace"
mkdir "$W/dirbeside.trace.tidx"
expect 1 "$T" info "$W/dirbeside.trace"
has err "traceidx: $W/dirbeside.trace.tidx: not a regular file"
grep -q "create it" "$W/err" && fail "advice to build beside a directory: $(cat "$W/err")"
# --verbose says how long each phase took and the peak memory so far.
expect 0 "$T" build --quiet --verbose -j2 "$W/svc.trace" -o "$W/v.tidx"
has err "events ordered and encoded in"
has err "views built in"
has err "peak RSS"
# and where the CPU went: each thread's, per step all of it and its longest chain, and the
# critical path (docs/architecture.md, "Build speed"); the fields, not their values.
for j in 2 1; do
    [ $j = 1 ] && expect 0 "$T" build --quiet --verbose -j1 "$W/svc.trace" -o "$W/v.tidx"
    has err "CPU by thread: main [0-9.]* s.*; total [0-9.]* s (process [0-9.]* s)"
    has err "CPU by step, all / longest chain: events [0-9.]*/[0-9.]* s, views [0-9.]*/[0-9.]* s, summary tail [0-9.]*/[0-9.]* s, rest [0-9.]*/[0-9.]* s"
    has err "chains: ordering and filling blocks [0-9.]* s, writing them [0-9.]* s, coding them [0-9.]* s (any core); proc view [0-9.]* s, thread and goroutine views [0-9.]* s, Go's summary [0-9.]* s, goroutine statistics [0-9.]* s, decoding [0-9.]* s (any core)"
    has err "critical path [0-9.]* s of [0-9.]* s CPU: at most [0-9.]*x faster than one core"
done
has err "CPU by thread: main [0-9.]* s; total" # one thread with -j1
expect 0 "$T" build --quiet --verbose -j2 "$W/svc.trace" -o "$W/v.tidx"
has err "CPU by thread: main [0-9.]* s, encoder [0-9.]* s, views #1 [0-9.]* s, summary coder [0-9.]* s; total"
# with 4, the views' four workers have a thread each (index/build/viewbuild.c)
expect 0 "$T" build --quiet --verbose -j4 "$W/svc.trace" -o "$W/v.tidx"
has err "CPU by thread: main [0-9.]* s, encoder [0-9.]* s, views #1 [0-9.]* s, views #2 [0-9.]* s, views #3 [0-9.]* s, summary coder [0-9.]* s; total"
expect 2 "$T" build
expect 2 "$T" build -j x "$W/svc.trace"
# An index has no stdout form: -o - is a usage error (it made a file named -).
here=$(pwd)
cd "$W" || fail "cd $W"
expect 2 "$T" build "$W/svc.trace" -o -
cd "$here" || fail "cd $here"
has err "an index is written to a file, not stdout"
[ -e "$W/-" ] && fail "build -o - made a file named -"

# Progress: on a terminal, a line for each of the build's three steps (so no step's ETA reads as
# the whole build's), the last one also through the string table and the sync; none otherwise.
expect 0 "$T" build -j2 "$W/svc.trace" -o "$W/p.tidx"
[ -s "$W/err" ] && fail "build wrote to a stderr that is not a terminal: $(head -c 200 "$W/err")"
if script -qec true /dev/null >/dev/null 2>&1; then
    script -qec "'$T' build -j2 '$W/svc.trace' -o '$W/p.tidx'" /dev/null >"$W/tty" 2>&1 ||
        fail "build on a terminal failed: $(head -c 300 "$W/tty")"
    for step in "build 1/3 events: 0/0 MB" "build 2/3 views: 0/0 MB" "build 3/3 summary: 100%" \
        "writing the string table, syncing" "indexed 10 events"; do
        has tty "$step"
    done
    script -qec "'$T' build --quiet -j2 '$W/svc.trace' -o '$W/p.tidx'" /dev/null >"$W/tty" 2>&1
    grep -q "build 1/3" "$W/tty" && fail "build --quiet showed progress on a terminal"
    # dump --events and viewjson show it only when their output is not the terminal too.
    for c in "dump --events" viewjson; do
        script -qec "'$T' $c '$W/svc.trace' >'$W/o'" /dev/null >"$W/tty" 2>&1
        has tty "${c%% *}: 0/0 MB"
        script -qec "'$T' $c --quiet '$W/svc.trace' >'$W/o'" /dev/null >"$W/tty" 2>&1
        grep -q "${c%% *}: " "$W/tty" && fail "$c --quiet showed progress"
        script -qec "'$T' $c '$W/svc.trace'" /dev/null >"$W/tty" 2>&1
        grep -q "${c%% *}: 0/0" "$W/tty" && fail "$c showed progress among its output on a terminal"
    done
else
    echo "SKIP: no pseudo-terminal here (script(1)): the progress lines are not checked"
fi

[ $fails = 0 ] && echo PASS
exit $((fails > 0))
