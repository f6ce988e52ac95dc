"""dicts_check.py SRC: the dictionaries of the option parser's fuzz drivers name the
whole table (part of the test structure, tests/tools/structure.sh), so that a new
option is fuzzed by its name from the start. Run with /usr/bin/python3.

  cli.dict     every command of src/cli/commands.h (IK_CLI_COMMANDS), and for every
               row of src/cli/options.c's table "--NAME", "--NAME=" and
               "IDKEEPER_ID=" (the command line and the environment, fuzz_cli.c)
  config.dict  every command as "[NAME]", and every row as "NAME" and "NAME = " (the
               INI file, fuzz_config.c)

The backends' store options (their rows filled at run time, store_flags.c) are not
required. Prints every finding and exits 1 if there is one.
"""
import os
import re
import sys

src = sys.argv[1]


def read(path):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        return f.read()


def entries(path):
    """A libFuzzer dictionary's quoted entries, escapes as written."""
    return set(re.findall(r'^\s*(?:\w+=)?"(.*)"\s*$', read(path), re.M))


rows = re.findall(r'\bROW\(\s*([A-Z0-9_]+),\s*"([a-z0-9-]+)"', read("src/cli/options.c"))
cmds = re.findall(r"\bX\((\w+),", read("src/cli/commands.h"))
bad = []
if not rows:
    bad.append("src/cli/options.c: no ROW(ID, \"name\", ...) rows found")
if not cmds:
    bad.append("src/cli/commands.h: no X(name, OPTIONS) commands found")
cli, config = entries("tests/fuzz/cli.dict"), entries("tests/fuzz/config.dict")
for ident, name in rows:
    for want in ("--" + name, "--" + name + "=", "IDKEEPER_" + ident + "="):
        if want not in cli:
            bad.append('tests/fuzz/cli.dict lacks "%s" (option --%s)' % (want, name))
    for want in (name, name + " = "):
        if want not in config:
            bad.append('tests/fuzz/config.dict lacks "%s" (option --%s)' % (want, name))
for cmd in cmds:
    if cmd not in cli:
        bad.append('tests/fuzz/cli.dict lacks "%s" (a command)' % cmd)
    if "[%s]" % cmd not in config:
        bad.append('tests/fuzz/config.dict lacks "[%s]" (a command)' % cmd)
for b in bad:
    print("dicts_check: " + b)
sys.exit(1 if bad else 0)
