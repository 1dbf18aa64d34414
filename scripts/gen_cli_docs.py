#!/usr/bin/env python3
"""Writes traceidx's man page (docs/traceidx.1) and bash completion (scripts/traceidx.bash)
from the binary's own help: `traceidx --help` lists the commands, `traceidx CMD --help` gives
each one's usage, text and options. A new command needs no change here.

usage: gen_cli_docs.py TRACEIDX [--man FILE] [--completion FILE]
       gen_cli_docs.py TRACEIDX --check MAN COMPLETION   (exit 1 with a diff when stale)
"""
import difflib
import re
import subprocess
import sys

OPT = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
# a term, then two spaces or more, then its description
TERM = re.compile(r"^(\S+(?: \S+)*?)\s{2,}(\S.*)$")
REGEN = "make man (or scripts/gen_cli_docs.py BUILD/tools/traceidx --man docs/traceidx.1 " \
        "--completion scripts/traceidx.bash)"


def run_help(binary, *args):
    p = subprocess.run([binary, *args, "--help"], stdout=subprocess.PIPE, check=True)
    return p.stdout.decode("utf-8")


def blocks(text):
    """The text's paragraphs: runs of non-blank lines."""
    out, cur = [], []
    for line in text.rstrip("\n").split("\n"):
        if line.strip():
            cur.append(line.rstrip())
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def parse_main(text):
    """The description and the (name, summary) list of `traceidx --help`."""
    desc, cmds, in_cmds = [], [], False
    for b in blocks(text)[1:]:
        if b[0] == "commands:":
            in_cmds = True
            for line in b[1:]:
                m = re.match(r"^  (\S+)\s+(.*)$", line)
                if m:
                    cmds.append((m.group(1), m.group(2)))
        elif not in_cmds:
            desc.append(join(b))
    return desc, cmds


def join(lines):
    """Lines as one paragraph; a word broken after its hyphen is joined again."""
    out = ""
    for l in lines:
        l = l.strip()
        if not out:
            out = l
        elif re.search(r"[A-Za-z]-$", out) and l:
            out += l
        else:
            out += " " + l
    return out


def items(block):
    """A block indented by two spaces as (first line, continuation lines) items."""
    out = []
    for line in block:
        if re.match(r"^  \S", line) or not out:
            out.append([line.strip(), []])
        else:
            out[-1][1].append(line.strip())
    return out


def split_term(first):
    """(term, description) of an item's first line; term None for a plain line."""
    m = TERM.match(first)
    if m:
        return m.group(1), m.group(2)
    if first.startswith("-"):
        return first, ""
    return None, first


def parse_command(text):
    """A command's help: its usage lines, its paragraphs (("text", str) or ("list", items)),
    its options with what each takes, and the words its first positional argument may be."""
    bs = blocks(text)
    usage = bs[0]
    paras = []
    terms = []
    for b in bs[1:]:
        if all(l.startswith("  ") for l in b):
            its = items(b)
            paras.append(("list", its))
            terms += [t for t, _ in (split_term(f) for f, _ in its) if t]
        else:
            paras.append(("text", join(b)))
    return {"usage": usage, "paras": paras, "terms": terms}


def option_args(cmd):
    """Every option the usage and the option lists name, each with what follows it: None for
    a flag, else the placeholder or the words (procs|threads) it takes."""
    seqs = [l[len("usage:"):] if l.startswith("usage:") else l for l in cmd["usage"]]
    seqs += cmd["terms"]
    found, flag = {}, set()
    for s in seqs:
        toks = [t.strip("[],") for t in s.split()]
        for i, t in enumerate(toks):
            if not OPT.fullmatch(t):
                continue
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            found.setdefault(t, set())
            if nxt and not nxt.startswith("-") and nxt != "|":
                found[t].add(nxt)
            else:
                flag.add(t)  # shown without a value somewhere ([--events], then --events INDEX)
    out = {o: None if o in flag else sorted(v) for o, v in found.items()}
    return out


def positional_words(cmd):
    """The words a list names as plain terms (pprof's net, sync, ...): the first argument's."""
    return [t for t in cmd["terms"] if re.fullmatch(r"[a-z][a-z0-9]*", t)]


# ---- the man page ----

def esc(s):
    out = []
    for ch in s:
        if ch == "\\":
            out.append("\\e")
        elif ch == "-":
            out.append("\\-")
        elif ord(ch) > 127:
            out.append("\\[u%04X]" % ord(ch))
        else:
            out.append(ch)
    s = "".join(out)
    return "\\&" + s if s[:1] in (".", "'") else s


def term_roff(t):
    """Options in bold, the rest as it is."""
    parts = OPT.split(t)
    return "".join("\\fB%s\\fR" % esc(p) if OPT.fullmatch(p) else esc(p) for p in parts)


