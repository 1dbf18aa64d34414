#!/usr/bin/env python3
"""`traceidx serve` end to end, over HTTP against the real binary:

  golden TRACEIDX  every golden trace and the split synthetic trace: /jsontrace's bytes for each
                   view, start/end, goid, taskid, focustask and window equal `traceidx query`'s
                   for the same options (and its errors are the query's, as 4xx)
  pages TRACEIDX   every page answers 200, and every /data, /mmu and ?raw=1 answer is the matching
                   CLI command's output, byte for byte (goroutines, tasks, regions, MMU, profiles)
  security TRACEIDX TRACEGEN
                   foreign Host headers, '..' paths, oversized, malformed and NUL parameters,
                   other methods, an unknown goroutine: each gets its 4xx and the next request
                   is answered; a client that goes away kills its command; a full queue is 503;
                   a stale index is an error page and the server goes on
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

from common import SKIP, TESTDATA, fail, need, run

TRACEIDX = os.path.abspath(sys.argv[2])
TMP = tempfile.mkdtemp(prefix="traceidx-serve-")
FAILING = {"go122-create-syscall-with-p", "go122-fail-first-gen-first"}
SERVERS = []  # every server started, killed at the end whatever happened


class Server:
    """A `traceidx serve` process on a free loopback port."""

    def __init__(self, target, *extra, env=None):
        e = dict(os.environ, TZ="UTC")
        if env:
            e.update(env)
        self.p = subprocess.Popen([TRACEIDX, "serve", target, "--http", "127.0.0.1:0", "--quiet"]
                                  + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=e)
        SERVERS.append(self.p)
        line = self.p.stdout.readline().decode().strip()
        if not line.startswith("http://127.0.0.1:"):
            self.p.kill()
            fail("serve %s printed %r, not its URL: %s" % (target, line,
                                                          self.p.stderr.read().decode()[:2000]))
        self.url = line
        self.port = int(line.rsplit(":", 1)[1].strip("/"))

    def request(self, path, host=None, method="GET", timeout=120):
        """(status, headers, body) of one request; path is sent as given (no normalisation)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        c.putheader("Host", host if host is not None else "127.0.0.1:%d" % self.port)
        c.endheaders()
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), body

    def fetch(self, path):
        """(status, headers, body) read straight off the socket: http.client decodes chunks at
        about 40 MB/s, too slow for a split range's 100 MB."""
        sk = socket.create_connection(("127.0.0.1", self.port), timeout=120)
        sk.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
                    % (path, self.port)).encode())
        buf = bytearray()
        while True:
            x = sk.recv(1 << 20)
            if not x:
                break
            buf += x
        sk.close()
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = dict((k.strip().lower(), v.strip()) for k, _, v in
                       (ln.partition(":") for ln in lines[1:]))
        if headers.get("transfer-encoding") != "chunked":
            return status, headers, rest
        out, i = [], 0
        while True:
            j = rest.index(b"\r\n", i)
            n = int(rest[i:j].split(b";")[0], 16)
            if n == 0:
                break
            out.append(rest[j + 2:j + 2 + n])
            i = j + 4 + n
        return status, headers, b"".join(out)

    def get(self, path, status=200):
        s, h, b = self.request(path)
        if s != status:
            fail("GET %s: %d, not %d: %s" % (path, s, status, b[:500].decode(errors="replace")))
        return b

    def children(self):
        """The server's child processes (its running commands)."""
        kids = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % pid) as f:
                    st = f.read()
            except OSError:
                continue
            if int(st.rsplit(")", 1)[1].split()[1]) == self.p.pid:
                kids.append(int(pid))
        return kids

    def alive(self):
        if self.p.poll() is not None:
            fail("the server died (exit %s): %s" % (self.p.returncode,
                                                   self.p.stderr.read().decode()[:2000]))

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        try:
            rc = self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("serve did not stop on SIGINT")
        if rc != 0:
            fail("serve exited %d on SIGINT" % rc)


def build(trace, name):
    ix = os.path.join(TMP, name + ".tidx")
    run([TRACEIDX, "build", "--quiet", "-j", "2", "-o", ix, trace], ok=True)
    return ix


def qs(params):
    return urllib.parse.urlencode(params)


def cli_query(ix, params):
    """`traceidx query` for /jsontrace's parameters, as serve maps them."""
    args = [TRACEIDX, "query", ix]
    if params.get("view") == "thread":
        args += ["--view", "threads"]
    for k, opt in (("goid", "--goroutine"), ("focustask", "--task"), ("taskid", "--taskid")):
        if k in params:
            args += [opt, str(params[k])]
            break
    if "start" in params and "end" in params:
        args += ["--start", str(params["start"]), "--end", str(params["end"])]
    if "window" in params:
        args += ["--range", params["window"]]
    return run(args)


