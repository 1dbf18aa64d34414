#!/usr/bin/env python3
"""install.api: `cmake --install` into a temporary prefix, then a program built against that
copy only (traceidx.h and `pkg-config --cflags --libs traceidx`, no path into the source tree)
answers as the CLI does on small traces of testdata/: the same query bytes, ranges, info and
goroutine statistics, and the API's error codes. Also: the man page and completion are
installed, the header compiles as C++, docs/api.md's example builds and runs, and the uninstall
script (make uninstall) removes every file installed, with and without DESTDIR.

usage: install_test.py TRACEIDX TRACEGEN SOURCE_DIR BUILD_DIR CMAKE CC CXX|- [EXTRA_CFLAGS...]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TRACES = ["gostats/basic.test", "tasks/basic.test", "edge/tasks-across-generations.test",
          "regions/basic.test", "pprof/basic.test"]
MANIFEST = "install_manifest_Unspecified.txt"
INSTALLED = ["bin/traceidx", "lib/libtraceidx.a", "include/traceidx.h",
             "share/man/man1/traceidx.1", "share/bash-completion/completions/traceidx",
             "lib/pkgconfig/traceidx.pc"]
CXX_CHECK = r"""
#include <traceidx.h>
#include <cstdio>
int main(int argc, char **argv) {
    traceidx_index *ix = nullptr;
    traceidx_error *e = nullptr;
    if (argc < 2 || traceidx_open(argv[1], 0, &ix, &e) == 0) return 1;
    std::printf("%s\n", traceidx_errcode_name(traceidx_error_code(e)));
    traceidx_error_free(e);
    return 0;
}
"""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def run(cmd, env=None, cwd=None):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)


def must(cmd, env=None, cwd=None):
    p = run(cmd, env=env, cwd=cwd)
    if p.returncode != 0:
        sys.stderr.write(p.stderr.decode(errors="replace"))
        raise SystemExit("FAIL: %s: exit %d" % (" ".join(cmd), p.returncode))
    return p.stdout


def files_under(d):
    out = set()
    for root, _, fs in os.walk(d):
        for f in fs:
            out.add(os.path.relpath(os.path.join(root, f), d))
    return out


def install(cmake, build, prefix, destdir=None):
    """Installs into prefix (under destdir); returns the manifest's paths."""
    env = dict(os.environ)
    env.pop("DESTDIR", None)
    if destdir:
        env["DESTDIR"] = destdir
    # the whole install, under a component name, so that the manifest `make uninstall` reads
    # (install_manifest.txt, of a real `make install`) is left alone
    must([cmake, "--install", build, "--prefix", prefix, "--component", "Unspecified"], env=env)
    with open(os.path.join(build, MANIFEST)) as f:
        return [l for l in f.read().split("\n") if l]


def uninstall(cmake, src, build, destdir=None):
    env = dict(os.environ)
    env.pop("DESTDIR", None)
    if destdir:
        env["DESTDIR"] = destdir
    must([cmake, "-DMANIFEST=" + os.path.join(build, MANIFEST), "-P",
          os.path.join(src, "scripts", "uninstall.cmake")], env=env)


def client(exe, *args):
    p = run([exe, *args])
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def code_of(stderr):
    m = re.search(r"api_client: (TRACEIDX_\w+):", stderr)
    return m.group(1) if m else None


def compare_group(cli, api, where):
    """`goroutines --name N --json` against the API's records, column by column."""
    check(cli["count"] == len(api["goroutines"]), where + ": goroutine count")
    for c, a in zip(cli["goroutines"], api["goroutines"]):
        w = "%s: goroutine %s" % (where, c["id"])
        for k in ("id", "total_ns", "creation_ns", "start_ns", "end_ns"):
            check(c[k] == a[k], "%s: %s %s != %s" % (w, k, c[k], a[k]))
        want = dict(zip(cli["columns"], c["stats"]))
        have = {"Execution time": a["exec_ns"], "Sched wait time": a["sched_wait_ns"],
                "Syscall execution time": a["syscall_ns"],
                "Block time (syscall)": a["syscall_block_ns"], "Unknown time": a["unknown_ns"]}
        for reason, ns in a["block"].items():
            label = "Block time (%s)" % reason
            have[label] = have.get(label, 0) + ns
        for col, v in want.items():
            check(have.get(col, 0) == v, "%s: %s %s != %s" % (w, col, v, have.get(col, 0)))
        rwant = dict(zip(cli["ranges"], c["ranges"]))
        for r, v in rwant.items():
            check(a["ranges"].get(r, 0) == v, "%s: range %s" % (w, r))


