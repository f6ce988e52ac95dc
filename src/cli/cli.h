/* cli.h: the subcommand table of `idkeeper` and what its handlers share.
 *
 * A command is one row of the table in main.c (name, handler, one-line help,
 * usage, details, option set) and one handler in cmd_NAME.c. main() parses the
 * options of the row (options.h) and calls the handler; the handler prints its
 * results to stdout and its one-line failure reason with ik__cli_fail(), and
 * returns the process exit code.
 */
#ifndef IK_CLI_H
#define IK_CLI_H

#include "idkeeper.h"
#include "options.h"

#include <stdint.h>
#include <stdio.h>

/* Exit codes of every command. */
enum {
    IK_EXIT_OK = 0,
    IK_EXIT_FAIL = 1,     /* the command ran and failed (server error, bad ID, ...) */
    IK_EXIT_USAGE = 2,    /* bad command line, environment or config file: nothing ran */
    IK_EXIT_EXISTS = 3,   /* tags add: the tag exists already; nothing was changed */
    IK_EXIT_NOTFOUND = 4, /* tags show: no such tag */
    IK_EXIT_UNSAFE = 5,   /* check: a store setting is refused or only a risk */
};

typedef struct ik_cli_command ik_cli_command;

/* Runs a command whose options have been parsed into *o. Returns the exit code. */
typedef int (*ik_cli_handler)(const ik_cli_command *cmd, ik_cli_opts *o);

struct ik_cli_command {
    const char *name;
    ik_cli_handler run;
    const char *summary; /* one line, for `idkeeper help` */
    const char *usage;   /* after "idkeeper ": "next [--server URL] ..." */
    const char *details; /* paragraphs for `idkeeper help CMD`, or NULL */
    uint64_t options;    /* IK_OPT_BIT of each option it takes */
};

/* Prints "idkeeper: CMD: <reason>" and a newline to stderr. */
void ik__cli_fail(const ik_cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* For commands without positional arguments: returns 0, or prints a usage error
 * about the first one and returns IK_EXIT_USAGE. */
int ik__cli_no_args(const ik_cli_command *cmd, const ik_cli_opts *o);

/* Prints the full help of cmd (usage, details, options) to f. */
void ik__cli_print_command_help(const ik_cli_command *cmd, FILE *f);

/* ---- the store (store.c) ---- */

/* Reads a secret, the first line of the file at path without surrounding blanks,
 * into out (cap bytes). what names it in messages ("password", "token"). Returns 0,
 * or -1 with a one-line reason in why (cannot read, empty, cap or longer); the
 * secret never goes into why. */
int ik__cli_read_secret(const char *path, const char *what, char *out, size_t cap, char *why,
                        size_t why_len);

/* What ik_coord_options points into besides the parsed options: the password read
 * from --password-file, and the store options' "NAME=VALUE" list. Wipe it
 * (ik__cli_store_args_wipe) once the coord is open (it may hold a password). */
typedef struct ik__cli_store_args {
    char password[1024];
    const char *list[16];
    char text[2048];
} ik__cli_store_args;

/* Fills *co from the store options of o (IK_STORE_OPTS in commands.h): defaults,
 * then the lease TTL, unsafe-store and Leaf values, the store options of --coord's
 * backend that were given (store_flags.c), and the password of --password-file
 * (read into a->password), else of --password. Returns 0, or -1 with why set when
 * the password file cannot be read. *co points into o and *a: use it while both
 * live. */
int ik__cli_coord_options(const ik_cli_opts *o, ik_coord_options *co, ik__cli_store_args *a,
                          char *why, size_t why_len);
void ik__cli_store_args_wipe(ik__cli_store_args *a);

/* store_flags.c: `idkeeper help store-options`: what they are, then each of this
 * build's, "--NAME METAVAR (VARIABLE)" and one line (a tab first) saying its scheme,
 * query key, help, range and default; an empty line before each. commands: those
 * that take them ("serve, workers"). man/backends.cmake reads this form. */
void ik__cli_print_store_options(FILE *f, const char *commands);

/* store_flags.c: the store options given in o (not their defaults) that belong to
 * uri's backend, as "NAME=VALUE" into list (cap entries, the NULL included; the
 * texts in buf). 0, or -1 if they do not fit. */
int ik__cli_store_options(const ik_cli_opts *o, const char *uri, const char **list, size_t cap,
                          char *buf, size_t buf_len);

/* Opens the store of --coord with ik__cli_coord_options. Returns 0, or prints
 * "cannot open URI: why" (the URI without its password) and returns
 * IK_EXIT_USAGE (malformed URI, unreadable password file) or IK_EXIT_FAIL. */
int ik__cli_open_coord(const ik_cli_command *cmd, const ik_cli_opts *o, ik_coord **c);
/* The same, with check_only (ik_coord_options): the store opens even where a
 * setting of it would be refused, for `idkeeper check` to report on. */
int ik__cli_open_coord_as(const ik_cli_command *cmd, const ik_cli_opts *o, int check_only,
                          ik_coord **c);
/* For lock and elect: ik__cli_open_coord, tried again while the store cannot be
 * reached (IK_ESTORE: down, frozen, without a leader) for up to wait_ms (-1: for as
 * long as it takes), saying so once on stderr in the store's words; any other
 * failure (a bad URI, IK_EDENIED, an unsafe store) ends it at once. */
int ik__cli_open_coord_waiting(const ik_cli_command *cmd, const ik_cli_opts *o, int64_t wait_ms,
                               ik_coord **c);

/* The reason of a call on c that failed with err and has no why of its own: the
 * store's own (ik_coord_last_error: the path, the errno, what to change) where err
 * is a store failure and the store has one, else ik_strerror(err). Into buf; returns
 * buf. */
const char *ik__cli_store_why(const ik_coord *c, int err, char *buf, size_t len);

/* For lock and elect: 0 if c's backend offers locks; else prints the backend's
 * reason (redis://: no fencing under failover, which backends to use), closes c
 * and returns IK_EXIT_FAIL. */
int ik__cli_locks_offered(const ik_cli_command *cmd, ik_coord *c);

/* The handlers, one per cmd_NAME.c. */
int ik__cmd_serve(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_next(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_decode(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_workers(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_tags(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_lock(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_elect(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_semaphore(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_schema(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_version(const ik_cli_command *cmd, ik_cli_opts *o);
int ik__cmd_check(const ik_cli_command *cmd, ik_cli_opts *o);

#endif