def same_as_query(srv, ix, params, what):
    path = "/jsontrace" + ("?" + qs(params) if params else "")
    s, h, body = srv.fetch(path)
    p = cli_query(ix, params)
    if p.returncode == 0:
        if s != 200:
            fail("%s %s: %d: %s" % (what, path, s, body[:300]))
        if h.get("content-type") != "application/json":
            fail("%s %s: content type %s" % (what, path, h.get("content-type")))
        if body != p.stdout:
            fail("%s %s: %d bytes differ from query's %d" % (what, path, len(body), len(p.stdout)))
    else:
        want = 400 if p.returncode == 2 else 404
        if s != want or body != p.stderr:
            fail("%s %s: %d %r, where query exits %d: %r" % (what, path, s, body[:200],
                                                           p.returncode, p.stderr[:200]))
    return s


def task_ids(ix):
    """Up to three task ids of the trace (tasks of each type, as `tasks --type` lists them)."""
    types = json.loads(run([TRACEIDX, "tasks", ix, "--json"], ok=True).stdout)
    ids = []
    for t in types.get("types", []):
        doc = json.loads(run([TRACEIDX, "tasks", ix, "--type", t["type"], "--json"],
                             ok=True).stdout)
        ids += [x["id"] for x in doc.get("tasks", [])][:2]
    return ids[:3]


