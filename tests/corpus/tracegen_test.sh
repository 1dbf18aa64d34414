#!/bin/sh
# tracegen_test.sh TRACEIDX TRACEGEN: synthetic traces of every format version must be valid,
# deterministic per seed, and ordered identically by 1 and 2 validation threads; a trace with
# thousands of goroutines per generation indexes identically with -j 1 and -j 2 and verifies, a
# small one with -j 1, 3 and 4; a
# trace of log messages indexes identically when the string lookup spills.
set -eu

TRACEIDX=$1
TRACEGEN=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tracegen-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

"$TRACEGEN" --help >/dev/null || fail "tracegen --help"
if "$TRACEGEN" --size 1MiB --version 24 -o "$tmp/x" 2>/dev/null; then
    fail "tracegen accepted --version 24"
fi

# Short generations so that even small traces have several of them (and things that span
# generation boundaries: goroutines, syscalls, tasks, regions, GC phases).
n=0
for v in 22 23 25 26; do
    for spec in "1 2MiB 25" "2 2MiB 40" "3 12MiB 150"; do
        set -- $spec
        seed=$1 size=$2 genms=$3
        f="$tmp/v$v-s$seed.trace"
        "$TRACEGEN" --quiet --size "$size" --seed "$seed" --version "$v" --gen-ms "$genms" -o "$f" ||
            fail "tracegen v$v seed $seed"
        head -c 16 "$f" | grep -q "go 1.$v trace" || fail "v$v seed $seed: header"
        out=$("$TRACEIDX" validate --quiet "$f" 2>&1) || fail "v$v seed $seed: $out"
        case $out in
        *"valid go 1.$v trace"*) ;;
        *) fail "v$v seed $seed: unexpected summary: $out" ;;
        esac
        gens=$(echo "$out" | sed -n 's/.*trace: \([0-9]*\) generation.*/\1/p')
        [ "${gens:-0}" -ge 2 ] || fail "v$v seed $seed: only ${gens:-?} generation(s): $out"
        n=$((n + 1))
    done
    # Same seed, same bytes.
    "$TRACEGEN" --quiet --size 2MiB --seed 1 --version "$v" --gen-ms 25 -o "$tmp/again.trace"
    cmp -s "$tmp/v$v-s1.trace" "$tmp/again.trace" || fail "v$v: seed 1 not deterministic"
done
cmp -s "$tmp/v25-s1.trace" "$tmp/v25-s2.trace" && fail "seeds 1 and 2 gave the same trace"

# Written directly (O_DIRECT, padded then truncated) or through the page cache where direct I/O
# is refused (tmpfs): the same bytes.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    shm=$(mktemp -d /dev/shm/tracegen-test.XXXXXX)
    "$TRACEGEN" --quiet --size 2MiB --seed 1 --version 25 --gen-ms 25 -o "$shm/t.trace" ||
        { rm -rf "$shm"; fail "tracegen into tmpfs"; }
    cmp -s "$tmp/v25-s1.trace" "$shm/t.trace" || { rm -rf "$shm"; fail "tmpfs output differs"; }
    rm -rf "$shm"
else
    echo "note: no writable /dev/shm; the page-cache fallback is not compared"
fi

# More procs than usual, and very few.
for p in 1 32; do
    "$TRACEGEN" --quiet --size 2MiB --seed 4 --procs "$p" --gen-ms 25 -o "$tmp/p$p.trace"
    out=$("$TRACEIDX" validate --quiet "$tmp/p$p.trace" 2>&1) || fail "procs $p: $out"
    n=$((n + 1))
done

# Parallel ordering must not change anything.
f="$tmp/v26-s2.trace"
"$TRACEIDX" dump --events -j 1 "$f" >"$tmp/j1.txt" || fail "dump --events -j 1"
"$TRACEIDX" dump --events -j 2 "$f" >"$tmp/j2.txt" || fail "dump --events -j 2"
cmp -s "$tmp/j1.txt" "$tmp/j2.txt" || fail "dump --events differs between -j 1 and -j 2"

# Checkpoints: a generator saved, restored and saved again every 997 events (the second save with
# the encoder the previous checkpoint left, as the build reuses its own) must give the same bytes
# each time (viewjson checks) and the same JSON as a run without them.
for f in "$tmp/v25-s2.trace" "$tmp/v22-s3.trace"; do
    "$TRACEIDX" viewjson --quiet "$f" >"$tmp/plain.json" || fail "viewjson $f"
    "$TRACEIDX" viewjson --quiet --checkpoint-every 997 "$f" >"$tmp/ck.json" 2>"$tmp/ck.err" ||
        fail "viewjson --checkpoint-every $f: $(head -c 300 "$tmp/ck.err")"
    cmp -s "$tmp/plain.json" "$tmp/ck.json" || fail "$f: checkpoints changed the JSON"
done

