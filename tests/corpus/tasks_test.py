#!/usr/bin/env python3
"""`traceidx tasks` (go tool trace's user task pages) end to end, on the real binary.

- testdata/tasks/basic.test: the types, counts, histogram buckets and each task's start and
  duration against values worked out by hand from its events;
- Go's traces with tasks (the parser's own event lists, events.txt of the goldens): every task
  Go's summary would hold (each id a task, region or log event names), its type, and its start
  and end as the parser gives them, against `tasks --json` and `tasks --type T --json`;
- `tasks --id N --json` for every task of those traces: its events (begin, end, logs, its
  regions' begins and ends), their times, gaps, goroutines and Go's descriptions, against a model
  of Go's summary and /usertask page over events.txt (below), and the text's columns;
- a 5 MiB tracegen trace: `--complete --events` (2687 tasks: more than a batch of tasks loaded
  one by one, so read by one walk over the task records), `--incomplete --events` and a
  `--logtext` of a request id, against the model over our own `dump --events`;
- a trace given instead of its index, a spill budget of 1 byte, and the command line's errors.

usage: tasks_test.py TRACEIDX REPO_TESTDATA TRACEGEN
"""
import json
import math
import os
import re
import shutil
import sys
import tempfile

from common import TESTDATA, fail, refuses_garbage, run
from goevents import parse, parse_dump, track_goroutine

TDX, OURS, TRACEGEN = sys.argv[1], sys.argv[2], sys.argv[3]
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


def is_system(name):
    return name == "" or (name != "runtime.main" and name.startswith("runtime."))


QUOTED = r'("(?:[^"\\]|\\.)*")'


def describe(ev):
    """cmd/trace's describeEvent, from the event's text (its strings as Go quoted them)."""
    if ev.goid is not None:
        return "%s -> %s" % (ev.old, ev.new)
    if ev.kind in ("RegionBegin", "RegionEnd"):
        typ = re.search(r" Type=" + QUOTED + "$", ev.rest).group(1)
        return "region %s %s" % (typ, "begin" if ev.kind == "RegionBegin" else "end")
    if ev.kind == "TaskBegin":
        m = re.search(r" ID=(\d+) Parent=(\d+) Type=" + QUOTED + "$", ev.rest)
        return "task %s (D %s, parent %s) begin" % (m.group(3), m.group(1), m.group(2))
    if ev.kind == "TaskEnd":
        return "task end"
    m = re.search(r" Category=" + QUOTED + " Message=" + QUOTED + "$", ev.rest)
    # Go's test is the wrong way round: the category shows only when it is empty
    if m.group(1) != '""':
        return "log %s" % m.group(2)
    return "log (category: ): %s" % m.group(2)


