#!/usr/bin/env python3
"""Fills in `size=?` of EventBatch lines in a text trace (authoring aid for testdata/edge).

usage: textsize.py FILE   (rewrites FILE in place; other size values are left as written)
The size is the encoded length of the events up to the next batch header, as Go's text
converter expects: 1 type byte + minimal uvarints (+ length and bytes for data events).
"""
import ast
import sys


def uvlen(v):
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def encoded(lines, i):
    """Encoded size of the event starting at lines[i]; returns (size, next index)."""
    toks = lines[i].split()
    size = 1
    args = [t.split("=", 1) for t in toks[1:]]
    for _, v in args:
        size += uvlen(int(v))
    j = i + 1
    if toks[0] == "Stack":
        for _ in range(int(dict(args)["nframes"])):
            for t in lines[j].split():
                size += uvlen(int(t.split("=", 1)[1]))
            j += 1
    if toks[0] in ("String", "ExperimentalBatch"):
        data = ast.literal_eval(lines[j].strip().split("=", 1)[1].strip())
        b = data.encode("latin-1") if isinstance(data, str) else data
        size += uvlen(len(b)) + len(b)
        j += 1
    return size, j


def main():
    path = sys.argv[1]
    lines = open(path).read().split("\n")
    start = lines.index("-- trace --") + 1 if "-- trace --" in lines else 0
    end = next((k for k in range(start, len(lines)) if lines[k].startswith("-- ") and k > start), len(lines))
    i = start + 1
    while i < end:
        if lines[i].startswith("EventBatch") and "size=?" in lines[i]:
            total, j = 0, i + 1
            while j < end and lines[j].strip() and not lines[j].startswith("EventBatch") \
                    and not lines[j].startswith("ExperimentalBatch") and lines[j] != "EndOfGeneration":
                s, j = encoded(lines, j)
                total += s
            lines[i] = lines[i].replace("size=?", "size=%d" % total)
        i += 1
    open(path, "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
