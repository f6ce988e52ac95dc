/* main.c: `idkeeper <command>`: the command table, help, and the dispatch that
 * parses a command's options (options.h) before its handler runs. */
#include "cli.h"
#include "commands.h"

#include "../lib/rules.h" /* the registry's backends, for --coord's help */

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmd_help(const ik_cli_command *cmd, ik_cli_opts *o);

/* The commands. Adding one: a handler in cmd_NAME.c, declared in cli.h, and a row. */
static const ik_cli_command commands[] = {
    {"serve", ik__cmd_serve, "run the daemon: IDs over HTTP, holding a worker slot",
     "serve [--coord URI] [--app NAME] [--http ADDR:PORT] [--config FILE] [OPTIONS]",
     "Takes a worker slot of the app's range on the backend and serves the HTTP API until\n"
     "SIGTERM or SIGINT, then releases the slot and exits 0. Refuses to start (non-zero\n"
     "exit, one line on stderr) on a bad option, a layout that runs out within 10 years,\n"
     "or no free slot.",
     IK_OPTS_SERVE},
    {"next", ik__cmd_next, "fetch IDs from a running server, one a line",
     "next [--server URL] [--count N] [snowflake | segment TAG | sequence TAG]",
     "Asks a running `idkeeper serve` for N IDs (default 1) of the given kind (default\n"
     "snowflake) and prints them one a line, in the order issued. Large counts are fetched\n"
     "in batches of --batch over one keep-alive connection. If the server refuses, prints\n"
     "its message and exits 1; the IDs printed before that are valid.",
     IK_OPTS_NEXT},
    {"decode", ik__cmd_decode, "show the time, worker and sequence inside IDs",
     "decode [--layout SPEC] [--epoch MS] [--json] [--expiry] [ID... | -]",
     "Prints one line per ID: id, time (ISO 8601 UTC), time_ms (Unix ms), worker and\n"
     "sequence as key=value pairs, or one JSON object a line with --json. '-' reads IDs\n"
     "from stdin, one a line. The layout must be the server's (same --layout and --epoch).\n"
     "With --expiry, or without IDs, prints the date on which the layout runs out.",
     IK_OPTS_DECODE},
    {"workers", ik__cmd_workers, "list the worker slots of an app and their holders",
     "workers [--coord URI] [--app NAME] [--json]",
     "Lists every slot the app has used: worker number, state (held or free), the\n"
     "holder's identity, since when it holds it, the time record (the highest time issued\n"
     "under it, persisted), and backend details (pid, session).",
     IK_OPTS_WORKERS},
    {"tags", ik__cmd_tags, "manage the segment and sequence tags of an app",
     "tags list | show TAG | add TAG --kind KIND [--start N] [--step N] [--description TEXT]",
     "Works on the backend directly (no server needed). Tags must exist before a server\n"
     "hands out their IDs (idkeeper next segment|sequence TAG).\n"
     "  list       every tag of the app, by name: kind, start, step, max_id (the next ID no\n"
     "             server has taken), last update, description\n"
     "  show TAG   one tag, in the same fields\n"
     "  add TAG    creates TAG (1 to 128 bytes of A-Z a-z 0-9 . _ : -) and prints it as show\n"
     "             does. --kind is required; --start (default 1) is the first ID; --step\n"
     "             (segment only, default 1000) the smallest block a server takes at once.\n"
     "--kind, --start, --step and --description belong to add: on the command line of\n"
     "list or show they are an error, from the environment or a config file they are\n"
     "ignored there.\n"
     "Exit codes: 0 done, 1 failed (backend unreachable), 2 bad usage (nothing changed),\n"
     "3 add: the tag exists already (nothing changed), 4 show: no such tag.",
     IK_OPTS_TAGS},
    {"lock", ik__cmd_lock, "run a command while holding a lock",
     "lock [--coord URI] [--timeout MS] [--grace MS] PATH -- CMD [ARG...]",
     "Waits for the lock at PATH (first come, first served), runs CMD with\n"
     "IDKEEPER_LOCK_PATH, IDKEEPER_FENCE (the grant's fencing token, increasing with each\n"
     "grant) and IDKEEPER_LOCK_NODE (the ZooKeeper node or local file held) in its\n"
     "environment, releases the lock when CMD exits and exits with CMD's code. CMD runs in\n"
     "its own process group; TERM, INT, HUP and QUIT are passed on to it. If the lock is\n"
     "lost while CMD runs (zk://: the session expired), CMD gets SIGTERM, SIGKILL --grace\n"
     "ms later (default a sixth of the ZooKeeper session timeout, at most a quarter, so\n"
     "that CMD is gone before anyone else can hold the lock). CMD starts only while the\n"
     "lock is held: lost before CMD started, it exits 125 and CMD never runs.\n"
     "CMD runs under a guardian that sees its whole process tree (setsid included): the\n"
     "lock is released only once nothing of it runs. After CMD exits, or a signal passed\n"
     "on, the rest has --grace ms (local: default 2000) before SIGKILL; if idkeeper is\n"
     "killed, the guardian kills the tree at once.\n"
     "--timeout counts from the moment the store is open and checked; the open has the\n"
     "store's bounds (zk://: the session timeout T to connect, max(T/3, 2 s) to check).\n"
     "On zk:// PATH is the ZooKeeper path that Curator's InterProcessMutex and\n"
     "kazoo's Lock use; on local: the lock holds between the processes of one host.\n"
     "Exit codes: CMD's own; 124 gave up waiting (--timeout), CMD never ran; 125 the lock\n"
     "was lost (CMD was stopped, or never started); 126 CMD cannot be run; 127 CMD not\n"
     "found; 1 the backend failed before CMD ran; 2 bad usage (a --grace too long for the\n"
     "session timeout included); 128+N a signal N ended the wait.",
     IK_OPTS_LOCK},
    {"elect", ik__cmd_elect, "run a command only while this process leads",
     "elect [--coord URI] [--id TEXT] [--once] [--grace MS] PATH -- CMD [ARG...]",
     "Campaigns for leadership at PATH (Curator LeaderLatch's protocol on zk://) and runs\n"
     "CMD while this process leads, with IDKEEPER_ELECT_PATH, IDKEEPER_ELECT_ID and\n"
     "IDKEEPER_FENCE in its environment. If leadership is lost, CMD gets SIGTERM (SIGKILL\n"
     "--grace ms later: as for lock) and idkeeper campaigns again, or exits 125 with\n"
     "--once (also when leadership is lost before CMD started). When CMD\n"
     "exits by itself, idkeeper resigns and exits with CMD's code. TERM, INT, HUP and QUIT\n"
     "are passed on to CMD while it runs; before that they end the campaign (128+N).\n"
     "CMD's process tree is handled as for lock: nothing of it runs when idkeeper\n"
     "resigns, campaigns again or dies.",
     IK_OPTS_ELECT},
    {"semaphore", ik__cmd_semaphore, "run a command while holding one of N leases",
     "semaphore [--coord URI] --max N [--timeout MS] [--grace MS] PATH -- CMD [ARG...] | "
     "--list PATH",
     "Waits for a lease of the semaphore at PATH, of which at most --max N are held at once\n"
     "(first come, first served; a lease given back wakes the one waiter at the head of\n"
     "the queue), runs CMD with IDKEEPER_SEMAPHORE_PATH, IDKEEPER_SEMAPHORE_NODE (the lease\n"
     "node, key, slot or file held), IDKEEPER_SEMAPHORE_MAX and IDKEEPER_FENCE (the lease's\n"
     "fencing token, increasing with each lease granted on PATH) in its environment, gives\n"
     "the lease back when CMD's tree is gone and exits with CMD's code. A lease is held as\n"
     "lock holds a lock: CMD's tree, the signals passed on, --grace, --contain, a lease lost\n"
     "while CMD runs (exit 125) and --timeout (exit 124) work as they do there.\n"
     "Every user of PATH must give the same N: the max stored with the semaphore at its\n"
     "first use is checked, and another is refused (exit 2, naming both).\n"
     "On zk:// PATH is the path Curator's InterProcessSemaphoreV2 is given, and its nodes\n"
     "are Curator's (PATH/locks, PATH/leases); with --semaphore-layout kazoo they are kazoo's\n"
     "Semaphore's (PATH-__lock__, leases under PATH, the max as PATH's data). Each layout's\n"
     "leases count against one limit with its library's; Curator's and kazoo's do not mix.\n"
     "--list prints the stored max and the leases held (--json: as one object).\n"
     "Exit codes: as lock's; 2 also for a --max other than the one stored.",
     IK_OPTS_SEMAPHORE},
    {"schema", ik__cmd_schema, "print the SQL schema of a mysql:// or postgresql:// store",
     "schema --coord URI",
     "Prints the CREATE TABLE statements that idkeeper runs (IF NOT EXISTS) on first use of\n"
     "the database of URI, in its dialect, for a DBA who creates the tables by hand:\n"
     "Leaf's leaf_alloc, and idkeeper's idk_tag_kind, idk_slots, idk_fence and idk_holder\n"
     "(docs/sql.md). Connects to nothing.",
     IK_OPTS_SCHEMA},
    {"check", ik__cmd_check, "check that a store keeps every acknowledged write and lease",
     "check --coord URI [--allow-unsafe-store] [--json]",
     "Connects to the store as `serve` would and runs every hazard check of its backend\n"
     "(docs/hazards.md): each setting that could lose an acknowledged write, a lease or a\n"
     "lock. Prints a table: the check, the value found, the verdict (ok; refused: serve\n"
     "would not write; risk: accepted by --allow-unsafe-store, or unverifiable) and what\n"
     "to change. --json prints the same as one JSON object.\n"
     "Exit codes: 0 every check ok (serve starts with every guarantee); 5 a check is\n"
     "refused or a risk; 1 the store cannot be reached; 2 bad usage.",
     IK_OPTS_CHECK},
    {"version", ik__cmd_version, "print the versions of idkeeper and of its libraries", "version",
     NULL, IK_OPTS_VERSION},
    {"help", cmd_help, "explain idkeeper or one of its commands", "help [COMMAND | store-options]",
     "store-options: every backend's own options (--zk-auth, ...) of this build.", IK_OPTS_HELP},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])
