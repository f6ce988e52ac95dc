#!/usr/bin/python3
"""callcycles.py: no call or include cycle among the files of one layer.

  callcycles.py DIR[:FOLDER] [DIR[:FOLDER]...]

Each DIR holds the object files (*.o) of one layer (src/lib, src/server). File A
calls file B when one of A's undefined symbols (nm -u) is defined in B (nm
--defined-only). With FOLDER, the layer's source folder, A also reaches B when a
.c or .h of A includes B's header (a file is its x.c with its x.h, and a header
without a .c is a file of its own; includes of headers outside FOLDER do not count):
an inline function or a struct in a header ties two files as a call does. A cycle of
any length among one DIR's files is a strongly connected component of more than one
file (Tarjan). Prints every such component and exits 1,
or exits 0 and says how many files and edges it looked at. docs/architecture.md: calls go one
way; what two files share goes below both, in a file of its own.
"""
import glob
import os
import re
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


def includes(folder):
    """{file: files it includes} among the .c and .h files under folder, a file
    named by its stem (x for x.c and x.h)."""
    paths = glob.glob(os.path.join(folder, "**", "*.[ch]"), recursive=True)
    stems = {os.path.basename(p)[:-2] for p in paths if p.endswith(".h")}
    out = {}
    for p in paths:
        f = os.path.basename(p)[:-2]
        with open(p, encoding="utf-8", errors="replace") as fh:
            for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)\.h"', fh.read(), re.M):
                g = os.path.basename(inc)
                if g in stems and g != f:
                    out.setdefault(f, set()).add(g)
    return out


def check(arg):
    d, _, folder = arg.partition(":")
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
    nodes, inc, ni = set(defs), {}, 0
    if folder:
        inc = includes(folder)
        for f, gs in inc.items():
            nodes.add(f)
            nodes.update(gs)
            for g in gs:
                if g not in edges.get(f, ()):
                    edges.setdefault(f, set()).add(g)
                    ni += 1
    bad = [c for c in components(nodes, edges) if len(c) > 1]
    for c in bad:
        print("callcycles: %s: a call cycle among {%s}" % (d, ", ".join(c)))
        for f in c:
            calls = sorted(g for g in edges.get(f, ()) if g in c)
            print("  %s calls or includes %s" % (f, ", ".join(
                g + ("" if g not in inc.get(f, ()) else " (includes)") for g in calls)))
    if not bad:
        print("callcycles: %s: %d files, %d call edges%s, no cycle"
              % (d, len(nodes), n, ", %d more of includes (%s)" % (ni, folder) if folder else ""))
    return 1 if bad else 0


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    return max(check(d) for d in sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
