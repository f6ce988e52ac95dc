#!/usr/bin/python3
"""folders.py: the folder rules of src/lib, and the tree of docs/architecture.md.

  folders.py calls SRC BUILD   the calls between the folders of src/lib
  folders.py server SRC BUILD  the folders of src/server: its doors apart
  folders.py tree SRC          docs/architecture.md's tree against src/

calls: among the objects of the library's sources this build compiles (BUILD/
ik_lib_sources.txt), file A calls file B when one of A's undefined symbols is
defined in B (as callcycles.py reads them). The rules (docs/architecture.md,
"Folders"):
  1. nothing outside src/lib/backends/ calls into a backend folder but the
     registry, src/lib/coord.c: core/, counters/, recipes/ and the files they
     share reach a backend only through its ops table;
  2. no calls between backend folders, but into a shared layer built under every
     backend the caller's folder is built for: a file of backends/X may call one of
     backends/Y only if every backend whose folders (cmake/backends.cmake, DIRS;
     BUILD/ik_backends.txt) include X include Y too. So backends/pg may call
     backends/sql (PG's folders are pg and sql), and nothing may call backends/pg.

server: the daemon's front doors, each a folder of src/server (http/, resp/),
beside the loops, the connection core and what both share at the top
(docs/architecture.md's tree). Among the objects of src/server's sources (BUILD/
CMakeFiles/idkeeper.dir), as for calls:
  1. no door's folder calls another's: what both need is at the top (issue.c);
  2. of the top, only server.c and loop.c call into a door's folder (they wire
     the doors to the core, and label the metrics by their tables); the core and
     the shared files reach a protocol only through the pointers it set (conn.h's
     ik__proto).
And by name: every file of a door's folder begins with the folder's name (http_,
resp), and no file name repeats under src/ (the daemon, its tests and its fuzz
drivers have all its folders on their include path, as the library's have its).

tree: every file under src/ is named in the tree at the top of
docs/architecture.md, or, under src/lib/backends/, in the "Files" tree of a
store's note (a code block of a docs/*.md whose first line is a folder
src/lib/backends/NAME/: a new backend lists its files in its own note, not
here); and every file or folder under src/ that a tree names exists. The tree: one entry a line, two spaces of indent per level under a folder
entry "NAME/"; an entry's names end at the first run of two spaces (its
description follows, and may go on over lines indented by 20 or more). Names are
separated by ", "; ".h" after "x.c" is x.h, and "x.[ch]" is x.c and x.h.

Prints every finding, one a line, and exits 1 if there is one.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callcycles import symbols  # noqa: E402

DOC = "docs/architecture.md"


def folder(path):
    """The folder of a source under src/lib: "src/lib/backends/zk" etc."""
    return os.path.dirname(path)


def src_files(src):
    """The files under SRC/src: git's, tracked or not ignored; else all."""
    try:
        files = subprocess.run(["git", "-C", src, "ls-files", "--cached", "--others",
                                "--exclude-standard", "src"], check=True,
                               capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), src)
                 for d, _, fs in os.walk(os.path.join(src, "src")) for f in fs]
    return [f for f in files if os.path.exists(os.path.join(src, f))]


def file_calls(objdir, sources):
    """[(a, b, symbol)], sorted: source a calls source b, another file (one of a's
    undefined symbols is defined in b), among the objects OBJDIR/SOURCE.o of the
    sources; None, after naming them, if an object is missing."""
    objs = {os.path.join(objdir, s + ".o"): s for s in sources}
    missing = [o for o in objs if not os.path.exists(o)]
    if missing:
        for o in missing:
            print("folders: no object %s (build first)" % o)
        return None
    syms = symbols(sorted(objs))
    owner = {}
    for o, (defined, _) in syms.items():
        for s in defined:
            owner.setdefault(s, objs[o])
    out = []
    for o, (_, undefined) in sorted(syms.items()):
        for s in sorted(undefined):
            b = owner.get(s)
            if b and b != objs[o]:
                out.append((objs[o], b, s))
    return out


def backend_of(fold):
    """X for a folder src/lib/backends/X, else None."""
    m = re.fullmatch(r"src/lib/backends/([^/]+)", fold)
    return m.group(1) if m else None


