"""docs_code.py SRC: the reference docs that restate the code, checked against it
(part of the test structure, tests/tools/structure.sh). Run with /usr/bin/python3.
docs_code.py --write SRC writes what it can write (the store options' rows) instead
of checking them (`make docs`).

  routes   man/idkeeper.1.scd.in's route list ("The routes: ..." of serve) names
           every route of the HTTP route table (IK_ROUTE_TABLE's R(METHOD, "PATH",
           ...) rows under src/server), and no other: the same METHOD PATH pairs,
           a {param} of the table written *PREFIX*_PARAM_ in the man page, GET
           unless the page says the method.
  groups   docs/testing.md's table of conformance groups ("### Groups"):
           - one row per group script (tests/conformance/*.sh but conf.sh and
             *_cases.sh), and no other;
           - its backend columns are backends that run the suite, in order:
             local, then the SCHEME of each ik_backend() line of
             cmake/backends.cmake (on or off in a given build); a backend may
             have none (a new store adds no column: its skips are in its own
             file);
           - a row's "-" marks exactly the backends of its columns that skip
             the group (the "# skips: GROUP:" lines of tests/conformance/
             stores/BACKEND.sh);
           - each row cites the promises it checks as its cell's last
             parenthesis, "(N)", "(N, M)" or "(N; more words)", and each N is a
             promise of docs/guarantees.md ("### N. ...").

  options  docs/configuration.md's table of store options (between its lines
           "<!-- store options -->" and "<!-- end of store options -->") is the
           one the backends' tables make: every `ik__store_option NAME[] = {...}`
           of src/lib/backends/*/*.c, in cmake/backends.cmake's order, a row each
           (as --write writes it). The man pages get the same rows at build time
           from the binary (man/backends.cmake); this is the page of the tree.

Prints every finding and exits 1 if there is one.
"""
import glob
import os
import re
import sys

write = sys.argv[1] == "--write"
src = sys.argv[2 if write else 1]
bad = []


def read(path):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        return f.read()


# ------------------------------------------------------------------ routes
table = set()
for path in sorted(glob.glob(os.path.join(src, "src/server/**/*.[ch]"), recursive=True)):
    text = open(path, encoding="utf-8").read()
    for method, route in re.findall(r'\bR\(\s*IK_HTTP_([A-Z]+),\s*"([^"]+)"', text):
        table.add((method, re.sub(r"\{[a-z_]+\}", "{}", route)))
if not table:
    bad.append("no route table (R(IK_HTTP_..., \"PATH\", ...) rows) found under src/server")

man = read("man/idkeeper.1.scd.in")
m = re.search(r"^The routes:(.*?)(?:\.\s|\n\n)", man, re.S | re.M)
if not m:
    bad.append("man/idkeeper.1.scd.in has no paragraph \"The routes: ...\"")
else:
    listed = set()
    for method, route, param in re.findall(r"\*(?:([A-Z]+) )?(/[^*\s]*)\*(_[A-Z]+_)?", m.group(1)):
        listed.add((method or "GET", route + ("{}" if param else "")))
    for method, route in sorted(table - listed):
        bad.append("the route %s %s (src/server's route table) is not in the man page's route "
                   "list (man/idkeeper.1.scd.in, \"The routes:\")" % (method, route))
    for method, route in sorted(listed - table):
        bad.append("the man page lists %s %s, which the route table does not have" % (method, route))

# ------------------------------------------------------------------ groups
promises = set(re.findall(r"^### ([0-9]+)\. ", read("docs/guarantees.md"), re.M))
# local: and every ik_backend() of cmake/backends.cmake, in its order, on or off in
# this build: the table describes the tree, not one build
backends = ["local"] + re.findall(r"^ik_backend\([A-Z0-9_]+ SCHEME ([a-z0-9]+)",
                                  read("cmake/backends.cmake"), re.M)

groups = {}
for path in sorted(glob.glob(os.path.join(src, "tests/conformance/*.sh"))):
    g = os.path.basename(path)[:-3]
    if g == "conf" or g.endswith("_cases"):
        continue
    groups[g] = set()
for path in sorted(glob.glob(os.path.join(src, "tests/conformance/stores/*.sh"))):
    b = os.path.basename(path)[:-3]
    for g in re.findall(r"^# skips: ([a-z0-9_]+):", open(path, encoding="utf-8").read(), re.M):
        if g in groups:
            groups[g].add(b)

testing = read("docs/testing.md")
sec = re.search(r"^### Groups\n(.*?)(?=^#)", testing, re.S | re.M)
rows = [l for l in (sec.group(1).splitlines() if sec else []) if l.startswith("|")]
if len(rows) < 3:
    bad.append("docs/testing.md has no table under \"### Groups\"")
