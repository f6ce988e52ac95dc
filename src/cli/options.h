/* options.h: the CLI's option table and its parser, which merges the command line,
 * the environment and an INI config file into one set of checked values.
 *
 * Every option has one long name ("max-batch"), one environment variable
 * (IDKEEPER_MAX_BATCH) and one config key (max-batch, at the top level of the file or
 * in a section named after the command, e.g. [serve]). Precedence, highest first:
 *
 *   command line  >  environment  >  [CMD] section of the file  >  top level of the
 *   file  >  default
 *
 * The parser is pure: it reads the environment and the config file only through the
 * callbacks of an ik_cli_env, so unit tests and fuzzers run it without a process.
 * It checks every value it sees for the options the command takes, including values
 * that a higher source overrides: a broken config file is an error even when a flag
 * hides the broken line.
 *
 * What it deliberately does not do: short options (only -h), option bundling,
 * abbreviations of long names, or a flag that takes its value from the next
 * argument ("--quiet false" is the flag and a positional argument).
 */
#ifndef IK_CLI_OPTIONS_H
#define IK_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

/* Option ids: indexes into the option table (options.c) and bits of a command's
 * option set (IK_OPT_BIT). Adding an option: a name here, a row in the table. */
typedef enum ik_cli_opt_id {
    IK_OPT_CONFIG = 0,
    IK_OPT_COORD,
    IK_OPT_APP,
    IK_OPT_HTTP,
    IK_OPT_IDENTITY,
    IK_OPT_WORKER_RANGE,
    IK_OPT_LAYOUT,
    IK_OPT_EPOCH,
    IK_OPT_SLOT_CHOICE,
    IK_OPT_SLOT_WAIT,
    IK_OPT_MAX_BATCH,
    IK_OPT_MAX_BACKWARD,
    IK_OPT_THREADS,
    IK_OPT_MAX_HEADER_BYTES,
    IK_OPT_IDLE_TIMEOUT,
    IK_OPT_READ_TIMEOUT,
    IK_OPT_MAX_CONNECTIONS,
    IK_OPT_HTTP_TOKEN_FILE,
    IK_OPT_OPEN_LEAF_ROUTES,
    IK_OPT_OPEN_METRICS,
    IK_OPT_QUIET,
    IK_OPT_SHUTDOWN_TIMEOUT,
    IK_OPT_SERVER,
    IK_OPT_COUNT,
    IK_OPT_BATCH,
    IK_OPT_JSON,
    IK_OPT_EXPIRY,
    IK_OPT_KIND,
    IK_OPT_START,
    IK_OPT_STEP,
    IK_OPT_DESCRIPTION,
    IK_OPT_TIMEOUT,
    IK_OPT_GRACE,
    IK_OPT_ID,
    IK_OPT_ONCE,
    IK_OPT_RESP,
    IK_OPT_LOG_SEQUENCE_COMMITS,
    IK_OPT_PASSWORD,
    IK_OPT_PASSWORD_FILE,
    IK_OPT_LEASE_TTL,
    IK_OPT_ALLOW_UNSAFE_STORE,
    IK_OPT_LEAF_NAME,
    IK_OPT_CONTAIN,
    IK_OPT_MAX,
    IK_OPT_SEMAPHORE_LAYOUT,
    IK_OPT_LIST,
    IK_OPT_SEMAPHORES,
    IK_OPT_LEAF_TAKEOVER,
    /* The store options of the registry's backends (--zk-auth, --redis-wait-replicas):
     * rows filled at run time from the backends' tables (store_flags.c), in these
     * slots; a slot no backend fills has no name and is no option. */
    IK_OPT_STORE_FIRST,
    IK_OPT_STORE_LAST = IK_OPT_STORE_FIRST + 11,
    IK_OPT__COUNT
} ik_cli_opt_id;

#define IK_OPT_BIT(id) (UINT64_C(1) << (id))
/* Every store option's slot, for a command's option set. */
#define IK_OPT_STORE_BITS ((IK_OPT_BIT(IK_OPT_STORE_LAST) << 1) - IK_OPT_BIT(IK_OPT_STORE_FIRST))

/* A command's option set is one uint64_t. */
_Static_assert(IK_OPT__COUNT <= 64, "more options than bits in an option set");

/* What a value must look like; the parser checks it and fills n/n2. */
typedef enum ik_cli_kind {
    IK_KIND_FLAG,   /* no value on the command line; else true|false|yes|no|on|off|1|0; n */
    IK_KIND_STRING, /* non-empty text without control characters; at most max bytes
                       if max > 0 */
    IK_KIND_INT,    /* decimal in [min, max]; n */
    IK_KIND_COORD,  /* a coordination URI (ik_coord_uri_check) */
    IK_KIND_APP,    /* an app name (ik__app_name_check, src/lib/rules.h) */
    IK_KIND_ADDR,   /* a listen address (ik__parse_listen, src/lib/rules.h); n = port */
    IK_KIND_URL,    /* http://HOST[:PORT][/PREFIX]; n = port */
    IK_KIND_RANGE,  /* A-B with min <= A <= B <= max; n = A, n2 = B */
    IK_KIND_LAYOUT, /* ik_layout_parse syntax */
    IK_KIND_EPOCH,  /* UNIX_MS or YYYY-MM-DD (ik_layout_parse "epoch=") */
    IK_KIND_CHOICE, /* one of the '|'-separated choices; n = its index */
    IK_KIND_STORE,  /* a backend's store option: checked by its row (rules.h) */
} ik_cli_kind;

