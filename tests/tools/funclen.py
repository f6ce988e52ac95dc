#!/usr/bin/python3
"""funclen.py: no function of src/ over LIMIT lines, but the named exceptions.

  funclen.py SRC

A function is read as the repo's .clang-format lays it out (BreakBeforeBraces:
Linux): its name's line at column 0 (a declaration continued on lines indented
under it), its body from a "{" alone on a line to the next "}" alone on a line.
Its length runs from the name's line to that "}", as ctags counts it. STYLE.md: a
function follows its state diagram, one function per edge; a long one hides it.

Prints every function over the limit that is not an exception, and every exception
that is no longer over it (the list stays short and true), and exits 1 if there is
one; else says how many functions it read.
"""
import os
import re
import sys

LIMIT = 120

# The exceptions, by file and function, each with why it may stay whole.
EXCEPTIONS = {
    ("src/server/resp/resp.c", "ik__respp_feed"):
        "the RESP parser's state machine: one switch over its states reads as the diagram",
    ("src/lib/backends/zk/backend_zk_tags.c", "advance_locked"):
        "the counter's fenced write and its doubt: shrinks with the evidence change",
    ("src/cli/cmd_elect.c", "ik__cmd_elect"):
        "the elect command's run under the hold: shrinks with the hold change",
}

NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(path):
    """(name, first line, length) of each function of one C file."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] != "{":
            i += 1
            continue
        k = i - 1
        while k > 0 and lines[k][:1] in (" ", "\t"):
            k -= 1
        m = NAME.search(" ".join(lines[k:i]))
        end = i + 1
        while end < len(lines) and lines[end] != "}":
            end += 1
        if m:
            yield m.group(1), k + 1, end - k + 1
        i = end + 1


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src = sys.argv[1]
    bad, seen, n = 0, set(), 0
    for root, _, files in os.walk(os.path.join(src, "src")):
        for f in sorted(files):
            if not f.endswith(".c"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)
            for name, line, length in functions(os.path.join(root, f)):
                n += 1
                if length <= LIMIT:
                    continue
                if (rel, name) in EXCEPTIONS:
                    seen.add((rel, name))
                    continue
                print("funclen: %s:%d: %s has %d lines (at most %d: one function per edge "
                      "of its state diagram, STYLE.md)" % (rel, line, name, length, LIMIT))
                bad = 1
    for key in sorted(set(EXCEPTIONS) - seen):
        print("funclen: %s: %s is an exception but not over %d lines (or gone): take it "
              "off the list" % (key[0], key[1], LIMIT))
        bad = 1
    if not bad:
        print("funclen: %d functions of src/, none over %d lines but %d named exceptions"
              % (n, LIMIT, len(EXCEPTIONS)))
    return bad


if __name__ == "__main__":
    sys.exit(main())