else:
    head = [c.strip() for c in rows[0].strip().strip("|").split("|")]
    # columns of backends that run the suite, in cmake's order; a backend may have
    # none (its skips are the lines of its store file)
    if [b for b in backends if b in head[2:]] != head[2:]:
        bad.append("docs/testing.md's group table has the columns %s after the group and what "
                   "it checks: backends that run the suite (local and cmake/backends.cmake's), "
                   "in that order (%s)" % (", ".join(head[2:]) or "none", ", ".join(backends)))
    seen = set()
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        g = cells[0].strip("`")
        seen.add(g)
        if g not in groups:
            bad.append("docs/testing.md's group table has a row %s, which is no group script" % g)
            continue
        cite = re.search(r"\(([^()]*)\)$", cells[1])
        if not cite:
            bad.append("group %s cites no promise: its cell must end in \"(N)\" (docs/guarantees.md)" % g)
        else:
            nums = re.split(r",\s*", cite.group(1).split(";")[0])
            wrong = [n for n in nums if n not in promises]
            if wrong:
                bad.append("group %s cites (%s): %s not a promise of docs/guarantees.md, which "
                           "numbers them 1-%d" % (g, cite.group(1), ", ".join(wrong),
                                                  max(map(int, promises)) if promises else 0))
        for b, cell in zip(head[2:], cells[2:]):
            if b in backends and (cell == "-") != (b in groups[g]):
                bad.append("group %s on %s: the table says %r, but the group %s there (the "
                           "'# skips:' lines of tests/conformance/stores/%s.sh)"
                           % (g, b, cell, "is skipped" if b in groups[g] else "runs", b))
    for g in sorted(set(groups) - seen):
        bad.append("group %s (tests/conformance/%s.sh) has no row in docs/testing.md's group table" % (g, g))

# ------------------------------------------------------------------ options
def c_value(v):
    """A C initializer's value: adjacent string literals joined, or the text."""
    lits = re.findall(r'"((?:[^"\\]|\\.)*)"', v)
    if lits:
        return "".join(lits).replace('\\"', '"').replace("\\\\", "\\")
    return v.strip()


def store_options():
    """Every row of every backend's store options table, in the registry's order
    (the folders of cmake/backends.cmake's ik_backend lines, local: first)."""
    folders = ["local"] + [re.search(r"\bDIRS\s+([a-z0-9_]+)", line).group(1) for line in
                           re.findall(r"^ik_backend\((.*?)\)$", read("cmake/backends.cmake"),
                                      re.M | re.S)]
    rows = []
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(src, "src/lib/backends", folder, "*.c"))):
            text = open(path, encoding="utf-8").read()
            for body in re.findall(r"\bik__store_option\s+\w+\[\]\s*=\s*\{(.*?)\n\};", text, re.S):
                for entry in re.findall(r"\{(\s*\.family.*?)\}\s*,", body, re.S):
                    f = {k: c_value(v) for k, v in re.findall(
                        r'\.(\w+)\s*=\s*((?:"(?:[^"\\]|\\.)*"\s*)+|[^,]+)', entry)}
                    f["where"] = os.path.relpath(path, src)
                    rows.append(f)
    return rows


def option_rows(rows):
    out = ["| option | environment | backend | in its URI | value | default | what |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        flag = "%s-%s" % (r["family"], r["name"])
        value = r["metavar"]
        if r["shape"] == "IK__STORE_INT":
            value = "%s, %s..%s" % (r["metavar"], r["min"], r["max"])
        default = "`%s`" % r["def"] if r.get("def") and r["def"] != "NULL" else "none"
        out.append("| `--%s` | `IDKEEPER_%s` | %s | `?%s=` | %s | %s | %s (`%s`) |" % (
            flag, flag.upper().replace("-", "_"), r["family"], r["name"], value, default,
            r["help"].replace("|", "\\|"), r["where"]))
    return "\n".join(out) + "\n"


BEGIN, END = "<!-- store options -->\n", "<!-- end of store options -->\n"
conf_path = os.path.join(src, "docs/configuration.md")
conf = read("docs/configuration.md")
rows = store_options()
if not rows:
    bad.append("no store options found in src/lib/backends/*/*.c (ik__store_option NAME[] = {...})")
elif BEGIN not in conf or END not in conf:
    bad.append("docs/configuration.md has no lines %s and %s around the store options' table"
               % (BEGIN.strip(), END.strip()))
else:
    head, rest = conf.split(BEGIN, 1)
    now, tail = rest.split(END, 1)
    want = option_rows(rows)
    if write:
        with open(conf_path, "w", encoding="utf-8") as f:
            f.write(head + BEGIN + want + END + tail)
        print("docs_code: wrote the %d store options into docs/configuration.md" % len(rows))
    elif now != want:
        bad.append("docs/configuration.md's store options are not the backends' tables' (%d "
                   "rows): run `make docs` (tests/tools/docs_code.py --write)" % len(rows))

for b in bad:
    print("docs_code: " + b, file=sys.stderr)
if not bad:
    print("docs_code: the man page's routes are the route table's; testing.md's groups, "
          "columns (%s) and promise numbers are current; configuration.md's %d store "
          "options are the backends' tables'" % (", ".join(backends), len(rows)))
sys.exit(1 if bad else 0)