def check_trace(tidx, exe, trace):
    index = trace + ".tidx"
    name = os.path.basename(trace)
    must([tidx, "build", "--quiet", trace])
    # info, from the index and from the trace (its fresh index beside it)
    cli_info = json.loads(must([tidx, "info", "--json", index]))
    for path in (index, trace):
        rc, out, err = client(exe, path, "info")
        if not check(rc == 0, "%s: info of %s: %s" % (name, path, err)):
            continue
        api_info = json.loads(out)
        for k in ("format_version", "trace_version", "trace_bytes", "index_bytes",
                  "first_time_ns", "last_time_ns", "span_ns", "generations", "events",
                  "goroutines", "procs", "threads"):
            check(api_info[k] == cli_info[k], "%s: info %s" % (name, k))
        check(api_info["index"] == index, "%s: traceidx_path %s" % (name, api_info["index"]))
    # ranges: the same bytes
    rc, out, err = client(exe, index, "ranges")
    check(rc == 0 and out == must([tidx, "ranges", "--json", index]), name + ": ranges")
    nranges = len(json.loads(out or b"[]"))
    # queries: the same bytes, or the same refusal
    span = cli_info["span_ns"]
    groups = json.loads(must([tidx, "goroutines", "--json", index]))
    gids = []
    for g in groups["groups"]:
        one = json.loads(must([tidx, "goroutines", "--json", "--name", g["name"], index]))
        gids += [x["id"] for x in one["goroutines"]]
    tids = []
    for t in json.loads(must([tidx, "tasks", "--json", index]))["types"]:
        tids += json.loads(must([tidx, "tasks", "--json", "--type", t["type"], index]))["tasks"]
    # complete tasks first: those Go's views find (one without its begin is "not found")
    tids = [x["id"] for x in sorted(tids, key=lambda x: not x["complete"])]
    queries = [([], []), (["threads"], ["--view", "threads"]),
               (["window", str(span // 3), str(2 * span // 3)],
                ["--range", "%d:%d" % (span // 3, 2 * span // 3)]),
               (["events", "0", "9"], ["--start", "0", "--end", "9"]),
               (["range", "0"], ["--range", "#0"])]
    for g in gids[:4] + [999999]:
        queries.append((["goroutine", str(g)], ["--goroutine", str(g)]))
    for t in tids[:3] + [999999]:
        queries.append((["task", str(t)], ["--task", str(t)]))
        queries.append((["threads", "task", str(t)], ["--view", "threads", "--task", str(t)]))
        queries.append((["taskid", str(t)], ["--taskid", str(t)]))
    same = 0
    for api_args, cli_args in queries:
        what = "%s: query %s" % (name, " ".join(cli_args))
        cp = run([tidx, "query", index, *cli_args])
        rc, out, err = client(exe, index, "query", *api_args)
        if cp.returncode == 0:
            same += check(rc == 0 and out == cp.stdout, what + ": bytes differ (" + err.strip() + ")")
        else:
            check(rc != 0 and code_of(err) == "TRACEIDX_ERR_NOT_FOUND" and not out,
                  "%s: the CLI refused it (%s), the API said %s" %
                  (what, cp.stderr.decode().strip(), err.strip()))
    check(nranges > 0 or code_of(client(exe, index, "query", "range", "0")[2]) ==
          "TRACEIDX_ERR_NOT_FOUND", name + ": range #0 of an unsplit trace")
    # goroutine statistics
    rc, out, err = client(exe, index, "groups")
    check(rc == 0 and json.loads(out) == groups, name + ": groups " + err)
    for g in groups["groups"]:
        cli = json.loads(must([tidx, "goroutines", "--json", "--name", g["name"], index]))
        rc, out, err = client(exe, index, "group", g["name"])
        if check(rc == 0, "%s: group %r: %s" % (name, g["name"], err)):
            compare_group(cli, json.loads(out), "%s: group %r" % (name, g["name"]))
    rc, out, err = client(exe, index, "group", "no.such.function")
    check(rc == 1 and code_of(err) == "TRACEIDX_ERR_NOT_FOUND", name + ": unknown group: " + err)
    return same, len(queries) - same


def check_errors(tidx, exe, work, trace):
    """Each error code a caller can meet, against its cause."""
    d = os.path.join(work, "errors")
    os.mkdir(d)
    t = os.path.join(d, "t.trace")  # binary: a byte more is a changed trace
    must([tidx, "text2bin", trace, "-o", t])
    rc, _, err = client(exe, t, "info")
    check(code_of(err) == "TRACEIDX_ERR_NO_INDEX" and "traceidx build" in err,
          "no index beside a trace: " + err)
    must([tidx, "build", "--quiet", t])
    idx = t + ".tidx"
    cases = [
        (["query", "failwrite"], "TRACEIDX_ERR_WRITE"),
        (["query", "window", "5", "2"], "TRACEIDX_ERR_USAGE"),
        (["query", "threads", "goroutine", "1"], "TRACEIDX_ERR_USAGE"),
        (["query", "range", "-1"], "TRACEIDX_ERR_USAGE"),
    ]
    for args, code in cases:
        rc, _, err = client(exe, idx, *args)
        check(rc == 1 and code_of(err) == code, "%s: want %s, got %s" % (args, code, err))
    junk = os.path.join(d, "junk")
    with open(junk, "wb") as f:
        f.write(b"not a trace at all, nor an index\n")
    rc, _, err = client(exe, junk, "info")
    check(code_of(err) == "TRACEIDX_ERR_FORMAT", "a file that is neither: " + err)
    rc, _, err = client(exe, os.path.join(d, "missing"), "info")
    check(code_of(err) == "TRACEIDX_ERR_IO", "a missing file: " + err)
    # an index cut short
    cut = os.path.join(d, "cut.tidx")
    with open(idx, "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    rc, _, err = client(exe, cut, "info")
    check(code_of(err) == "TRACEIDX_ERR_INDEX", "a truncated index: " + err)
    # the trace changed since its index was built: stale, as the CLI says
    with open(t, "ab") as f:
        f.write(b"\n")
    rc, _, err = client(exe, t, "info")
    check(code_of(err) == "TRACEIDX_ERR_STALE" and "stale" in err, "a stale index: " + err)
    check(run([tidx, "query", t]).returncode == 1, "the CLI refuses the stale index too")


def check_full(tidx, tracegen, exe, work):
    """TRACEIDX_OPEN_FULL_CHECK: a byte changed where the sampled check does not look (a 1 MiB
    trace's 64 windows of 4 KiB are 16 KiB apart) is seen only by the full one, as by `info`."""
    t = os.path.join(work, "errors", "gen.trace")
    must([tracegen, "--size", "1MiB", "--seed", "3", "-o", t])
    must([tidx, "build", "--quiet", t])
    with open(t, "r+b") as f:
        f.seek(8192)
        b = f.read(1)
        f.seek(8192)
        f.write(bytes([b[0] ^ 1]))
    rc, _, err = client(exe, t, "info")
    check(rc == 0, "the sampled check passes a change between its windows: " + err)
    rc, _, err = client(exe, "--full", t, "info")
    check(code_of(err) == "TRACEIDX_ERR_STALE" and "its contents" in err,
          "the full check sees it: " + err)
    check(run([tidx, "info", t]).returncode == 1, "as traceidx info does")


def main(argv):
    if len(argv) < 8:
        sys.stderr.write(__doc__)
        return 2
    tidx, tracegen, src, build, cmake, cc, cxx = argv[1:8]
    extra = argv[8:]
    work = tempfile.mkdtemp(prefix="traceidx-install-")
    try:
        prefix = os.path.join(work, "prefix")
        listed = install(cmake, build, prefix)
        files = files_under(prefix)
        for f in INSTALLED:
            check(f in files, "installed: " + f)
        check({os.path.relpath(p, prefix) for p in listed} == files,
              "the manifest lists what was installed: %s vs %s" % (sorted(listed), sorted(files)))
        with open(os.path.join(prefix, "share/man/man1/traceidx.1"), "rb") as f, \
                open(os.path.join(src, "docs/traceidx.1"), "rb") as g:
            check(f.read() == g.read(), "the installed man page is docs/traceidx.1")
        if shutil.which("groff"):
            p = run(["groff", "-man", "-ww", "-z", os.path.join(prefix, "share/man/man1/traceidx.1")])
            check(p.returncode == 0 and not p.stderr, "groff warns: " + p.stderr.decode())
        comp = os.path.join(prefix, "share/bash-completion/completions/traceidx")
        p = run(["bash", "--norc", "-c", "source '%s' && complete -p traceidx" % comp])
        check(p.returncode == 0 and b"_traceidx" in p.stdout, "the completion loads in bash")
        with open(os.path.join(prefix, "include/traceidx.h")) as f:
            incs = re.findall(r"#include\s*[<\"]([^>\"]+)", f.read())
        check(set(incs) <= {"stddef.h", "stdint.h"}, "the header includes only C's: %s" % incs)

        # build against the installed copy only
        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = os.path.join(prefix, "lib", "pkgconfig")
        flags = must(["pkg-config", "--cflags", "--libs", "traceidx"], env=env).decode().split()
        root = os.path.realpath(src) + os.sep
        check(not any(os.path.realpath(f[2:]).startswith(root) for f in flags
                      if f[:2] in ("-I", "-L")), "pkg-config points into the source tree: %s" % flags)
        version = must(["pkg-config", "--modversion", "traceidx"], env=env).decode().strip()
        srcdir = os.path.join(work, "src")
        os.mkdir(srcdir)
        shutil.copy(os.path.join(src, "tests/install/api_client.c"), srcdir)
        exe = os.path.join(work, "api_client")
        must([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", *extra,
              os.path.join(srcdir, "api_client.c"), "-o", exe, *flags], cwd=work)
        out = must([exe, "version"]).decode().split()
        check(out[0] == version, "traceidx_version() %s, pkg-config %s" % (out[0], version))
        if cxx != "-":
            with open(os.path.join(srcdir, "cxx_check.cpp"), "w") as f:
                f.write(CXX_CHECK)
            cx = os.path.join(work, "cxx_check")
            must([cxx, "-std=c++11", "-Wall", "-Wextra", "-Werror", "-pedantic", *extra,
                  os.path.join(srcdir, "cxx_check.cpp"), "-o", cx, *flags], cwd=work)
            check(must([cx, os.path.join(work, "nothing")]) == b"TRACEIDX_ERR_IO\n",
                  "the header in C++")
        # docs/api.md's example, as it stands there
        with open(os.path.join(src, "docs/api.md")) as f:
            m = re.search(r"```c\n(.*?)```", f.read(), re.S)
        if check(m, "docs/api.md has a C example"):
            with open(os.path.join(srcdir, "example.c"), "w") as f:
                f.write(m.group(1))
            ex = os.path.join(work, "example")
            must([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *extra,
                  os.path.join(srcdir, "example.c"), "-o", ex, *flags], cwd=work)

        tdir = os.path.join(work, "traces")
        os.mkdir(tdir)
        nsame = nrefused = 0
        for t in TRACES:
            dst = os.path.join(tdir, t.replace("/", "-"))
            shutil.copy(os.path.join(src, "testdata", t), dst)
            a, b = check_trace(tidx, exe, dst)
            nsame, nrefused = nsame + a, nrefused + b
        if m:
            tr = os.path.join(tdir, "gostats-basic.test")
            js = os.path.join(work, "window.json")
            p = run([ex, tr, js])
            check(p.returncode == 0 and b"goroutines:" in p.stdout,
                  "docs/api.md's example runs: %s" % p.stderr.decode())
            with open(js, "rb") as f:
                check(f.read() == must([tidx, "query", tr, "--range", "0:1000000"]),
                      "docs/api.md's example writes what traceidx query does")
        check_errors(tidx, exe, work, os.path.join(src, "testdata", TRACES[0]))
        check_full(tidx, tracegen, exe, work)

        # make uninstall's script removes every file
        uninstall(cmake, src, build)
        left = files_under(prefix)
        check(not left, "uninstall left %s" % sorted(left))
        # and with DESTDIR, as packagers install: the files under it, the .pc naming the prefix
        stage = os.path.join(work, "stage")
        listed = install(cmake, build, "/usr", destdir=stage)
        check(all(p.startswith("/usr/") for p in listed), "the manifest omits DESTDIR")
        staged = files_under(os.path.join(stage, "usr"))
        check(staged == set(INSTALLED), "DESTDIR install: %s" % sorted(staged))
        with open(os.path.join(stage, "usr/lib/pkgconfig/traceidx.pc")) as f:
            check("prefix=/usr\n" in f.read(), "the .pc of a DESTDIR install names the prefix")
        uninstall(cmake, src, build, destdir=stage)
        left = files_under(stage)
        check(not left, "uninstall under DESTDIR left %s" % sorted(left))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok: installed %d files; built against them, the API wrote %d queries over %d traces "
          "byte for byte as the CLI, and refused %d as it did" %
          (len(INSTALLED), nsame, len(TRACES), nrefused))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
