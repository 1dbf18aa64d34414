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

# Old-format traces (need the v1 reader): pingpong against its golden; annotations, where Go's
# generator panics, must still produce a complete document.
if [ -f "$D/v1/go119-pingpong.trace" ] && [ -f "$D/golden/go119-pingpong/full.json.gz" ]; then
    if "$T" viewjson --quiet "$D/v1/go119-pingpong.trace" >"$TMP/pp.json" 2>"$TMP/pp.err"; then
        check "go119-pingpong full" "$D/golden/go119-pingpong/full.json.gz" "$TMP/pp.json"
    else fail=$((fail + 1)); echo "FAIL go119-pingpong: $(head -c 200 "$TMP/pp.err")"; fi
fi
if [ -f "$D/v1/go119-annotations.trace" ]; then
    for v in "" "--view thread" "--goroutine 1"; do
        # shellcheck disable=SC2086
        if "$T" viewjson --quiet $v "$D/v1/go119-annotations.trace" 2>/dev/null |
            python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["traceEvents"] else 1)'
        then pass=$((pass + 1)); echo "ok   go119-annotations $v (no crash)"
        else fail=$((fail + 1)); echo "FAIL go119-annotations $v"; fi
    done
fi

# Section 8 invariants of the spec (Go's jsontrace_test.go plus the extra ones) on the seed trace.
if [ -f "$D/go-tests-bin/go122.trace" ]; then
    "$T" viewjson --quiet "$D/go-tests-bin/go122.trace" >"$TMP/f.json"
    "$T" viewjson --quiet --start 1256 --end 2511 "$D/go-tests-bin/go122.trace" >"$TMP/m.json"
    cat >"$TMP/inv.py" <<'EOF'
import json, sys, re
full_path = sys.argv[1]
raw = open(full_path, 'rb').read()
doc = json.loads(raw)
errs = []
def check(c, m):
    if not c: errs.append(m)
check(raw.startswith(b'{"displayTimeUnit":"ns"\n,"traceEvents": ['), 'prefix')
check(re.search(rb'\], "stackFrames":\{.*\}\n\}$', raw[-5000000:], re.S) is not None, 'suffix')
check(set(doc) == {'displayTimeUnit', 'traceEvents', 'stackFrames'}, 'keys')
ev = doc['traceEvents']; fr = doc['stackFrames']
# 2 exec times
def gname(n):
    p = n.split(' ', 1)
    return p[1] if len(p) == 2 and p[0].startswith('G') else None
s10 = sum(int(e.get('dur', 0)) for e in ev if gname(e.get('name', '')) == 'main.cpu10')
s20 = sum(int(e.get('dur', 0)) for e in ev if gname(e.get('name', '')) == 'main.cpu20')
check(0 < s10 < s20, 'cpu10/cpu20 %d %d' % (s10, s20))
# 3 heap
heap = [e for e in ev if e['ph'] == 'C' and e.get('name') == 'Heap']
check(any(e['args']['Allocated'] > 0 for e in heap) and any(e['args']['NextGC'] > 0 for e in heap), 'heap')
# 4,5 names
pn = {e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}
check({'STATS', 'PROCS'} <= pn, 'process names')
tn = {e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}
check({'GC', 'Network', 'Timers', 'Syscalls', 'Proc 0'} <= tn, 'thread names')
# 6 proc pairing
started = set(); tids = set()
for e in ev:
    if e.get('name') == 'proc start':
        check(e['tid'] not in started, 'started twice %r' % e); started.add(e['tid']); tids.add(e['tid'])
    elif e.get('name') == 'proc stop':
        check(e['tid'] in started, 'stop not started %r' % e); started.discard(e['tid']); tids.add(e['tid'])
check(len(tids) == 8, 'distinct proc tids %d' % len(tids))
# 7 syscalls
def root(sf):
    last = None
    while sf:
        f = fr[str(sf)]; last = f['name']; sf = f.get('parent', 0)
    return last