def task_events(evs):
    """{task id: the `tasks --id ID --json` Go's summary and /usertask page give}: each task's
    begin, end and logs, and each of its regions' begin and end (a region still open when its
    goroutine ends or blocks forever ends with that transition, unless the goroutine is a system
    one; a goroutine created in a region is in an unnamed one, never a task's), stably sorted
    by time."""
    t0 = evs[0].time
    tend = [e.time for e in evs if e.kind == "Sync"][-1]
    tasks, gs = {}, {}

    def task(i):
        return tasks.setdefault(i, {"start": None, "end": None, "logs": [], "regions": []})

    for ev in evs:
        if ev.goid is not None and ev.old != ev.new:
            # the unnamed region a goroutine inherits is None: never a task's
            rec, ended = track_goroutine(gs, ev, lambda e: None)
            if ended:
                if not is_system(rec["name"]):
                    for r in rec["active"]:
                        if r is not None:
                            r[1] = ev
                rec["active"] = []
        elif ev.kind in ("TaskBegin", "TaskEnd"):
            m = re.search(r" ID=(\d+) Parent=(\d+)", ev.rest)
            task(int(m.group(1)))["start" if ev.kind == "TaskBegin" else "end"] = ev
            if int(m.group(2)) != NO_TASK:
                task(int(m.group(2)))
        elif ev.kind == "Log":
            task(int(re.search(r" Task=(\d+)", ev.rest).group(1)))["logs"].append(ev)
        elif ev.kind in ("RegionBegin", "RegionEnd"):
            tid = int(re.search(r" Task=(\d+)", ev.rest).group(1))
            active = gs[ev.g]["active"] if ev.g in gs else []
            if ev.kind == "RegionBegin":
                r = [ev, None]
                active.append(r)
                task(tid)["regions"].append(r)
            elif active:
                r = active.pop()
                if r is not None:
                    r[1] = ev
            else:
                task(tid)["regions"].append([None, ev])
    out, texts = {}, {}
    for tid, x in tasks.items():
        # what Go's taskMatches looks in: the task's type, its regions' types, its logs'
        # categories and messages
        words = []
        for e in [x["start"] or x["end"]] + [a or b for a, b in x["regions"]] + x["logs"]:
            if e is None:
                continue
            for field in ("Type", "Category", "Message"):
                m = re.search(" " + field + "=" + QUOTED, e.rest)
                if m:
                    words.append(json.loads(m.group(1)))
        texts[tid] = words
        raw = [e for e in (x["start"], x["end"]) if e is not None] + x["logs"]
        for a, b in x["regions"]:
            raw += [e for e in (a, b) if e is not None]
        raw.sort(key=lambda e: e.time)  # stable, as Go's SortStableFunc
        rows, last = [], t0
        for e in raw:
            rows.append({"time_ns": e.time - t0, "elapsed_ns": e.time - last,
                         "goroutine": e.goid if e.goid is not None else
                         (e.g if e.g is not None else -1), "event": describe(e)})
            last = e.time
        a = x["start"].time if x["start"] else t0
        b = x["end"].time if x["end"] else tend
        typ = x["start"] or x["end"]
        out[tid] = {"id": tid, "type": json.loads(re.search(r" Type=" + QUOTED + "$",
                                                            typ.rest).group(1)) if typ else "",
                    "start_ns": a - t0, "duration_ns": b - a,
                    "complete": bool(x["start"] and x["end"]), "events": rows}
    return out, texts


ELAPSED_ROW = re.compile(r"^ +(\d+\.\d{9})  ([ .\d]{14})  +(-?\d+)  (.+)$")


def go_name(typ=None, complete=None, latmin=None, latmax=None, text=None):
    """Go's name of a task filter."""
    parts = []
    if typ is not None:
        parts.append(json.dumps(typ))
    if complete is not None:
        parts.append("complete" if complete else "incomplete")
    if latmin is not None:
        parts.append("latency >= %s" % latmin[1])
    if latmax is not None:
        parts.append("latency <= %s" % latmax[1])
    if text is not None:
        parts.append("log contains %s" % json.dumps(text))
    return ",".join(parts)