/* One row of the option table. */
typedef struct ik_cli_option {
    const char *name; /* long name, without "--"; also the config key */
    const char *env;  /* environment variable */
    ik_cli_kind kind;
    const char *def;     /* default as text (shown in help), or NULL: none */
    const char *metavar; /* placeholder in help ("URI"); NULL for flags */
    const char *help;    /* one line */
    int64_t min, max;    /* IK_KIND_INT and IK_KIND_RANGE bounds; IK_KIND_STRING: max
                            length in bytes (0: any) */
    const char *choices; /* IK_KIND_CHOICE: "random|lowest" */
    const struct ik__store_option *store; /* IK_KIND_STORE: the backend's row */
} ik_cli_option;

/* Where a value came from, lowest precedence first. */
typedef enum ik_cli_source {
    IK_SRC_DEFAULT = 0,
    IK_SRC_FILE,         /* top level of the config file */
    IK_SRC_FILE_SECTION, /* the command's [section] of the config file */
    IK_SRC_ENV,
    IK_SRC_ARGV,
} ik_cli_source;

typedef struct ik_cli_value {
    const char *text; /* NULL: not set and no default; owned by the ik_cli_opts */
    int64_t n, n2;    /* parsed value, per kind */
    ik_cli_source src;
    int line; /* config file line, for IK_SRC_FILE* */
} ik_cli_value;

/* The merged result of one parse. Owns every string it points to, except args,
 * which point into the argv given to ik__cli_parse and live as long as it does. */
typedef struct ik_cli_opts {
    ik_cli_value v[IK_OPT__COUNT];
    int help;  /* --help or -h was given */
    int nargs; /* positional arguments, in order */
    char **args;
    int rest;          /* index in args of the first argument after "--", or -1 */
    char *config_path; /* the config file read, or NULL */
    char err[512];     /* one-line reason after a failed parse */
} ik_cli_opts;

/* The parser's view of the world: an environment lookup and a file reader. */
typedef struct ik_cli_env {
    /* Returns the variable's value or NULL; the value must stay valid until
     * ik__cli_parse returns. */
    const char *(*get)(void *ctx, const char *name);
    /* Reads the whole file at path into a NUL-terminated malloc'd *text (freed
     * by the parser). Returns 0, or -1 with a reason in why. */
    int (*read_file)(void *ctx, const char *path, char **text, char *why, size_t why_len);
    void *ctx;
} ik_cli_env;

/* The option table, IK_OPT__COUNT rows in ik_cli_opt_id order; the store slots are
 * filled by ik__cli_store_rows (which ik__cli_parse calls first). */
extern ik_cli_option ik__cli_options[IK_OPT__COUNT];

/* store_flags.c: fills the store slots of the table from the registry's backends
 * (ik__coord_store_option): row --FAMILY-NAME, variable IDKEEPER_FAMILY_NAME, the
 * backend's metavar, default and help. Idempotent; not thread-safe (the CLI is one
 * thread). 0, or -1 if the backends have more options than the slots (a unit test
 * holds them within). */
int ik__cli_store_rows(void);

/* The process environment: getenv() and a plain file read. */
extern const ik_cli_env ik__cli_env_process;

/* What one command takes: its name (also its config section), its option set
 * (IK_OPT_BIT of each) and the names of every command (the other valid sections). */
typedef struct ik_cli_spec {
    const char *cmd;
    uint64_t allowed;
    const char *const *sections; /* NULL-terminated; NULL: only [cmd] */
} ik_cli_spec;

/* Parses the arguments of command spec->cmd (argv[0] is the first argument after
 * the command name), taking the options in spec->allowed, then the environment,
 * then the config file named by --config or IDKEEPER_CONFIG (if allowed holds
 * IK_OPT_CONFIG), and fills *o. Options the command does not take keep no value:
 * their environment variables are ignored, and so are their keys at the top level
 * of the config file or in other commands' sections. Unknown keys, unknown
 * sections and keys in [cmd] that cmd does not take are errors.
 * Returns 0, or 2 (a usage error) with a one-line reason in o->err that names the
 * source: "--count: ...", "IDKEEPER_COUNT: ...", "FILE:LINE: ...". Once --help is
 * seen, the remaining arguments are not checked and 0 is returned with o->help
 * set. In every case *o must be freed with ik__cli_opts_free(). */
int ik__cli_parse(ik_cli_opts *o, const ik_cli_spec *spec, int argc, char **argv,
                  const ik_cli_env *env);

/* Frees what *o owns; *o may be used again after ik__cli_parse. */
void ik__cli_opts_free(ik_cli_opts *o);

/* Looks an option up by long name; returns its id or -1. */
int ik__cli_option_find(const char *name, size_t len);

/* Writes where option id's value came from ("--layout", "IDKEEPER_LAYOUT",
 * "FILE:LINE", "default") into buf; returns buf. */
const char *ik__cli_source_name(const ik_cli_opts *o, ik_cli_opt_id id, char *buf, size_t len);

/* Splits an http://HOST[:PORT][/PREFIX] URL into its parts: host without the
 * brackets of an IPv6 literal, port (default 80), and the path prefix without a
 * trailing slash (maybe ""). Returns 0, or -1 with a reason in why. */
int ik__cli_parse_url(const char *url, char *host, size_t host_len, int *port, char *prefix,
                      size_t prefix_len, char *why, size_t why_len);

/* Writes a one-line reason into why (len bytes; nothing if why is NULL or len 0),
 * printf-style: the "why" out-parameter of the CLI's parsers and client calls. */
void ik__cli_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