sys_ev = [e for e in ev if e.get('name') == 'syscall' and root(e['sf']).startswith('main.blockingSyscall:')]
check(len(sys_ev) > 1 and sum(1 for e in sys_ev if e['args']['blocked'] == 'yes') == 1, 'blocking syscall')
# 8 network
check(any(e['tid'] == 1000002 and e.get('name') == 'unblock (network)' and e['ph'] == 'I' and e.get('s') == 't' for e in ev), 'network unblock')
# additional: metadata last, fixed 12 in order
ph = [e['ph'] for e in ev]
first_m = ph.index('M')
check(all(p == 'M' for p in ph[first_m:]), 'metadata last')
meta = [(e['name'], e['pid'], e['tid'], json.dumps(e['args'], sort_keys=True)) for e in ev[first_m:]]
fixed = [m for m in meta if m[1] in (0, 1) and (m[0].startswith('process') or m[2] >= 1000000)]
want = [('process_name',1,0,'{"name": "STATS"}'),('process_sort_index',1,0,'{"sort_index": 0}'),
        ('process_name',0,0,'{"name": "PROCS"}'),('process_sort_index',0,0,'{"sort_index": 2}'),
        ('thread_name',0,1000004,'{"name": "GC"}'),('thread_sort_index',0,1000004,'{"sort_index": -6}'),
        ('thread_name',0,1000002,'{"name": "Network"}'),('thread_sort_index',0,1000002,'{"sort_index": -5}'),
        ('thread_name',0,1000001,'{"name": "Timers"}'),('thread_sort_index',0,1000001,'{"sort_index": -4}'),
        ('thread_name',0,1000003,'{"name": "Syscalls"}'),('thread_sort_index',0,1000003,'{"sort_index": -3}')]
check(fixed == want, 'fixed metadata %r' % fixed)
# frames referenced exist, parents exist
for e in ev:
    for k in ('sf', 'esf'):
        if k in e: check(str(e[k]) in fr, 'missing frame %r' % e)
for k, f in fr.items():
    if 'parent' in f: check(str(f['parent']) in fr, 'missing parent %s' % k)
# flows and async pairs
nid = 1
for i, e in enumerate(ev):
    if e['ph'] == 's':
        t = ev[i + 1]
        check(t['ph'] == 't' and t['id'] == e['id'] == nid, 'flow pair at %d' % i); nid += 1
    if e['ph'] == 'b':
        t = ev[i + 1]
        check(t['ph'] == 'e' and t['id'] == e['id'] and t.get('s') == e.get('s') and t.get('cat') == e.get('cat'), 'async pair')
# no zero/empty top-level keys other than ts pid tid
for e in ev:
    for k, v in e.items():
        if k in ('ts', 'pid', 'tid'): continue
        check(v not in (0, '', None), 'zero key %s in %r' % (k, e))
# mid consistency
if len(sys.argv) > 2:
    mid = json.loads(open(sys.argv[2]).read()); s, en = int(sys.argv[3]), int(sys.argv[4])
    opt = [e for e in ev if e['ph'] != 'M']
    mopt = [e for e in mid['traceEvents'] if e['ph'] != 'M']
    check(mopt == opt[s:en + 1], 'mid events differ from full slice')
    for k, f in mid['stackFrames'].items(): check(fr.get(k) == f, 'mid frame %s differs' % k)
print('invariants:', 'OK' if not errs else 'FAILED', len(ev), 'events')
for m in errs[:20]: print('  ', m)
sys.exit(1 if errs else 0)
EOF
    if python3 "$TMP/inv.py" "$TMP/f.json" "$TMP/m.json" 1256 2511; then pass=$((pass + 1)); echo "ok   go122 invariants"
    else fail=$((fail + 1)); echo "FAIL go122 invariants"; fi
fi

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
    "$T" viewjson --quiet --ranges-recorded "$trace" >"$TMP/ranges-rec.json"
    if cmp -s "$TMP/ranges.json" "$TMP/ranges-rec.json"; then pass=$((pass + 1)); echo "ok   synth-split ranges online = recorded"
    else fail=$((fail + 1)); echo "FAIL synth-split ranges online != recorded"; fi
    for r in range0 range2; do
        s=$(param "$dir/params.json" "$r.json.gz" start)
        e=$(param "$dir/params.json" "$r.json.gz" end)
        "$T" viewjson --quiet --start "$s" --end "$e" "$trace" >"$TMP/$r.json" &&
            check "synth-split $r" "$dir/$r.json.gz" "$TMP/$r.json"
    done
fi
echo "viewjson goldens: $pass passed, $fail failed"
[ $fail = 0 ]