def check_golden():
    gold = need(os.path.join(TESTDATA, "golden"))
    traces = []
    for name in sorted(os.listdir(gold)):
        t = os.path.join(TESTDATA, "go-tests-bin", name + ".trace")
        if name not in FAILING and os.path.exists(t):
            traces.append((name, t))
    traces.append(("synth-split", need(os.path.join(TESTDATA, "synth", "synth-split.trace"))))
    n = 0
    for name, trace in traces:
        ix = build(trace, name)
        srv = Server(ix)
        ranges = json.loads(run([TRACEIDX, "ranges", ix, "--json"], ok=True).stdout)
        # a split trace's whole views are 225 MB each: its ranges (the proc view's all, the
        # thread view's smallest) stand for them
        plist = [] if ranges else [{}, {"view": "thread"}]
        pj = os.path.join(gold, name, "params.json")
        if os.path.exists(pj):
            with open(pj) as f:
                plist += [v["query"] for v in json.load(f).values()
                          if "query" in v and (v["query"] or not ranges)]
        for i, r in enumerate(ranges):
            plist.append({"start": r["start"], "end": r["end"]})
            if i == len(ranges) - 1:
                plist.append({"view": "thread", "start": r["start"], "end": r["end"]})
        info = json.loads(run([TRACEIDX, "info", ix, "--json"], ok=True).stdout)
        span = info.get("span_ns") or 0
        plist += [{"window": "%dns:%dns" % (span // 3, span // 3 + span // 20)},
                  {"window": ":+%dns" % max(1, span // 10), "view": "thread"},
                  {"goid": 999999999}]
        for t in task_ids(ix):
            plist += [{"focustask": t}, {"taskid": t}, {"focustask": t, "view": "thread"}]
        done = set()
        for params in plist:
            key = json.dumps(params, sort_keys=True)
            if key not in done:
                done.add(key)
                same_as_query(srv, ix, params, name)
                n += 1
        srv.alive()
        srv.stop()
    print("ok: %d /jsontrace answers of %d traces equal traceidx query's" % (n, len(traces)))


def cli(ix, *args):
    """traceidx CMD INDEX ARGS... (pprof TYPE INDEX ARGS...)"""
    k = 2 if args[0] == "pprof" else 1
    return run([TRACEIDX] + list(args[:k]) + [ix] + list(args[k:]), ok=True).stdout


PAGES = ["/", "/trace", "/goroutines", "/goroutine?name=", "/usertasks", "/usertask",
         "/userregions", "/userregion", "/mmu", "/io", "/block", "/syscall", "/sched",
         "/regionio", "/regionblock", "/regionsyscall", "/regionsched"]


def check_pages():
    n = 0
    for name, trace in (("synth-split", os.path.join(TESTDATA, "synth", "synth-split.trace")),
                        ("go122-annotations",
                         os.path.join(TESTDATA, "go-tests-bin", "go122-annotations.trace"))):
        ix = build(need(trace), name)
        srv = Server(ix)
        for p in PAGES:
            b = srv.get(p)
            if b"<html" not in b.lower():
                fail("%s: not a page: %r" % (p, b[:200]))
            n += 1
        data = [("/data/info", ["info", "--json"]), ("/data/ranges", ["ranges", "--json"]),
                ("/data/goroutines", ["goroutines", "--json"]),
                ("/data/usertasks", ["tasks", "--json"]),
                ("/data/userregions", ["regions", "--json"]),
                ("/data/userregion", ["regions", "--latmin", "0", "--json"]),
                ("/mmu?mode=plot&flags=" + urllib.parse.quote("stw|background|assist"),
                 ["mmu", "--json", "--include", "stw,background,assist"]),
                ("/mmu?mode=plot&flags=" + urllib.parse.quote("perProc|sweep|mut"),
                 ["mmu", "--json", "--include", "sweep", "--per-goroutine", "--percentiles"]),
                ("/mmu?mode=details&window=1000&flags=stw",
                 ["mmu", "--json", "--include", "stw", "--window", "1000"])]
        for page, prof in (("io", "net"), ("block", "sync"), ("syscall", "syscall"),
                           ("sched", "sched")):
            data += [("/data/" + page, ["pprof", prof, "--json"]),
                     ("/%s?raw=1" % page, ["pprof", prof])]
            if name != "synth-split" or page == "sched":  # each reads every event twice
                data += [("/data/region" + page, ["pprof", prof, "--latmin", "0", "--json"]),
                         ("/region%s?raw=1" % page, ["pprof", prof, "--latmin", "0"])]
        groups = json.loads(cli(ix, "goroutines", "--json"))["groups"]
        for g in groups[:2]:
            q = qs({"name": g["name"]})
            data += [("/data/goroutine?" + q, ["goroutines", "--name", g["name"], "--json"]),
                     ("/data/goroutine?" + q + "&sortby=" + urllib.parse.quote("Sched wait time"),
                      ["goroutines", "--name", g["name"], "--json", "--sort", "Sched wait time"]),
                     ("/data/io?" + q, ["pprof", "net", "--json", "--name", g["name"]])]
        types = json.loads(cli(ix, "tasks", "--json")).get("types", [])
        for t in types[:2]:
            data += [("/data/usertask?" + qs({"type": t["type"]}),
                      ["tasks", "--json", "--type", t["type"]]),
                     ("/data/usertask?" + qs({"type": t["type"], "complete": 1}),
                      ["tasks", "--json", "--type", t["type"], "--complete"]),
                     ("/data/usertask?" + qs({"type": t["type"], "latmin": "1us"}),
                      ["tasks", "--json", "--type", t["type"], "--latmin", "1us"])]
        for t in task_ids(ix)[:2]:
            data.append(("/data/usertask?id=%d" % t, ["tasks", "--json", "--id", str(t)]))
        regs = json.loads(cli(ix, "regions", "--json")).get("types", [])
        for r in regs[:2]:
            q = {"type": r["type"], "pc": r["pc"][2:]}
            data += [("/data/userregion?" + qs(q),
                      ["regions", "--json", "--type", r["type"], "--pc", q["pc"]]),
                     ("/data/regionsched?" + qs(q),
                      ["pprof", "sched", "--json", "--region", r["type"], "--pc", q["pc"]])]
        for path, args in data:
            want = cli(ix, *args)
            got = srv.get(path)
            if got != want:
                fail("%s %s: %d bytes, not those of traceidx %s (%d)" % (name, path, len(got),
                                                                          " ".join(args),
                                                                          len(want)))
            n += 1
        srv.alive()
        srv.stop()
    print("ok: %d pages and data answers equal the CLI's" % n)


def expect(srv, path, status, what, host=None, method="GET"):
    s, h, b = srv.request(path, host=host, method=method)
    if s != status:
        fail("%s: %s answered %d, not %d: %r" % (what, path, s, status, b[:300]))
    srv.alive()
    # and the server still answers
    s2, _, _ = srv.request("/data/info")
    if s2 != 200:
        fail("after %s, /data/info answered %d" % (what, s2))
    return b


def check_security():
    tracegen = sys.argv[3]
    trace = os.path.join(TMP, "t.trace")
    run([tracegen, "--size", "2M", "-o", trace], ok=True)
    ix = build(trace, "t")
    srv = Server(ix, "--max-queries", "1", "--queue", "0")
    port = srv.port
    for host in ("evil.example.com:%d" % port, "evil.example.com", "127.0.0.1:%d" % (port + 1),
                 "127.0.0.1", "localhost.evil.example.com:%d" % port, "", "[::1",
                 "127.0.0.1:%d:1" % port, "127.0.0.1:+%d" % port):
        expect(srv, "/", 403, "Host %r" % host, host=host)
    for host in ("localhost:%d" % port, "LOCALHOST:%d" % port, "[::1]:%d" % port):
        s, _, _ = srv.request("/data/info", host=host)
        if s != 200:
            fail("Host %s refused (%d)" % (host, s))
    for path in ("/../etc/passwd", "/assets/../../etc/passwd", "/assets/%2e%2e/%2e%2e/etc/passwd",
                 "/assets/", "/static/../../etc/passwd", "/data/../../etc/passwd", "/nosuch",
                 "/data/nosuch", "//etc/passwd", "/jsontrace/x"):
        expect(srv, path, 404, "path")
    big = "9" * 5000
    expect(srv, "/goroutine?name=" + "x" * 5000, 414, "oversized parameter")
    expect(srv, "/jsontrace?" + "&".join("a%d=1" % i for i in range(40)), 400, "40 parameters")
    expect(srv, "/jsontrace?goid=" + big[:30], 400, "a 30-digit goid")
    for q in ("goid=-1", "goid=1x", "goid=", "focustask=0x10", "start=1&end=x", "view=sideways",
              "window=1s", "window=a;b:c", "window=" + urllib.parse.quote("1s:2s'$(id)")):
        expect(srv, "/jsontrace?" + q, 400, "malformed " + q)
    expect(srv, "/data/usertask?type=a%00b", 400, "a NUL in a parameter")
    expect(srv, "/data/usertask?id=abc", 400, "a malformed task id")
    expect(srv, "/data/usertask", 400, "a task list without a condition")
    expect(srv, "/mmu?mode=details&window=1ms", 400, "a window not in ns")
    expect(srv, "/mmu?mode=sideways", 400, "an unknown mmu mode")
    expect(srv, "/data/goroutine", 400, "no goroutine name")
    expect(srv, "/data/userregion?latmin=soon", 400, "a malformed duration")
    expect(srv, "/data/usertask?latmin=" + urllib.parse.quote("1s --json"), 400,
           "a duration with a space")
    b = expect(srv, "/jsontrace?goid=999999999", 404, "an unknown goroutine")
    if b"999999999" not in b:
        fail("the unknown goroutine's page does not name it: %r" % b)
    expect(srv, "/data/usertask?id=999999999", 404, "an unknown task")
    expect(srv, "/data/goroutine?name=nosuch", 404, "an unknown goroutine group")
    for m in ("POST", "PUT", "DELETE", "OPTIONS", "TRACE"):
        expect(srv, "/", 405, m, method=m)
    # the options a value could smuggle in stay values: a goroutine group named like an option
    expect(srv, "/data/goroutine?name=" + urllib.parse.quote("-o /tmp/x"), 404, "name '-o x'")
    if os.path.exists("/tmp/x"):
        fail("a parameter wrote a file")

    # A client that goes away: its command is killed (the whole trace's JSON never drains).
    sk = socket.create_connection(("127.0.0.1", port))
    sk.sendall(b"GET /jsontrace HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port)
    first = sk.recv(100)
    if not first.startswith(b"HTTP/1.1 200"):
        fail("/jsontrace answered %r" % first)
    if not srv.children():
        fail("no command runs while /jsontrace streams")
    # the one slot is taken and nothing may wait: the next data request is refused, not queued
    s, h, _ = srv.request("/data/info")
    if s != 503 or h.get("retry-after") != "1":
        fail("a full server answered %d %s, not 503 with Retry-After" % (s, h))
    s, _, _ = srv.request("/")
    if s != 200:
        fail("a page needs no slot, but answered %d" % s)
    sk.close()
    deadline = time.time() + 20
    while srv.children() and time.time() < deadline:
        time.sleep(0.05)
    if srv.children():
        fail("the command of a client that went away still runs: %s" % srv.children())
    expect(srv, "/data/info", 200, "after the client went away")

    # Given a trace with no index beside it, serve builds one first, then answers from it.
    srv.stop()
    t2 = os.path.join(TMP, "s.trace")
    shutil.copy(trace, t2)
    srv = Server(t2)
    if not os.path.exists(t2 + ".tidx"):
        fail("serve of a trace without an index did not build %s.tidx" % t2)
    if srv.get("/data/info") != run([TRACEIDX, "info", t2 + ".tidx", "--json"], ok=True).stdout:
        fail("serve TRACE does not answer from the index it built")

    # A stale index: the trace changed under the server; an error page, then it answers again.
    with open(t2, "r+b") as f:
        f.seek(0, 2)
        f.write(b"\0" * 100)
    s, _, b = srv.request("/data/goroutines")
    if s != 500 or b"traceidx" not in b:
        fail("a stale index answered %d %r, not 500 with the CLI's error" % (s, b[:300]))
    s, _, _ = srv.request("/")
    srv.alive()
    if s != 200:
        fail("with a stale index, / answered %d" % s)
    srv.stop()
    print("ok: every bad request got its 4xx and the server went on")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    try:
        {"golden": check_golden, "pages": check_pages, "security": check_security}[sys.argv[1]]()
    finally:
        for p in SERVERS:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
