#!/usr/bin/env python3
"""`traceidx tasks` (go tool trace's user task pages) end to end, on the real binary.

- testdata/tasks/basic.test: the types, counts, histogram buckets and each task's start and
  duration against values worked out by hand from its events;
- Go's traces with tasks (the parser's own event lists, events.txt of the goldens): every task
  Go's summary would hold (each id a task, region or log event names), its type, and its start
  and end as the parser gives them, against `tasks --json` and `tasks --type T --json`;
- a trace given instead of its index, a spill budget of 1 byte, and the command line's errors.

usage: tasks_test.py TRACEIDX REPO_TESTDATA
"""
import json
import math
import os
import re
import shutil
import sys
import tempfile

from common import TESTDATA, fail, refuses_garbage, run

TDX, OURS = sys.argv[1], sys.argv[2]
NO_TASK = (1 << 64) - 1
LOG_DIV = math.log(math.pow(10, 1.0 / 5))


def tasks(*args):
    return json.loads(run([TDX, "tasks", "--json"] + list(args), ok=True).stdout)


def bucket(d):
    return int(math.log(d) / LOG_DIV) if d > 0 else 0


def bucket_min(b):
    return int(math.exp(b * LOG_DIV))


def expected(ts):
    """tasks {id: (type, start or None, end or None)} and the trace's first and end times: what
    `tasks --json` and each `--type T --json` should say (Go's TimeHistogram, its quirk that a
    sample moves the smallest bucket while the largest is 0 included)."""
    t, t0, tend = ts
    types = {}
    for tid, (name, a, b) in t.items():
        x = types.setdefault(name, {"count": 0, "complete": 0, "h": {}, "min": 0, "max": 0,
                                    "tasks": []})
        x["count"] += 1
        complete = a is not None and b is not None
        start = a if a is not None else t0
        dur = (b if b is not None else tend) - start
        x["tasks"].append({"id": tid, "start_ns": start - t0, "duration_ns": dur,
                           "complete": complete})
        if complete:
            x["complete"] += 1
            k = bucket(dur)
            x["h"][k] = x["h"].get(k, 0) + 1
            if k < x["min"] or x["max"] == 0:
                x["min"] = k
            x["max"] = max(x["max"], k)
    table = {"tasks": len(t), "types": []}
    for name in sorted(types, key=lambda s: s.encode()):
        x = types[name]
        hist = [{"min_ns": bucket_min(k), "max_ns": bucket_min(k + 1), "count": x["h"].get(k, 0)}
                for k in range(x["min"], x["max"] + 1)] if x["complete"] else []
        table["types"].append({"type": name, "count": x["count"], "complete": x["complete"],
                               "histogram": hist})
    lists = {name: {"type": name, "count": x["count"], "complete": x["complete"],
                    "tasks": sorted(x["tasks"], key=lambda r: (r["duration_ns"], r["id"]))}
             for name, x in types.items()}
    return table, lists


def check(label, idx, ts):
    table, lists = expected(ts)
    got = tasks(idx)
    if got != table:
        fail("%s: tasks --json:\n%s\nwanted:\n%s" % (label, got, table))
    for name, want in lists.items():
        got = tasks(idx, "--type", name)
        if got != want:
            fail("%s: tasks --type %r --json:\n%s\nwanted:\n%s" % (label, name, got, want))
        if tasks(idx, "--type", name, "--spill-budget", "1") != want:
            fail("%s: tasks --type %r with a spill budget of 1 byte differs" % (label, name))


EVENT = re.compile(r'^M=\S+ P=\S+ G=\S+ (\w+) Time=(-?\d+)(.*)$')


def from_events(path):
    """Go's summary's tasks, from the parser's event list (go tool trace -d=parsed)."""
    t, t0, tend = {}, None, None

    def task(i):
        return t.setdefault(i, ["", None, None])

    import gzip
    if not os.path.exists(path):
        path += ".gz"
    with (gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz")
          else open(path, encoding="utf-8")) as f:
        for line in f:
            m = EVENT.match(line)
            if not m:
                continue
            kind, time, rest = m.group(1), int(m.group(2)), m.group(3)
            if t0 is None:
                t0 = time
            if kind == "Sync":
                tend = time
            elif kind in ("TaskBegin", "TaskEnd"):
                i = int(re.search(r" ID=(\d+)", rest).group(1))
                parent = int(re.search(r" Parent=(\d+)", rest).group(1))
                x = task(i)
                x[0] = json.loads(re.search(r' Type=(".*")$', rest).group(1))
                x[1 if kind == "TaskBegin" else 2] = time
                if parent != NO_TASK:
                    task(parent)
            elif kind in ("RegionBegin", "RegionEnd", "Log"):
                task(int(re.search(r" Task=(\d+)", rest).group(1)))
    return {i: tuple(x) for i, x in t.items()}, t0, tend