def check_filters(label, idx, want, texts):
    """Go's /usertask filters (type, complete, latmin, latmax, logtext; all must hold), alone
    and together, against the model; --events with them."""
    rows = sorted(want.values(), key=lambda r: (r["duration_ns"], r["id"]))
    done = sorted(r["duration_ns"] for r in rows if r["complete"])
    mid = done[len(done) // 2] if done else 1000
    # a duration both in ns (as traceidx takes it) and as Go prints it
    lat = (str(mid), go_duration(mid))
    types = sorted({r["type"] for r in rows})
    words = sorted({w for ws in texts.values() for w in ws if w})
    probes = [w[len(w) // 3:len(w) // 3 + 3] for w in words[:3]] + ["no such text"]
    cases = [dict(complete=True), dict(complete=False), dict(latmin=lat), dict(latmax=lat),
             dict(typ=types[-1], complete=True, latmax=lat)]
    cases += [dict(text=p) for p in probes if p]
    cases += [dict(typ=types[-1], text=probes[0])] if probes[0] else []
    selected = 0
    for c in cases:
        sel = [r for r in rows
               if (c.get("typ") is None or r["type"] == c["typ"]) and
               (c.get("complete") is None or r["complete"] == c["complete"]) and
               (c.get("latmin") is None or (r["complete"] and r["duration_ns"] >= mid)) and
               (c.get("latmax") is None or (r["complete"] and r["duration_ns"] <= mid)) and
               (c.get("text") is None or any(c["text"] in w for w in texts[r["id"]]))]
        args = []
        if c.get("typ") is not None:
            args += ["--type", c["typ"]]
        if c.get("complete") is not None:
            args += ["--complete" if c["complete"] else "--incomplete"]
        if c.get("latmin") is not None:
            args += ["--latmin", lat[0]]
        if c.get("latmax") is not None:
            args += ["--latmax", lat[0]]
        if c.get("text") is not None:
            args += ["--logtext", c["text"]]
        w = {"filter": go_name(**c), "count": len(sel),
             "complete": sum(r["complete"] for r in sel),
             "tasks": [{k: r[k] for k in ("id", "start_ns", "duration_ns", "complete")}
                       for r in sel]}
        if c.get("typ") is not None:
            w = dict({"type": c["typ"]}, **w)
        got = tasks(idx, *args)
        if got != w:
            fail("%s: tasks %s --json:\n%s\nwanted:\n%s" % (label, args, got, w))
        got = tasks(idx, "--events", *args)
        for t, r in zip(got["tasks"], sel):
            if t.pop("events") != r["events"]:
                fail("%s: tasks %s --events: task %d's events differ" % (label, args, r["id"]))
        if got != w:
            fail("%s: tasks %s --events --json:\n%s" % (label, args, got))
        selected += len(sel)
    print("%s: %d filters checked, %d tasks selected in all" % (label, len(cases), selected))


def go_duration(ns):
    """Go's time.Duration.String() for the durations these traces have (under a minute)."""
    if ns == 0:
        return "0s"
    for unit, div in (("ns", 1), ("µs", 10**3), ("ms", 10**6)):
        if ns < div * 1000:
            whole, frac = divmod(ns, div)
            text = str(whole)
            if frac:
                text += ("." + ("%0*d" % (len(str(div)) - 1, frac))).rstrip("0")
            return text + unit
    whole, frac = divmod(ns, 10**9)
    return str(whole) + (("." + "%09d" % frac).rstrip("0") if frac else "") + "s"


def check_task_events(label, idx, evs):
    """Every task's `tasks --id` against the model, as JSON and as text."""
    want, texts = task_events(evs)
    check_filters(label, idx, want, texts)
    for tid, w in sorted(want.items()):
        got = tasks(idx, "--id", str(tid))
        if got != w:
            fail("%s: tasks --id %d --json:\n%s\nwanted:\n%s" % (label, tid, got, w))
        text = run([TDX, "tasks", idx, "--id", str(tid)], ok=True).stdout.decode()
        rows = text.split("\n\n", 1)[1].splitlines()[1:]
        if len(rows) != len(w["events"]):
            fail("%s: tasks --id %d's text has %d rows, not %d:\n%s" % (
                label, tid, len(rows), len(w["events"]), text))
        for row, e in zip(rows, w["events"]):
            m = ELAPSED_ROW.match(row)
            # Go's elapsed(): below a second, the zeros before the first digit blanked
            gap = "%d.%09d" % divmod(e["elapsed_ns"], 10**9)
            if e["elapsed_ns"] < 10**9:
                head, tail = gap.split(".")
                gap = " " * len(head) + "." + re.sub("^0+", lambda z: " " * len(z.group()), tail)
            if not m or m.group(1) != "%d.%09d" % divmod(e["time_ns"], 10**9) or \
                    m.group(2) != gap.rjust(14) or int(m.group(3)) != e["goroutine"] or \
                    m.group(4) != e["event"]:
                fail("%s: tasks --id %d: row %r for %s" % (label, tid, row, e))
    return len(want)


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
    # --id by hand: task 2's begin, its region and its end; task 0's log, whose category
    # ("key") Go's page leaves out
    got = tasks(idx, "--id", "2")
    want = {"id": 2, "type": "req", "start_ns": 1199, "duration_ns": 22050, "complete": True,
            "events": [
                {"time_ns": 1199, "elapsed_ns": 1199, "goroutine": 1,
                 "event": 'task "req" (D 2, parent 1) begin'},
                {"time_ns": 1299, "elapsed_ns": 100, "goroutine": 1, "event": 'region "load" begin'},
                {"time_ns": 1499, "elapsed_ns": 200, "goroutine": 1, "event": 'region "load" end'},
                {"time_ns": 23249, "elapsed_ns": 21750, "goroutine": 1, "event": "task end"}]}
    if got != want:
        fail("basic: tasks --id 2: %s" % got)
    if tasks(idx, "--id", "0")["events"] != [{"time_ns": 1399, "elapsed_ns": 1399,
                                               "goroutine": 1, "event": 'log "hello"'}]:
        fail("basic: tasks --id 0: %s" % tasks(idx, "--id", "0"))
    # the filters by hand: complete tasks of at least 1 µs are 1 and 2; the incomplete ones
    # 3, 0 and 7 (by duration, then id); "load" is the type of task 2's and task 7's region,
    # "ell" in task 0's log message, "ke" in its log's category; "req" the type of 1, 2 and 3
    for args, ids in [(["--latmin", "1us"], [1, 2]), (["--latmax", "1.8us"], [4, 1]),
                      (["--incomplete"], [3, 0, 7]), (["--complete", "--type", "db"], [4]),
                      (["--logtext", "load"], [2, 7]), (["--logtext", "ell"], [0]),
                      (["--logtext", "ke"], [0]), (["--logtext", "req"], [1, 3, 2]),
                      (["--logtext", "req", "--latmax", "2us"], [1]),
                      (["--type", "req", "--incomplete", "--latmin", "0"], [])]:
        got = tasks(idx, *args)
        if [x["id"] for x in got["tasks"]] != ids or got["count"] != len(ids):
            fail("basic: tasks %s: %s" % (args, got))
    got = tasks(idx, "--logtext", "load", "--latmin", "1us")
    if got["filter"] != 'latency >= 1µs,log contains "load"' or "type" in got:
        fail("basic: a filter's name: %s" % got)
    got = tasks(idx, "--type", "req", "--latmin", "2us", "--events")
    if [x["id"] for x in got["tasks"]] != [2] or got["tasks"][0]["events"] != want["events"] \
            or got["type"] != "req" or got["filter"] != '"req",latency >= 2µs':
        fail("basic: tasks --type req --latmin 2us --events: %s" % got)
    text = run([TDX, "tasks", idx, "--logtext", "load", "--events"], ok=True).stdout.decode()
    if not text.startswith('Tasks log contains "load": 2, 1 complete') or \
            text.count('region "load" begin') != 2:
        fail("basic: tasks --logtext load --events' text:\n%s" % text)
    text = run([TDX, "tasks", idx, "--id", "2"], ok=True).stdout.decode()
    for want in ['Task 2 of type "req" (complete): from 0.000001199s for 22.05µs, 4 events',
                 "--task 2` shows it on the timeline",
                 "\n   0.000001499      .      200           1  region \"load\" end\n",
                 "\n   0.000023249      .    21750           1  task end\n"]:
        if want not in text:
            fail("basic: tasks --id 2's text lacks %r:\n%s" % (want, text))
    # a trace is answered from the index beside it, and only then
    beside = os.path.join(tmp, "beside.test")
    shutil.copyfile(trace, beside)
    p = run([TDX, "tasks", beside])
    if p.returncode != 1 or b"traceidx build" not in p.stderr:
        fail("tasks of a trace with no index: exit %d\n%s" % (p.returncode, p.stderr))
    run([TDX, "build", beside], ok=True)
    if tasks(beside) != tasks(idx):
        fail("tasks TRACE differs from tasks INDEX")


def check_tracegen(tmp):
    """Many tasks at once (taskevents.c plans a batch of WALK_FROM = 2048 or more by one walk over
    SUMMARY's task records, fewer by a load each), on a generated trace, against the model."""
    trace, idx = os.path.join(tmp, "tg.trace"), os.path.join(tmp, "tg.tidx")
    run([TRACEGEN, "--size", "5MiB", "--seed", "3", "--gen-ms", "25", "--logs", "2", "--quiet",
         "-o", trace], ok=True)
    run([TDX, "build", trace, "-o", idx, "--quiet"], ok=True)
    want, texts = task_events(parse_dump(TDX, trace, tmp))
    rows = sorted(want.values(), key=lambda r: (r["duration_ns"], r["id"]))
    words = [w for r in rows for w in texts[r["id"]] if w.startswith("req=")]
    probe = words[len(words) // 2].split()[0]
    for args, sel in [(["--complete"], [r for r in rows if r["complete"]]),
                      (["--incomplete"], [r for r in rows if not r["complete"]]),
                      (["--logtext", probe],
                       [r for r in rows if any(probe in w for w in texts[r["id"]])])]:
        got = tasks(idx, "--events", *args)["tasks"]
        if [t["id"] for t in got] != [r["id"] for r in sel]:
            fail("tracegen: tasks %s lists other tasks" % args)
        for t, r in zip(got, sel):
            if t["events"] != r["events"] or t["duration_ns"] != r["duration_ns"]:
                fail("tracegen: tasks %s --events: task %d:\n%s\nwanted:\n%s" % (
                    args, r["id"], t, r))
        print("tracegen: tasks %s --events: %d tasks, %d events" % (
            " ".join(args), len(got), sum(len(t["events"]) for t in got)))
    if sum(r["complete"] for r in rows) < 2048:
        fail("tracegen: too few complete tasks to take the walk")


def check_cli(tmp):
    idx = os.path.join(tmp, "basic.tidx")
    if "usage: traceidx tasks" not in run([TDX, "tasks", "--help"], ok=True).stdout.decode():
        fail("tasks --help")
    for args in [[], [idx, "--type"], [idx, "--frobnicate"], [idx, idx],
                 [idx, "--spill-budget", "x"], [idx, "--id"], [idx, "--id", "x"],
                 [idx, "--id", "-1"], [idx, "--id", "1", "--type", "req"],
                 [idx, "--id", "1", "--complete"], [idx, "--events"],
                 [idx, "--complete", "--incomplete"], [idx, "--latmin"],
                 [idx, "--latmin", "soon"], [idx, "--latmax", "-1ms"], [idx, "--logtext"],
                 [idx, "--logtext", ""]]:
        p = run([TDX, "tasks"] + args)
        if p.returncode != 2 or not p.stderr:
            fail("tasks %s: exit %d, wanted a usage error (2)" % (args, p.returncode))
    p = run([TDX, "tasks", idx, "--type", "nosuch"])
    if p.returncode != 1 or b'no task of type "nosuch"' not in p.stderr or p.stdout:
        fail("tasks --type of no type: exit %d\n%s" % (p.returncode, p.stderr))
    p = run([TDX, "tasks", idx, "--id", "99"])
    if p.returncode != 1 or b"no task 99" not in p.stderr or p.stdout:
        fail("tasks --id of no task: exit %d\n%s" % (p.returncode, p.stderr))
    refuses_garbage(TDX, "tasks", tmp)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_basic(tmp)
        check_cli(tmp)
        check_tracegen(tmp)
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
                k = check_task_events(name, idx, parse(os.path.join(golden, name, "events.txt")))
                print("%s: %d tasks' events checked" % (name, k))
                n += 1
            print("%d traces of Go's with tasks checked" % n)
    print("ok")


main()