# Thousands of goroutines in each generation (index/build/writer.c moves a generation's goroutine
# records to an external sort once there are RES_SPILL_MIN = 4096 of them, and folds them at
# the end): `info --verify` recounts every table's events from the event blocks.
f="$tmp/many-goroutines.trace"
"$TRACEGEN" --quiet --size 32MiB --seed 7 --gen-ms 500 -o "$f" || fail "tracegen 32MiB"
"$TRACEIDX" build --quiet -j 1 "$f" -o "$tmp/g1.tidx" >/dev/null || fail "build -j 1"
"$TRACEIDX" build --quiet -j 2 "$f" -o "$tmp/g2.tidx" >/dev/null || fail "build -j 2"
cmp -s "$tmp/g1.tidx" "$tmp/g2.tidx" || fail "index differs between -j 1 and -j 2"
# The views' four workers share 1, 2, 3 or 4 threads (index/build/viewbuild.c): the same index.
f4="$tmp/small.trace"
"$TRACEGEN" --quiet --size 4MiB --seed 8 --gen-ms 100 -o "$f4" || fail "tracegen 4MiB"
for j in 1 3 4; do
    "$TRACEIDX" build --quiet -j $j "$f4" -o "$tmp/s$j.tidx" >/dev/null || fail "build -j $j"
done
for j in 3 4; do
    cmp -s "$tmp/s1.tidx" "$tmp/s$j.tidx" || fail "index differs between -j 1 and -j $j"
done
out=$("$TRACEIDX" info --verify "$tmp/g2.tidx" 2>&1) || fail "info --verify: $out"
gor=$(echo "$out" | sed -n 's/^goroutines: *\([0-9]*\).*/\1/p')
gens=$(echo "$out" | sed -n 's/^generations: *\([0-9]*\).*/\1/p')
[ "${gens:-0}" -ge 3 ] && [ "${gor:-0}" -ge $((4096 * gens)) ] ||
    fail "expected >= 3 generations of >= 4096 goroutines each: $gens generations, $gor goroutines"
# The trace's identity hashes are taken while the reader passes (core/reader.c): given the trace,
# info recomputes both (the full hash and the sampled one), query only the sampled one, and a
# byte changed in the last sample window (the file's last 4 KiB) must make the index stale.
cp "$tmp/g1.tidx" "$f.tidx"
out=$("$TRACEIDX" info "$f" 2>&1) || fail "info TRACE (-j 1 index): $out"
cp "$tmp/g2.tidx" "$f.tidx"
out=$("$TRACEIDX" query "$f" --range 0:+1us -o "$tmp/q.json" 2>&1) || fail "query TRACE: $out"
size=$(wc -c <"$f")
byte=$(dd if="$f" bs=1 skip=$((size - 100)) count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
printf "\\$(printf %o $(((byte + 1) % 256)))" | dd of="$f" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
out=$("$TRACEIDX" query "$f" --range 0:+1us -o "$tmp/q.json" 2>&1) &&
    fail "query TRACE accepted a changed trace: $out"
case $out in
*stale*contents*) ;;
*) fail "changed trace: unexpected error: $out" ;;
esac

# A chatty service's trace (a new log message in every few events: its strings grow with it).
# With the string lookup's memory cut to 64 KiB it spills to its scratch file dozens of times and
# reads recurring strings back from there: the index must not change.
f="$tmp/logs.trace"
"$TRACEGEN" --quiet --size 4MiB --seed 5 --logs 8 --gen-ms 100 -o "$f" || fail "tracegen --logs 8"
"$TRACEIDX" build --quiet -j 2 "$f" -o "$tmp/l1.tidx" >/dev/null || fail "build (logs)"
"$TRACEIDX" build --verbose -j 2 --string-budget 65536 "$f" -o "$tmp/l2.tidx" \
    >/dev/null 2>"$tmp/l2.err" || fail "build --string-budget 65536: $(cat "$tmp/l2.err")"
cmp -s "$tmp/l1.tidx" "$tmp/l2.tidx" || fail "index differs when the string lookup spills"
spills=$(sed -n 's/.*lookup spilled \([0-9]*\) time.*/\1/p' "$tmp/l2.err")
[ "${spills:-0}" -ge 5 ] || fail "expected the string lookup to spill: $(cat "$tmp/l2.err")"
# 64k and 64KiB are 65536 bytes: the same spills, the same index.
for v in 64k 64KiB; do
    "$TRACEIDX" build --verbose -j 2 --string-budget "$v" "$f" -o "$tmp/l3.tidx" \
        >/dev/null 2>"$tmp/l3.err" || fail "build --string-budget $v: $(cat "$tmp/l3.err")"
    s3=$(sed -n 's/.*lookup spilled \([0-9]*\) time.*/\1/p' "$tmp/l3.err")
    [ "$s3" = "$spills" ] || fail "--string-budget $v spilled ${s3:-?} times, 65536 spilled $spills"
    cmp -s "$tmp/l1.tidx" "$tmp/l3.tidx" || fail "index differs with --string-budget $v"
done
out=$("$TRACEIDX" info --verify "$tmp/l2.tidx" 2>&1) || fail "info --verify (logs): $out"
strings=$(echo "$out" | sed -n 's/^tables: *\([0-9]*\) strings.*/\1/p')
[ "${strings:-0}" -ge 20000 ] || fail "expected >= 20000 distinct strings: $strings"

echo "tracegen: $n traces valid, deterministic, -j 1 = -j 2; spilled goroutine records verified"
