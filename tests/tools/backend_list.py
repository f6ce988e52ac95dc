"""backend_list.py SRC: docs/architecture.md's "Adding a backend" list held to the
backends of the tree (part of the test structure, tests/tools/structure.sh). Run with
/usr/bin/python3.

The list's numbered items name the files a backend touches outside its folder (bold
paths, NAME, SCHEME and FIXTURE standing for the backend's). Each is held to every
backend there is, local: and each ik_backend() line of cmake/backends.cmake (on or
off in a given build: this reads the tree, not a build):

  cmake/backends.cmake         every folder of src/lib/backends/ but local/ is a
                               folder (DIRS) of one of its lines
  tests/conformance/stores/SCHEME.sh   exists
  docs/NAME.md                 a note docs/*.md has the "Files" tree of each of
                               its folders (a code block that begins with a folder
                               src/lib/backends/X/ and has a line src/lib/backends/
                               FOLDER/; folders.py holds its lines to the folder)
  docs/hazards.md              a "## " section whose title names SCHEME
  README.md                    its first list names SCHEME's URIs (before the first
                               "## ")
  docs/configuration.md        its store options' rows (docs_code.py options)
  tests/fixtures/FIXTURE.sh    exists, for a line with FIXTURE
  scripts/install-deps.sh, debian/control   name the Debian package that ships the
                               client library of a line with PKG or LIB (the .pc
                               file's or the header's, dpkg -S): where it is not
                               installed, said, not failed

An item naming a file this check does not know fails too: a new kind of file to
touch is taught here, so the list and the check stay one. What the list leaves out
is the test structure/backend_add's to find (tests/tools/backend_add.sh adds a
backend through the list's files alone). Prints every finding; exits 1 if one.
"""
import glob
import os
import re
import subprocess
import sys

src = sys.argv[1]
bad = []


def read(path):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        return f.read()


KNOWN = {"cmake/backends.cmake", "tests/conformance/stores/SCHEME.sh", "docs/NAME.md",
         "docs/hazards.md", "README.md", "docs/configuration.md", "tests/fixtures/FIXTURE.sh",
         "scripts/install-deps.sh", "debian/control"}

arch = read("docs/architecture.md")
sec = re.search(r"^## Adding a backend\n(.*?)(?=^## )", arch, re.S | re.M)
items = re.search(r"^Outside it(.*?)^Nothing else", sec.group(1), re.S | re.M) if sec else None
if not items:
    sys.exit("backend_list: docs/architecture.md has no \"Adding a backend\" section with "
             "its list (\"Outside it ...\" to \"Nothing else ...\")")
listed = re.findall(r"\*\*`([^`]+)`\*\*", items.group(1))
for f in sorted(set(listed) - KNOWN):
    bad.append("the list names %s, which tests/tools/backend_list.py cannot hold to the "
               "backends: teach it how, or take it out" % f)
for f in sorted(KNOWN - set(listed)):
    bad.append("the list no longer names %s: take it out of backend_list.py's KNOWN" % f)

# the backends: local: and cmake/backends.cmake's lines
cmake = read("cmake/backends.cmake")
backends = [{"name": "LOCAL", "scheme": "local", "dirs": ["local"], "fixture": None,
             "pkg": None, "lib": None}]
for line in re.findall(r"^ik_backend\((.*?)\)$", cmake, re.M | re.S):
    words = line.split()
    args, key = {}, None
    for w in words[1:]:
        if re.fullmatch(r"[A-Z_]+", w):
            key = w
            args[key] = []
        elif key:
            args[key].append(w.strip('"'))
    backends.append({"name": words[0], "scheme": args.get("SCHEME", ["?"])[0],
                     "dirs": args.get("DIRS", []),
                     "fixture": (args.get("FIXTURE") or [None])[0],
                     "pkg": (args.get("PKG") or [None])[0], "lib": args.get("LIB")})

folders = {os.path.basename(p.rstrip("/"))
           for p in glob.glob(os.path.join(src, "src/lib/backends/*/"))}
named = {d for b in backends for d in b["dirs"]}
for f in sorted(folders - named):
    bad.append("src/lib/backends/%s/ is the folder of no ik_backend() line of "
               "cmake/backends.cmake" % f)

notes = set()
for note in glob.glob(os.path.join(src, "docs", "*.md")):
    text = open(note, encoding="utf-8").read()
    # the code blocks, fence to fence (a fence may carry a language)
    for block in re.split(r"^```.*\n", text, flags=re.M)[1::2]:
        if block.startswith("src/lib/backends/"):
            notes.update(re.findall(r"^(src/lib/backends/[a-z0-9_]+/)", block, re.M))
hazards = [t for t in re.findall(r"^## (.*)$", read("docs/hazards.md"), re.M)]
readme = read("README.md").split("\n## ", 1)[0]
deps = read("scripts/install-deps.sh")
control = read("debian/control")


def owner(paths):
    """The Debian package that ships the first of paths there is, or None."""
    for p in paths:
        for hit in glob.glob(p):
            try:
                out = subprocess.run(["dpkg", "-S", hit], capture_output=True, text=True,
                                     check=False).stdout
            except OSError:
                return None
            m = re.match(r"([a-z0-9.+-]+)(:[a-z0-9]+)?: ", out)
            if m:
                return m.group(1)
    return None


notes_unchecked = []
for b in backends:
    s = b["scheme"]
    if not os.path.exists(os.path.join(src, "tests/conformance/stores/%s.sh" % s)):
        bad.append("%s: no tests/conformance/stores/%s.sh" % (b["name"], s))
    for d in b["dirs"]:
        if "src/lib/backends/%s/" % d not in notes:
            bad.append("%s: no note (docs/*.md) has the \"Files\" tree of src/lib/backends/%s/"
                       % (b["name"], d))
    if not any(re.search(r"\b%s:" % re.escape(s), h) for h in hazards):
        bad.append("%s: docs/hazards.md has no section (\"## ...\") naming %s:" % (b["name"], s))
    if not re.search(r"`%s:" % re.escape(s), readme):
        bad.append("%s: README.md's first list does not name its URI (`%s:...`)" % (b["name"], s))
    if b["fixture"] and not os.path.exists(os.path.join(src, "tests/fixtures/%s.sh" % b["fixture"])):
        bad.append("%s: no tests/fixtures/%s.sh (its FIXTURE)" % (b["name"], b["fixture"]))
    if b["pkg"]:
        pkg = owner(["/usr/lib/*/pkgconfig/%s.pc" % b["pkg"], "/usr/share/pkgconfig/%s.pc" % b["pkg"]])
    elif b["lib"]:
        pkg = owner(["/usr/include/%s" % b["lib"][1]])
    else:
        continue
    if not pkg:
        notes_unchecked.append(b["name"])
        continue
    for path, text in (("scripts/install-deps.sh", deps), ("debian/control", control)):
        if not re.search(r"(?<![a-z0-9.+-])%s(?![a-z0-9.+-])" % re.escape(pkg), text):
            bad.append("%s: %s does not name %s, the package of its client library"
                       % (b["name"], path, pkg))

for m in bad:
    print("backend_list: " + m, file=sys.stderr)
if bad:
    sys.exit(1)
print("backend_list: docs/architecture.md's Adding a backend list (%d files) holds for the %d "
      "backends (%s)%s" % (len(set(listed)), len(backends),
                          ", ".join(b["scheme"] for b in backends),
                          "; client package not installed, not checked: " +
                          ", ".join(notes_unchecked) if notes_unchecked else ""))