#define IK_COUNT_ONE(name, opts) +1 /* NOLINT(bugprone-macro-parentheses): a term of a sum */
_Static_assert(NCOMMANDS == 0 IK_CLI_COMMANDS(IK_COUNT_ONE),
               "every command of the table is listed in commands.h (IK_CLI_COMMANDS)");

/* Every command name: the valid sections of the config file. */
static const char *section_names[NCOMMANDS + 1];

static const ik_cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

void ik__cli_fail(const ik_cli_command *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "idkeeper: %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int ik__cli_no_args(const ik_cli_command *cmd, const ik_cli_opts *o)
{
    if (o->nargs == 0) return 0;
    ik__cli_fail(cmd, "unexpected argument '%s' (usage: idkeeper %s)", o->args[0], cmd->usage);
    return IK_EXIT_USAGE;
}

static void print_overview(FILE *f)
{
    fprintf(f, "usage: idkeeper <command> [options] [arguments]\n\n"
               "idkeeper hands out 64-bit IDs that are unique across a fleet, and the worker\n"
               "slots they need, on a local: or zk:// backend.\n\nCommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nEvery option can also be set in the environment (IDKEEPER_<NAME>, dashes as\n"
               "underscores, e.g. IDKEEPER_COORD) and in an INI config file (--config FILE or\n"
               "IDKEEPER_CONFIG; keys are option names, at the top level or in a [command]\n"
               "section). The command line wins over the environment, which wins over the file.\n"
               "\nExit codes: 0 success, 1 the command failed, 2 bad usage or configuration;\n"
               "tags also exits 3 for a tag that exists already and 4 for one that does not;\n"
               "lock and elect pass CMD's code on, and exit 124 (timeout) or 125 (lost).\n"
               "Run 'idkeeper help COMMAND' or 'idkeeper COMMAND --help' for its options.\n");
}

/* Prints "  HEAD  TEXT", TEXT wrapped at spaces to keep lines within 96 columns. */
static void print_wrapped(FILE *f, const char *head, const char *text)
{
    const int indent = 31, width = 96;
    fprintf(f, "  %-28s ", head);
    int col = indent;
    while (*text) {
        size_t w = strcspn(text, " ");
        if (col > indent && col + 1 + (int)w > width) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fwrite(text, 1, w, f);
        col += (int)w;
        text += w;
        text += strspn(text, " ");
    }
    fputc('\n', f);
}

void ik__cli_print_command_help(const ik_cli_command *cmd, FILE *f)
{
    fprintf(f, "usage: idkeeper %s\n\n%c%s.\n", cmd->usage, toupper((unsigned char)cmd->summary[0]),
            cmd->summary + 1);
    if (cmd->details) fprintf(f, "\n%s\n", cmd->details);
    if (!cmd->options) return;
    fprintf(f, "\nOptions (each also IDKEEPER_<NAME> in the environment, or a config key):\n");
    for (int i = 0; i < IK_OPT__COUNT; i++) {
        const ik_cli_option *op = &ik__cli_options[i];
        if (!(cmd->options & IK_OPT_BIT(i)) || !op->name) continue; /* an empty store slot */
        char head[64];
        snprintf(head, sizeof head, "--%s%s%s", op->name, op->metavar ? " " : "",
                 op->metavar ? op->metavar : "");
        char help[1024];
        if (op->kind == IK_KIND_STORE) /* a backend's own: which one */
            snprintf(help, sizeof help, "the %s backend's: %s", op->store->family, op->help);
        else
            snprintf(help, sizeof help, "%s", op->help);
        char rows[512] = ""; /* a row's text that ends in ':': the registry's list follows */
        if (i == IK_OPT_COORD) ik__coord_uri_forms(rows, sizeof rows);
        if (i == IK_OPT_SLOT_WAIT) ik__coord_slot_frees(rows, sizeof rows, 0);
        if (i == IK_OPT_LEASE_TTL) ik__coord_slot_frees(rows, sizeof rows, 1);
        if (i == IK_OPT_PASSWORD) ik__coord_password_schemes(rows, sizeof rows);
        if (rows[0]) {
            size_t n = strlen(help);
            snprintf(help + n, sizeof help - n, " %s", rows);
        }
        print_wrapped(f, head, help);
        fprintf(f, "  %-28s %s%s%s%s\n", "", op->def && op->kind != IK_KIND_FLAG ? "default " : "",
                op->def && op->kind != IK_KIND_FLAG ? op->def : "",
                op->def && op->kind != IK_KIND_FLAG ? ", " : "", op->env);
    }
    fprintf(f, "  %-28s %s\n", "--help", "this help");
}

static int cmd_help(const ik_cli_command *cmd, ik_cli_opts *o)
{
    if (o->nargs == 0) {
        print_overview(stdout);
        return IK_EXIT_OK;
    }
    if (o->nargs > 1) {
        ik__cli_fail(cmd, "unexpected argument '%s' (usage: idkeeper %s)", o->args[1], cmd->usage);
        return IK_EXIT_USAGE;
    }
    if (strcmp(o->args[0], "store-options") == 0) {
        char names[256] = ""; /* the commands that take them */
        size_t used = 0;
        for (size_t i = 0; i < NCOMMANDS && used < sizeof names; i++)
            if (commands[i].options & IK_OPT_BIT(IK_OPT_STORE_FIRST))
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                         used ? ", " : "", commands[i].name);
        ik__cli_print_store_options(stdout, names);
        return IK_EXIT_OK;
    }
    const ik_cli_command *c = find_command(o->args[0]);
    if (!c) {
        ik__cli_fail(cmd, "unknown command '%s' (see idkeeper help)", o->args[0]);
        return IK_EXIT_USAGE;
    }
    ik__cli_print_command_help(c, stdout);
    return IK_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "idkeeper: no command given (see idkeeper help)\n");
        return IK_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    else if (strcmp(name, "--version") == 0)
        name = "version";
    const ik_cli_command *cmd = find_command(name);
    if (!cmd) {
        fprintf(stderr, "idkeeper: unknown command '%s' (see idkeeper help)\n", name);
        return IK_EXIT_USAGE;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        section_names[i] = commands[i].name;
    ik_cli_spec spec = {cmd->name, cmd->options, section_names};
    ik_cli_opts o;
    int rc = ik__cli_parse(&o, &spec, argc - 2, argv + 2, &ik__cli_env_process);
    if (rc != 0) {
        ik__cli_fail(cmd, "%s", o.err);
    } else if (o.help) {
        ik__cli_print_command_help(cmd, stdout);
    } else {
        rc = cmd->run(cmd, &o);
    }
    ik__cli_opts_free(&o);
    if (fflush(stdout) != 0 && rc == 0) rc = IK_EXIT_FAIL;
    return rc;
}