def calls(src, build):
    with open(os.path.join(build, "ik_lib_sources.txt")) as f:
        sources = [l.strip() for l in f if l.strip()]
    builders = {}  # folder name -> the backends whose DIRS name it
    with open(os.path.join(build, "ik_backends.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                for d in parts[2:]:
                    builders.setdefault(d, set()).add(parts[0])
    found = file_calls(os.path.join(build, "CMakeFiles", "ik_obj.dir"), sources)
    if found is None:
        return 1
    bad = 0
    seen = set()
    for a, b, s in found:
        if folder(a) == folder(b) or (a, b) in seen:
            continue
        y = backend_of(folder(b))
        if y is None:
            continue
        x = backend_of(folder(a))
        why = None
        if x is None and a != "src/lib/coord.c":
            why = ("only the registry (src/lib/coord.c) names a backend: core/, "
                   "counters/, recipes/ and what they share reach it through its ops table")
        elif x is not None and not builders.get(x, set()) <= builders.get(y, set()):
            why = ("no calls between backend folders (backends/%s is built without "
                   "backends/%s: cmake/backends.cmake, DIRS)" % (x, y))
        if why:
            seen.add((a, b))
            print("folders: %s calls %s (%s): %s" % (a, b, s, why))
            bad = 1
    if not bad:
        print("folders: %d files of src/lib: no calls into a backend folder but the "
              "registry's and a backend's into its own shared layer" % len(sources))
    return bad


SERVER = "src/server"


def server(src, build):
    files = src_files(src)
    bad = 0
    by_name = {}
    for f in files:
        if f.endswith((".c", ".h")):
            by_name.setdefault(os.path.basename(f), []).append(f)
    for n, fs in sorted(by_name.items()):
        if len(fs) > 1:
            print("folders: %s is the name of %s: a file name under src/ says one file "
                  "(the include paths hold every folder)" % (n, ", ".join(sorted(fs))))
            bad = 1
    doors = sorted(set(f.split("/")[2] for f in files
                       if f.startswith(SERVER + "/") and f.count("/") == 3))
    for f in sorted(files):
        parts = f.split("/")
        if f.startswith(SERVER + "/") and len(parts) == 4 and not parts[3].startswith(parts[2]):
            print("folders: %s: its name does not begin with %s (every file of a door's "
                  "folder is named for its door)" % (f, parts[2]))
            bad = 1
    sources = [f for f in files if f.startswith(SERVER + "/") and f.endswith(".c")]
    found = file_calls(os.path.join(build, "CMakeFiles", "idkeeper.dir"), sources)
    if found is None:
        return 1
    wiring = {SERVER + "/server.c", SERVER + "/loop.c"}
    seen = set()
    for a, b, s in found:
        if folder(a) == folder(b) or folder(b) == SERVER or (a, b) in seen:
            continue
        if folder(a) != SERVER:
            why = "no door's folder calls another's: what both need goes at the top"
        elif a not in wiring:
            why = ("of the top of %s only server.c and loop.c call into a door's "
                   "folder; the rest reach a protocol through its ik__proto" % SERVER)
        else:
            continue
        seen.add((a, b))
        print("folders: %s calls %s (%s): %s" % (a, b, s, why))
        bad = 1
    if not bad:
        print("folders: %d files of %s, doors %s: no call between doors, none into one "
              "from the top but server.c's and loop.c's; every door's file named for it, "
              "no file name twice under src/" % (len(sources), SERVER, ", ".join(doors)))
    return bad


def code_blocks(text):
    """The lines of each ``` code block of a markdown text, in order."""
    parts = text.split("```")
    return [parts[i].split("\n")[1:] for i in range(1, len(parts), 2)]


def tree_paths(text):
    """The paths the first code block of text names, folders ending in /."""
    return block_paths(code_blocks(text)[0])


BACKENDS = "src/lib/backends/"


def note_trees(src):
    """{note: paths} of the store notes' "Files" trees: each code block of a
    docs/*.md but architecture.md whose first line is a folder under BACKENDS."""
    out = {}
    for note in sorted(glob.glob(os.path.join(src, "docs", "*.md"))):
        rel = os.path.relpath(note, src)
        if rel == DOC:
            continue
        with open(note, encoding="utf-8") as f:
            for block in code_blocks(f.read()):
                if block and re.match(re.escape(BACKENDS) + r"[a-z0-9_]+/ ", block[0] + " "):
                    out.setdefault(rel, []).extend(block_paths(block))
    return out


def block_paths(block):
    """The paths one code block's lines name, folders ending in /."""
    name_re = re.compile(r"[A-Za-z0-9_.+\[\]-]+/?|[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)+/?")
    stack = []  # (indent, folder path)
    out = []
    for line in block:
        m = re.match(r"^( *)(\S.*?)(?: {2,}.*)?$", line)
        if not m or len(m.group(1)) >= 20:
            continue
        indent, names = len(m.group(1)), m.group(2).split(", ")
        if not all(name_re.fullmatch(n) for n in names):
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        base = stack[-1][1] if stack else ""
        prev = None
        for n in names:
            if n.startswith(".") and prev:
                n = re.sub(r"\.[^.]*$", "", prev) + n
            m2 = re.fullmatch(r"(.*)\.\[([a-z]+)\]", n)
            expanded = [m2.group(1) + "." + c for c in m2.group(2)] if m2 else [n]
            for e in expanded:
                out.append(base + e)
            prev = expanded[-1]
        if len(names) == 1 and names[0].endswith("/"):
            stack.append((indent, base + names[0]))
    return out


def tree(src):
    with open(os.path.join(src, DOC)) as f:
        trees = {DOC: [p for p in tree_paths(f.read()) if p.startswith("src/")]}
    trees.update(note_trees(src))
    files = src_files(src)
    bad = 0
    for doc, named in trees.items():
        for p in named:
            if not os.path.exists(os.path.join(src, p)):
                print("folders: %s names %s, which does not exist" % (doc, p))
                bad = 1
            elif doc != DOC and not p.startswith(BACKENDS):
                print("folders: %s names %s: a note's tree holds its backend's folder only"
                      % (doc, p))
                bad = 1
    have = set(p for named in trees.values() for p in named if not p.endswith("/"))
    for f in sorted(files):
        if f not in have:
            print("folders: %s is not in the tree of %s%s" % (
                f, DOC, " nor in a store note's \"Files\" tree (docs/NAME.md)"
                if f.startswith(BACKENDS) else ""))
            bad = 1
    if not bad:
        print("folders: the trees of %s and of %d store notes name the %d files under src/, "
              "and nothing else" % (DOC, len(trees) - 1, len(files)))
    return bad


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "calls":
        return calls(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 4 and sys.argv[1] == "server":
        return server(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 3 and sys.argv[1] == "tree":
        return tree(sys.argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
