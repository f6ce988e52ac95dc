#!/usr/bin/python3
"""callcycles.py: no call cycle among the object files of one layer.

  callcycles.py DIR [DIR...]

Each DIR holds the object files (*.o) of one layer (src/lib, src/server). File A
calls file B when one of A's undefined symbols (nm -u) is defined in B (nm
--defined-only). A cycle of any length among one DIR's files is a strongly connected
component of more than one file (Tarjan). Prints every such component and exits 1,
or exits 0 and says how many files and edges it looked at. docs/architecture.md: calls go one
way; what two files share goes below both, in a file of its own.
"""
import glob
import os
import subprocess
import sys


def symbols(objs):
    """{object: (defined, undefined)} for the objects, from one nm for all of them
    (an nm costs about as much as the reading it does, here)."""
    out = subprocess.run(["nm", "--format=posix", "-A"] + objs, check=True,
                         capture_output=True, text=True).stdout
    syms = {o: (set(), set()) for o in objs}
    for line in out.splitlines():
        # "OBJECT: NAME KIND [VALUE SIZE]"; OBJECT is one of objs, which hold no ": "
        obj, sep, rest = line.partition(": ")
        parts = rest.split()
        if not sep or obj not in syms or len(parts) < 2:
            continue
        defined, undefined = syms[obj]
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper() or kind in "vw":  # global (lower case: file-local)
            defined.add(name)
    return syms


def components(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check(d):
    objs = sorted(glob.glob(os.path.join(d, "*.o")))
    if not objs:
        print("callcycles: no object files in %s" % d, file=sys.stderr)
        return 2
    name = lambda p: os.path.basename(p).split(".")[0]
    defs, undef = {}, {}
    for o, (d_syms, u_syms) in symbols(objs).items():
        defs[name(o)], undef[name(o)] = d_syms, u_syms
    owner = {}
    for f, ds in defs.items():
        for s in ds:
            owner.setdefault(s, f)
    edges, n = {}, 0
    for f, us in undef.items():
        for s in us:
            g = owner.get(s)
            if g and g != f:
                edges.setdefault(f, set()).add(g)
    n = sum(len(v) for v in edges.values())
    bad = [c for c in components(defs.keys(), edges) if len(c) > 1]
    for c in bad:
        print("callcycles: %s: a call cycle among {%s}" % (d, ", ".join(c)))
        for f in c:
            calls = sorted(g for g in edges.get(f, ()) if g in c)
            print("  %s calls %s" % (f, ", ".join(calls)))
    if not bad:
        print("callcycles: %s: %d files, %d call edges, no cycle" % (d, len(objs), n))
    return 1 if bad else 0


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    return max(check(d) for d in sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