def check_basic(tmp):
    """testdata/tasks/basic.test, by hand: its first event (a Sync) is at 1 ns, its last (the
    closing Sync) at 23451 ns."""
    trace = os.path.join(OURS, "tasks", "basic.test")
    idx = os.path.join(tmp, "basic.tidx")
    run([TDX, "build", trace, "-o", idx], ok=True)
    by_hand = ({1: ("req", 1100, 2900), 2: ("req", 1200, 23250), 3: ("req", 3000, None),
                4: ("db", 3100, 3250), 0: ("", None, None), 7: ("", None, None)}, 1, 23451)
    check("basic", idx, by_hand)
    # the buckets by hand: 150 ns in bucket 10 (from 100 ns), 1800 in 16, 22050 in 21
    got = tasks(idx)["types"]
    if [h["count"] for h in got[2]["histogram"]] != [1, 0, 0, 0, 0, 1] or \
            got[1]["histogram"][0]["min_ns"] != 100 or got[1]["histogram"][0]["max_ns"] != 158:
        fail("basic: histograms %s" % got)
    lst = tasks(idx, "--type", "req")["tasks"]
    if [(x["id"], x["start_ns"], x["duration_ns"]) for x in lst] != \
            [(1, 1099, 1800), (3, 2999, 20451), (2, 1199, 22050)]:
        fail("basic: req's tasks %s" % lst)
    text = run([TDX, "tasks", idx], ok=True).stdout.decode()
    for want in ['6 tasks of 3 types', 'Task type "req": 3 tasks, 2 complete',
                 'Task type "": 2 tasks, 0 complete', '  100ns  ###', '  158ns\n']:
        if want not in text:
            fail("basic: tasks' text lacks %r:\n%s" % (want, text))
    text = run([TDX, "tasks", idx, "--type", "req"], ok=True).stdout.decode()
    if not re.search(r"0\.000002999s +20\.451µs +3  incomplete\n", text):
        fail("basic: tasks --type req's text:\n%s" % text)
    # its columns line up on a terminal ("µs" is one column, two bytes)
    rows = [r.rstrip() for r in text.split("\n\n")[1].splitlines()]
    if len({len(r.replace("incomplete", "complete")) for r in rows[1:]}) != 1:
        fail("basic: tasks --type's columns do not line up:\n%s" % text)
    # a trace is answered from the index beside it, and only then
    beside = os.path.join(tmp, "beside.test")
    shutil.copyfile(trace, beside)
    p = run([TDX, "tasks", beside])
    if p.returncode != 1 or b"traceidx build" not in p.stderr:
        fail("tasks of a trace with no index: exit %d\n%s" % (p.returncode, p.stderr))
    run([TDX, "build", beside], ok=True)
    if tasks(beside) != tasks(idx):
        fail("tasks TRACE differs from tasks INDEX")


def check_cli(tmp):
    idx = os.path.join(tmp, "basic.tidx")
    if "usage: traceidx tasks" not in run([TDX, "tasks", "--help"], ok=True).stdout.decode():
        fail("tasks --help")
    for args in [[], [idx, "--type"], [idx, "--frobnicate"], [idx, idx],
                 [idx, "--spill-budget", "x"]]:
        p = run([TDX, "tasks"] + args)
        if p.returncode != 2 or not p.stderr:
            fail("tasks %s: exit %d, wanted a usage error (2)" % (args, p.returncode))
    p = run([TDX, "tasks", idx, "--type", "nosuch"])
    if p.returncode != 1 or b'no task of type "nosuch"' not in p.stderr or p.stdout:
        fail("tasks --type of no type: exit %d\n%s" % (p.returncode, p.stderr))
    refuses_garbage(TDX, "tasks", tmp)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_basic(tmp)
        check_cli(tmp)
        golden = os.path.join(TESTDATA, "golden")
        if not os.path.isdir(golden):
            print("SKIP: %s not found: Go's traces with tasks not checked" % golden)
        else:
            n = 0
            for name, trace in [
                    ("go122-annotations", "go-tests-bin/go122-annotations.trace"),
                    ("go122-annotations-stress", "go-tests-bin/go122-annotations-stress.trace"),
                    ("go122-task-across-generations",
                     "go-tests-bin/go122-task-across-generations.trace"),
                    ("go119-annotations", "v1/go119-annotations.trace")]:
                idx = os.path.join(tmp, name + ".tidx")
                run([TDX, "build", os.path.join(TESTDATA, trace), "-o", idx], ok=True)
                ts = from_events(os.path.join(golden, name, "events.txt"))
                if not ts[0]:
                    fail("%s: no task in Go's events" % name)
                check(name, idx, ts)
                n += 1
            print("%d traces of Go's with tasks checked" % n)
    print("ok")


main()
