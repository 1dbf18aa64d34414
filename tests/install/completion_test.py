#!/usr/bin/env python3
"""docs.completion: the bash completion offers every command `traceidx --help` lists and every
option each `traceidx CMD --help` shows (its usage lines and the options it describes), the
words some take (--view's), and nothing a command refuses as an unknown option. Read here
independently of scripts/gen_cli_docs.py, and asked of bash itself.

usage: completion_test.py TRACEIDX COMPLETION_FILE
"""
import re
import subprocess
import sys

OPT = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def help_text(tidx, *args):
    return subprocess.run([tidx, *args, "--help"], stdout=subprocess.PIPE,
                          check=True).stdout.decode()


def options(text):
    """The options a command's help shows: in its usage lines, and at the start of the lines
    that describe options (up to the gap before the description)."""
    paras = re.split(r"\n\s*\n", text.strip("\n"))
    opts = set(OPT.findall(paras[0]))
    for p in paras[1:]:
        for line in p.split("\n"):
            if re.match(r"^  -", line):
                term = re.split(r"(?<=\S)\s{2,}", line.strip(), maxsplit=1)[0]
                opts |= set(OPT.findall(term))
    return opts


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    tidx, comp = argv[1], argv[2]
    main_help = help_text(tidx)
    cmds = re.findall(r"^  (\S+)\s", main_help.split("\ncommands:\n", 1)[1].split("\n\n")[0],
                      re.M)
    want = {c: options(help_text(tidx, c)) for c in cmds}
    asks = [["traceidx", ""], ["traceidx", "help", ""], ["traceidx", "query", "x", "--view", ""],
            ["traceidx", "pprof", ""]]
    asks += [["traceidx", c, "-"] for c in cmds]
    script = ["source '%s'" % comp,
              'ask() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=();'
              ' _traceidx 2>/dev/null; printf "%s\\n" "${COMPREPLY[@]}"; echo "--end--"; }']
    for a in asks:
        script.append("ask " + " ".join("'%s'" % w for w in a))
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(script)],
                         stdout=subprocess.PIPE, check=True).stdout.decode()
    replies = [set(r.split("\n")) - {""} for r in out.split("--end--\n")[:len(asks)]]
    got = {tuple(a): r for a, r in zip(asks, replies)}
    bad = []

    def expect(ask, words):
        missing = set(words) - got[tuple(ask)]
        if missing:
            bad.append("%s offers no %s" % (" ".join(ask), sorted(missing)))

    expect(["traceidx", ""], cmds)
    expect(["traceidx", "help", ""], cmds)
    expect(["traceidx", "query", "x", "--view", ""], ["procs", "threads"])
    expect(["traceidx", "pprof", ""], ["net", "sync", "syscall", "sched"])
    n = 0
    for c in cmds:
        if not want[c]:
            bad.append("%s --help shows no options (the test's reading is off)" % c)
        expect(["traceidx", c, "-"], want[c])
        for o in got[("traceidx", c, "-")]:
            n += 1
            p = subprocess.run([tidx, c, o], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, timeout=60)
            if b"unknown option" in p.stderr:
                bad.append("%s %s is offered but refused" % (c, o))
    for b in bad:
        print("FAIL:", b)
    if bad:
        print("regenerate the completion with `make man` when --help changed")
        return 1
    print("ok: %d commands, %d options offered, each shown by --help and accepted" %
          (len(cmds), n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