def man_page(main_text, cmds):
    desc, summary = parse_main(main_text)
    o = [
        '.\\" Generated by scripts/gen_cli_docs.py from `traceidx --help` and each',
        '.\\" `traceidx COMMAND --help`: do not edit; regenerate with `make man`.',
        '.TH TRACEIDX 1 "" "traceidx" "User Commands"',
        ".SH NAME",
        "traceidx \\- index Go execution traces and answer go tool trace's views from the index",
        ".SH SYNOPSIS",
        ".B traceidx",
        ".I command",
        "[\\fIarguments\\fR]",
        ".br",
        ".B traceidx",
        ".I command",
        ".B \\-\\-help",
        ".SH DESCRIPTION",
    ]
    for i, p in enumerate(desc):
        if i:
            o.append(".PP")
        o.append(esc(p))
    o.append(".PP")
    o.append("The commands:")
    for name, s in summary:
        o += [".TP", ".B " + esc(name), esc(s)]
    o.append(".SH COMMANDS")
    for name, _ in summary:
        c = cmds[name]
        o.append('.SS "traceidx %s"' % esc(name))
        o.append(".nf")
        for l in c["usage"]:
            l = l[len("usage: "):] if l.startswith("usage: ") else l[min(7, len(l) - len(l.lstrip())):]
            o.append(esc(l))
        o.append(".fi")
        for kind, p in c["paras"]:
            if kind == "text":
                o += [".PP", esc(p)]
                continue
            for first, more in p:
                t, d = split_term(first)
                text = join([d] + more)
                if t is None:
                    o += [".IP", esc(text)]
                else:
                    o += [".TP", term_roff(t)]
                    if text:
                        o.append(esc(text))
    o += [
        ".SH EXIT STATUS",
        "0 on success, 1 when the input is bad or the check asked for fails (a damaged or",
        "stale index, a goroutine or task the trace does not have), 2 for a bad command line.",
        ".SH FILES",
        ".TP",
        ".I TRACE.tidx",
        "the index `traceidx build TRACE` writes beside the trace; commands given a trace use it",
        "when it was built from the trace as it is now.",
        ".SH SEE ALSO",
        ".BR go (1):",
        "go tool trace, whose views traceidx answers from the index. libtraceidx reads indexes",
        "from other programs: traceidx.h and `pkg\\-config \\-\\-cflags \\-\\-libs traceidx`.",
    ]
    return "\n".join(o) + "\n"


# ---- bash completion ----

def sh_words(ws):
    return " ".join(ws)


def completion(summary, cmds):
    names = [n for n, _ in summary]
    o = [
        "# bash completion for traceidx. Generated by scripts/gen_cli_docs.py from `traceidx --help`",
        "# and each `traceidx COMMAND --help`: do not edit; regenerate with `make man`.",
        "_traceidx() {",
        "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}",
        "    local cmd=${COMP_WORDS[1]} opts= takes= words= n=0 i",
        "    COMPREPLY=()",
        "    if ((COMP_CWORD == 1)); then",
        "        COMPREPLY=($(compgen -W '%s help --help' -- \"$cur\"))" % sh_words(names),
        "        return",
        "    fi",
        "    case $cmd in",
        "    help | --help | -h)",
        "        ((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W '%s' -- \"$cur\"))" % sh_words(names),
        "        return",
        "        ;;",
    ]
    for name in names:
        args = option_args(cmds[name])
        opts = sorted(set(args) | {"--help"})
        takes = sorted(o for o, v in args.items() if v)
        o.append("    %s)" % name)
        o.append("        opts='%s'" % sh_words(opts))
        o.append("        takes='%s'" % sh_words(takes))
        pw = positional_words(cmds[name])
        if pw:
            o.append("        words='%s'" % sh_words(pw))
        cases = []
        quiet = []
        for opt in takes:
            vals = args[opt]
            lits = sorted({w for v in vals for w in v.split("|") if re.fullmatch(r"[a-z][\w-]*", w)})
            if lits:
                cases.append("        %s) COMPREPLY=($(compgen -W '%s' -- \"$cur\")); return ;;"
                             % (opt, sh_words(lits)))
            elif not any(v in ("FILE", "OUT", "IN", "TRACE", "INDEX") for v in vals):
                quiet.append(opt)  # a number, a name: nothing to offer, not even files
        if quiet:
            cases.append("        %s) compopt +o default 2>/dev/null; return ;;" % " | ".join(quiet))
        if cases:
            o += ["        case $prev in"] + cases + ["        esac"]
        o.append("        ;;")
    o += [
        "    *) return ;;",
        "    esac",
        "    # a value of an option that takes a file",
        "    [[ \" $takes \" == *\" $prev \"* ]] && return",
        "    if [[ $cur == -* ]]; then",
        "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))",
        "        return",
        "    fi",
        "    # the first argument may be one of a few words (pprof's TYPE); the others are files",
        "    for ((i = 2; i < COMP_CWORD; i++)); do",
        "        case ${COMP_WORDS[i]} in",
        "        -*) [[ \" $takes \" == *\" ${COMP_WORDS[i]} \"* ]] && ((i++)) ;;",
        "        *) ((n++)) ;;",
        "        esac",
        "    done",
        "    if [[ -n $words ]] && ((n == 0)); then",
        "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))",
        "    fi",
        "}",
        "complete -o default -F _traceidx traceidx",
    ]
    return "\n".join(o) + "\n"


def generate(binary):
    main_text = run_help(binary)
    _, summary = parse_main(main_text)
    cmds = {n: parse_command(run_help(binary, n)) for n, _ in summary}
    return man_page(main_text, cmds), completion(summary, cmds)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    man, comp = generate(argv[1])
    args = argv[2:]
    if args[:1] == ["--check"]:
        if len(args) != 3:
            sys.stderr.write(__doc__)
            return 2
        bad = False
        for path, want in ((args[1], man), (args[2], comp)):
            with open(path, encoding="utf-8") as f:
                have = f.read()
            if have != want:
                bad = True
                sys.stdout.writelines(difflib.unified_diff(
                    have.splitlines(True), want.splitlines(True), path, path + " (from --help)"))
                print("FAIL: %s differs from what --help says; regenerate it: %s" % (path, REGEN))
        return 1 if bad else 0
    while args:
        if args[0] in ("--man", "--completion") and len(args) > 1:
            with open(args[1], "w", encoding="utf-8") as f:
                f.write(man if args[0] == "--man" else comp)
            args = args[2:]
        else:
            sys.stderr.write(__doc__)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
