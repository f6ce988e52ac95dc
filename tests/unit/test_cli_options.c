/* test_cli_options.c: the CLI's option parser without a process: precedence of
 * command line > environment > config file > default, the sources named in errors,
 * --name=value, flags, unknown options and keys, config sections, the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "options.h"
#include "output.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fake world: an environment and a set of files ----------------------- */

typedef struct fake {
    const char *env[16][2];
    const char *files[4][2];
} fake;

static const char *fake_get(void *ctx, const char *name)
{
    fake *f = ctx;
    for (int i = 0; i < 16 && f->env[i][0]; i++)
        if (strcmp(f->env[i][0], name) == 0) return f->env[i][1];
    return NULL;
}

static int fake_read(void *ctx, const char *path, char **text, char *why, size_t why_len)
{
    fake *f = ctx;
    for (int i = 0; i < 4 && f->files[i][0]; i++) {
        if (strcmp(f->files[i][0], path) == 0) {
            *text = strdup(f->files[i][1]);
            return *text ? 0 : -1;
        }
    }
    snprintf(why, why_len, "No such file or directory");
    return -1;
}

static const char *const sections[] = {"serve", "next", "decode", "workers", "tags", NULL};

#define SERVE_OPTS                                                                                 \
    (IK_OPT_BIT(IK_OPT_CONFIG) | IK_OPT_BIT(IK_OPT_COORD) | IK_OPT_BIT(IK_OPT_APP) |               \
     IK_OPT_BIT(IK_OPT_HTTP) | IK_OPT_BIT(IK_OPT_IDENTITY) | IK_OPT_BIT(IK_OPT_WORKER_RANGE) |     \
     IK_OPT_BIT(IK_OPT_LAYOUT) | IK_OPT_BIT(IK_OPT_EPOCH) | IK_OPT_BIT(IK_OPT_SLOT_CHOICE) |       \
     IK_OPT_BIT(IK_OPT_MAX_BATCH) | IK_OPT_BIT(IK_OPT_MAX_BACKWARD) | IK_OPT_BIT(IK_OPT_QUIET) |   \
     IK_OPT_STORE_BITS)

/* Parses argv (NULL-terminated) as `serve` would, in the world f. */
static int parse(ik_cli_opts *o, fake *f, const char *const *argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    ik_cli_spec spec = {"serve", SERVE_OPTS, sections};
    ik_cli_env env = {fake_get, fake_read, f};
    return ik__cli_parse(o, &spec, argc, (char **)argv, &env);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NOARGS ((const char *const[]){NULL})

static void assert_err_has(const ik_cli_opts *o, const char *needle)
{
    if (!strstr(o->err, needle)) fail_msg("error '%s' does not contain '%s'", o->err, needle);
}

/* ---- tests ----------------------------------------------------------------- */

static void defaults_apply(void **state)
{
    fake f = {0};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f, NOARGS), 0);
    assert_string_equal(o.v[IK_OPT_COORD].text, "local:./idkeeper-data");
    assert_string_equal(o.v[IK_OPT_APP].text, "default");
    assert_string_equal(o.v[IK_OPT_HTTP].text, "127.0.0.1:8080");
    assert_int_equal(o.v[IK_OPT_HTTP].n, 8080);
    assert_int_equal(o.v[IK_OPT_MAX_BATCH].n, 10000);
    assert_int_equal(o.v[IK_OPT_MAX_BACKWARD].n, 5);
    assert_int_equal(o.v[IK_OPT_QUIET].n, 0);
    assert_int_equal(o.v[IK_OPT_COORD].src, IK_SRC_DEFAULT);
    assert_null(o.v[IK_OPT_IDENTITY].text);
    assert_null(o.v[IK_OPT_COUNT].text); /* not a serve option */
    assert_int_equal(o.nargs, 0);
    assert_int_equal(o.rest, -1);
    ik__cli_opts_free(&o);
}

static void precedence_argv_env_file_default(void **state)
{
    fake f = {.env = {{"IDKEEPER_CONFIG", "c.ini"}, {"IDKEEPER_APP", "from-env"}},
              .files = {{"c.ini", "app = from-file\nidentity = file-id\n"}}};
    ik_cli_opts o;
    /* all three: the command line wins */
    assert_int_equal(parse(&o, &f, ARGS("--app", "from-argv")), 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "from-argv");
    assert_int_equal(o.v[IK_OPT_APP].src, IK_SRC_ARGV);
    assert_string_equal(o.v[IK_OPT_IDENTITY].text, "file-id");
    assert_int_equal(o.v[IK_OPT_IDENTITY].src, IK_SRC_FILE);
    assert_int_equal(o.v[IK_OPT_IDENTITY].line, 2);
    ik__cli_opts_free(&o);
    /* environment and file: the environment wins */
    assert_int_equal(parse(&o, &f, NOARGS), 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "from-env");
    assert_int_equal(o.v[IK_OPT_APP].src, IK_SRC_ENV);
    ik__cli_opts_free(&o);
    /* file only */
    f.env[1][0] = NULL;
    assert_int_equal(parse(&o, &f, NOARGS), 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "from-file");
    assert_int_equal(o.v[IK_OPT_APP].src, IK_SRC_FILE);
    assert_int_equal(o.v[IK_OPT_APP].line, 1);
    ik__cli_opts_free(&o);
    /* no file: the default */
    f.env[0][0] = NULL;
    assert_int_equal(parse(&o, &f, NOARGS), 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "default");
    assert_null(o.config_path);
    ik__cli_opts_free(&o);
}

static void config_flag_beats_config_env(void **state)
{
    fake f = {.env = {{"IDKEEPER_CONFIG", "env.ini"}},
              .files = {{"env.ini", "app = env-file\n"}, {"argv.ini", "app = argv-file\n"}}};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f, ARGS("--config=argv.ini")), 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "argv-file");
    assert_string_equal(o.config_path, "argv.ini");
    ik__cli_opts_free(&o);
}

static void equals_and_space_forms(void **state)
{
    fake f = {0};
    ik_cli_opts o;
    assert_int_equal(
        parse(&o, &f, ARGS("--max-batch=77", "--http", "[::1]:9000", "--quiet", "--identity=a=b")),
        0);
    assert_int_equal(o.v[IK_OPT_MAX_BATCH].n, 77);
    assert_int_equal(o.v[IK_OPT_HTTP].n, 9000);
    assert_int_equal(o.v[IK_OPT_QUIET].n, 1);
    assert_string_equal(o.v[IK_OPT_IDENTITY].text, "a=b");
    ik__cli_opts_free(&o);
    /* the last of a repeated option wins; a flag takes =false */
    assert_int_equal(parse(&o, &f, ARGS("--quiet", "--quiet=false", "--app", "a", "--app=b")), 0);
    assert_int_equal(o.v[IK_OPT_QUIET].n, 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "b");
    ik__cli_opts_free(&o);
}

static void bad_values_name_their_source(void **state)
{
    fake f = {.files = {{"c.ini", "# comment\n[serve]\nmax-batch = 0\n"}}};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f, ARGS("--max-batch", "0")), 2);
    assert_err_has(&o, "--max-batch: 0 is out of range 1..1000000");
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--max-batch=abc")), 2);
    assert_err_has(&o, "--max-batch: 'abc' is not a number");
    ik__cli_opts_free(&o);

    f.env[0][0] = "IDKEEPER_MAX_BATCH";
    f.env[0][1] = "12x";
    assert_int_equal(parse(&o, &f, NOARGS), 2);
    assert_err_has(&o, "IDKEEPER_MAX_BATCH: '12x' is not a number");
    ik__cli_opts_free(&o);
    f.env[0][0] = NULL;

    assert_int_equal(parse(&o, &f, ARGS("--config", "c.ini")), 2);
    assert_err_has(&o, "c.ini:3: max-batch: 0 is out of range");
    ik__cli_opts_free(&o);

    /* a broken file is an error even where a flag overrides the line */
    assert_int_equal(parse(&o, &f, ARGS("--config", "c.ini", "--max-batch", "5")), 2);
    assert_err_has(&o, "c.ini:3:");
    ik__cli_opts_free(&o);
}

static void bad_values_of_each_kind(void **state)
{
    static const char *const bad[][2] = {
        {"--app", "has space"},
        {"--app", "x/y"},
        {"--http", "8080"},
        {"--http", "::1:8080"},
        {"--http", "host:65536"},
        {"--app", "."},
        {"--app", ".."},
        {"--coord", "nosuch:thing"},
        {"--worker-range", "5-3"},
        {"--worker-range", "1"},
        {"--worker-range", "a-b"},
        {"--worker-range", "0-4294967296"},
        {"--layout", "bits=1/2/3x"},
        {"--layout", "nope=1"},
        {"--epoch", "yesterday"},
        {"--slot-choice", "first"},
        {"--max-backward", "-1"},
        {"--quiet=maybe", NULL},
        {"--zk-auth", "nocolon"},
        {"--zk-auth", ":pw"},
        {"--identity", ""},
        {"--app=", NULL},
        {"--identity", "a\nb"},
    };
    fake f = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ik_cli_opts o;
        const char *argv[] = {bad[i][0], bad[i][1], NULL};
        int rc = parse(&o, &f, argv);
        if (rc != 2) fail_msg("%s %s accepted", bad[i][0], bad[i][1] ? bad[i][1] : "");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(bad[i][0], "="), bad[i][0]);
        assert_err_has(&o, name);
        ik__cli_opts_free(&o);
    }
}

static void good_values_of_each_kind(void **state)
{
    fake f = {0};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f,
                           ARGS("--worker-range", "3-17", "--slot-choice", "lowest", "--coord",
                                "local:/tmp/x", "--epoch", "2020-01-01", "--layout",
                                "bits=39/8/16,unit=10ms", "--app", "A.b_c-1")),
                     0);
    assert_int_equal(o.v[IK_OPT_WORKER_RANGE].n, 3);
    assert_int_equal(o.v[IK_OPT_WORKER_RANGE].n2, 17);
    assert_int_equal(o.v[IK_OPT_SLOT_CHOICE].n, 1);
    ik__cli_opts_free(&o);
    /* a store option, checked by its backend's row, where this build has zk:// */
    if (ik__cli_option_find("zk-auth", 7) >= 0) {
        assert_int_equal(parse(&o, &f, ARGS("--zk-auth", "u:p:w")), 0);
        ik__cli_opts_free(&o);
    }
}

/* The listen address and the app name follow the library's rules (rules.h): the
 * daemon binds what the CLI accepted, and the CLI reaches every app the library can
 * make. */
static void values_the_library_takes(void **state)
{
    fake f = {0};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f, ARGS("--http", ":8080")), 0); /* every IPv4 address */
    assert_int_equal(o.v[IK_OPT_HTTP].n, 8080);
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--http", "127.0.0.1:0")), 0); /* any free port */
    assert_int_equal(o.v[IK_OPT_HTTP].n, 0);
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--http", "[::]:0")), 0);
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--app", "billing:v2")), 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "billing:v2");
    ik__cli_opts_free(&o);
}

static void unknown_options(void **state)
{
    fake f = {0};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f, ARGS("--nope", "1")), 2);
    assert_err_has(&o, "unknown option --nope");
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--count=5")), 2);
    assert_err_has(&o, "--count is not an option of serve");
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("-x")), 2);
    assert_err_has(&o, "unknown option -x");
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--app")), 2);
    assert_err_has(&o, "--app needs a value");
    ik__cli_opts_free(&o);
}

static void config_keys_and_sections(void **state)
{
    fake f = {.files = {
                  {"order.ini", "[serve]\napp = section\n[next]\ncount = 5\n\napp = ignored\n"
                                "; comment\ncoord = local:/a ; inline comment\n"},
                  {"unknown.ini", "app = x\nnope = 1\n"},
                  {"badsec.ini", "[server]\napp = x\n"},
                  {"notmine.ini", "count = 5\n[serve]\ncount = 5\n"},
              }};
    ik_cli_opts o;
    /* [serve] beats the top level whatever the order; [next] is not ours; the
     * top level after a section belongs to that section */
    assert_int_equal(parse(&o, &f, ARGS("--config", "order.ini")), 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "section");
    assert_int_equal(o.v[IK_OPT_APP].src, IK_SRC_FILE_SECTION);
    assert_null(o.v[IK_OPT_COUNT].text);
    ik__cli_opts_free(&o);

    fake g = {
        .files = {{"t.ini", "app = top\n[serve]\napp = sec\n"}, {"u.ini", "[next]\nnope = 1\n"}}};
    assert_int_equal(parse(&o, &g, ARGS("--config", "t.ini")), 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "sec");
    ik__cli_opts_free(&o);
    /* unknown keys are errors in every section */
    assert_int_equal(parse(&o, &g, ARGS("--config", "u.ini")), 2);
    assert_err_has(&o, "u.ini:2: unknown key 'nope'");
    ik__cli_opts_free(&o);

    assert_int_equal(parse(&o, &f, ARGS("--config", "unknown.ini")), 2);
    assert_err_has(&o, "unknown.ini:2: unknown key 'nope'");
    ik__cli_opts_free(&o);

    assert_int_equal(parse(&o, &f, ARGS("--config", "badsec.ini")), 2);
    assert_err_has(&o, "badsec.ini:1: unknown section [server]");
    ik__cli_opts_free(&o);

    /* a key of another command: ignored at the top level, an error in [serve] */
    assert_int_equal(parse(&o, &f, ARGS("--config", "notmine.ini")), 2);
    assert_err_has(&o, "notmine.ini:3: 'count' is not an option of serve");
    ik__cli_opts_free(&o);
}

static void config_file_errors(void **state)
{
    char longline[600];
    memset(longline, 'x', sizeof longline);
    memcpy(longline, "identity = ", 11);
    longline[sizeof longline - 2] = '\n';
    longline[sizeof longline - 1] = 0;
    char withlong[700];
    snprintf(withlong, sizeof withlong, "app = a\n%s", longline);
    fake f = {.files = {{"self.ini", "config = other.ini\n"},
                        {"syntax.ini", "app = a\nthis is not a pair\n"},
                        {"long.ini", withlong},
                        {"empty.ini", ""}}};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f, ARGS("--config", "self.ini")), 2);
    assert_err_has(&o, "self.ini:1: 'config' cannot be set inside a config file");
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--config", "syntax.ini")), 2);
    assert_err_has(&o, "syntax.ini:2:");
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--config", "long.ini")), 2);
    assert_err_has(&o, "long.ini:2: line longer than");
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--config", "missing.ini")), 2);
    assert_err_has(&o, "--config missing.ini: No such file or directory");
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("--config", "empty.ini")), 0);
    ik__cli_opts_free(&o);
}

static void empty_env_is_unset(void **state)
{
    fake f = {.env = {{"IDKEEPER_APP", ""}, {"IDKEEPER_HTTP", "0.0.0.0:81"}}};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f, NOARGS), 0);
    assert_string_equal(o.v[IK_OPT_APP].text, "default");
    assert_string_equal(o.v[IK_OPT_HTTP].text, "0.0.0.0:81");
    ik__cli_opts_free(&o);
}

static void positionals_and_dashdash(void **state)
{
    fake f = {0};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f, ARGS("a", "--app", "x", "-", "b", "--", "--app", "c")), 0);
    assert_int_equal(o.nargs, 5);
    assert_string_equal(o.args[0], "a");
    assert_string_equal(o.args[1], "-");
    assert_string_equal(o.args[2], "b");
    assert_int_equal(o.rest, 3);
    assert_string_equal(o.args[3], "--app");
    assert_string_equal(o.v[IK_OPT_APP].text, "x");
    ik__cli_opts_free(&o);
}

static void help_wins(void **state)
{
    fake f = {0};
    ik_cli_opts o;
    assert_int_equal(parse(&o, &f, ARGS("--max-batch", "0", "--help")), 0);
    assert_int_equal(o.help, 1);
    ik__cli_opts_free(&o);
    assert_int_equal(parse(&o, &f, ARGS("-h")), 0);
    assert_int_equal(o.help, 1);
    ik__cli_opts_free(&o);
    /* after "--" it is an argument */
    assert_int_equal(parse(&o, &f, ARGS("--", "--help")), 0);
    assert_int_equal(o.help, 0);
    ik__cli_opts_free(&o);
}

static void table_is_consistent(void **state)
{
    /* the backends' store options fit the slots, and fill them from the first */
    assert_int_equal(ik__cli_store_rows(), 0);
    for (int i = 0; i < IK_OPT__COUNT; i++) {
        const ik_cli_option *op = &ik__cli_options[i];
        if (i >= IK_OPT_STORE_FIRST && !op->name) continue; /* an empty store slot */
        assert_non_null(op->name);
        assert_non_null(op->help);
        char env[64] = "IDKEEPER_";
        size_t n = strlen(env);
        for (const char *p = op->name; *p; p++)
            env[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        env[n] = 0;
        assert_string_equal(op->env, env);
        assert_int_equal(ik__cli_option_find(op->name, strlen(op->name)), i);
        assert_true((op->metavar == NULL) == (op->kind == IK_KIND_FLAG));
    }
    /* every default is a valid value of its option */
    ik_cli_spec spec = {"all", ~UINT64_C(0), NULL};
    fake none = {0};
    ik_cli_env env = {fake_get, fake_read, &none};
    ik_cli_opts o;
    assert_int_equal(ik__cli_parse(&o, &spec, 0, NULL, &env), 0);
    ik__cli_opts_free(&o);
}

/* IDKEEPER_LOG_SEQUENCE_COMMITS is an option of serve like any other: the flag, its
 * variable (checked, and named in errors) and its config key; commands that do not
 * take it ignore the variable, as the test scripts export it for every command. */
static void log_sequence_commits_option(void **state)
{
    uint64_t serve = SERVE_OPTS | IK_OPT_BIT(IK_OPT_LOG_SEQUENCE_COMMITS);
    ik_cli_spec spec = {"serve", serve, sections};
    const char *no_args[] = {NULL};
    fake f = {.env = {{"IDKEEPER_LOG_SEQUENCE_COMMITS", "1"}}};
    ik_cli_env env = {fake_get, fake_read, &f};
    ik_cli_opts o;
    assert_int_equal(ik__cli_parse(&o, &spec, 0, (char **)no_args, &env), 0);
    assert_int_equal(o.v[IK_OPT_LOG_SEQUENCE_COMMITS].n, 1);
    assert_int_equal(o.v[IK_OPT_LOG_SEQUENCE_COMMITS].src, IK_SRC_ENV);
    ik__cli_opts_free(&o);
    const char *off[] = {"--log-sequence-commits=false", NULL};
    assert_int_equal(ik__cli_parse(&o, &spec, 1, (char **)off, &env), 0);
    assert_int_equal(o.v[IK_OPT_LOG_SEQUENCE_COMMITS].n, 0);
    ik__cli_opts_free(&o);
    fake bad = {.env = {{"IDKEEPER_LOG_SEQUENCE_COMMITS", "maybe"}}};
    env.ctx = &bad;
    assert_int_equal(ik__cli_parse(&o, &spec, 0, (char **)no_args, &env), 2);
    assert_err_has(&o, "IDKEEPER_LOG_SEQUENCE_COMMITS: 'maybe' is not true or false");
    ik__cli_opts_free(&o);
    fake file = {.files = {{"c.ini", "[serve]\nlog-sequence-commits = yes\n"}}};
    env.ctx = &file;
    const char *cfg[] = {"--config", "c.ini", NULL};
    assert_int_equal(ik__cli_parse(&o, &spec, 2, (char **)cfg, &env), 0);
    assert_int_equal(o.v[IK_OPT_LOG_SEQUENCE_COMMITS].n, 1);
    ik__cli_opts_free(&o);
    ik_cli_spec next = {"next", IK_OPT_BIT(IK_OPT_COUNT), sections};
    env.ctx = &bad;
    assert_int_equal(ik__cli_parse(&o, &next, 0, (char **)no_args, &env), 0);
    assert_null(o.v[IK_OPT_LOG_SEQUENCE_COMMITS].text);
    ik__cli_opts_free(&o);
}

static void layout_from_options(void **state)
{
    fake f = {0};
    ik_cli_opts o;
    ik_layout l;
    char why[256];
    assert_int_equal(parse(&o, &f,
                           ARGS("--layout", "bits=39/8/16,unit=10ms", "--epoch", "1600000000000",
                                "--worker-range", "4-9")),
                     0);
    assert_int_equal(ik__cli_layout_from_opts(&o, &l, why, sizeof why), 0);
    assert_int_equal(l.time_bits, 39);
    assert_int_equal(l.worker_bits, 8);
    assert_int_equal(l.seq_bits, 16);
    assert_int_equal(l.unit_ms, 10);
    assert_int_equal(l.epoch_ms, 1600000000000);
    assert_int_equal(l.worker_min, 4);
    assert_int_equal(l.worker_max, 9);
    ik__cli_opts_free(&o);

    assert_int_equal(parse(&o, &f, NOARGS), 0);
    assert_int_equal(ik__cli_layout_from_opts(&o, &l, why, sizeof why), 0);
    ik_layout d;
    ik_layout_default(&d);
    assert_memory_equal(&l, &d, sizeof l);
    ik__cli_opts_free(&o);
}

static void source_names(void **state)
{
    fake f = {.env = {{"IDKEEPER_APP", "e"}}, .files = {{"c.ini", "\nidentity = i\n"}}};
    ik_cli_opts o;
    char buf[128];
    assert_int_equal(parse(&o, &f, ARGS("--config", "c.ini", "--http", "h:1")), 0);
    assert_string_equal(ik__cli_source_name(&o, IK_OPT_HTTP, buf, sizeof buf), "--http");
    assert_string_equal(ik__cli_source_name(&o, IK_OPT_APP, buf, sizeof buf), "IDKEEPER_APP");
    assert_string_equal(ik__cli_source_name(&o, IK_OPT_IDENTITY, buf, sizeof buf),
                        "c.ini:2: identity");
    ik__cli_opts_free(&o);
}

/* The options of `tags`: --kind is a choice, --start takes 0 and no sign, --step is
 * 1..1000000 with no default, --description is at most 255 bytes from any source. */
/* semaphore's own: --max (1 to IK_SEMAPHORE_MAX_LEASES), --semaphore-layout
 * (curator, the default, or kazoo), --list; from the command line, the environment
 * and its section of the file, refused with their source */
static void semaphore_options(void **state)
{
    (void)state;
    const uint64_t opts = IK_OPT_BIT(IK_OPT_CONFIG) | IK_OPT_BIT(IK_OPT_COORD) |
                          IK_OPT_BIT(IK_OPT_MAX) | IK_OPT_BIT(IK_OPT_SEMAPHORE_LAYOUT) |
                          IK_OPT_BIT(IK_OPT_LIST) | IK_OPT_BIT(IK_OPT_JSON);
    static const char *const secs[] = {"semaphore", "lock", NULL};
    fake f = {
        .env = {{"IDKEEPER_SEMAPHORE_LAYOUT", "kazoo"}},
        .files = {{"s.ini", "[semaphore]\nmax = 7\nlist = yes\n"}, {"l.ini", "[lock]\nmax = 7\n"}}};
    fake none = {0};
    ik_cli_spec spec = {"semaphore", opts, secs};
    ik_cli_env env = {fake_get, fake_read, &none};
    ik_cli_opts o;

    assert_int_equal(ik__cli_parse(&o, &spec, 3, (char *[]){"/x", "--", "true", NULL}, &env), 0);
    assert_null(o.v[IK_OPT_MAX].text); /* required by the command, not the parser */
    assert_int_equal(o.v[IK_OPT_SEMAPHORE_LAYOUT].n, 0);
    assert_string_equal(o.v[IK_OPT_SEMAPHORE_LAYOUT].text, "curator");
    assert_int_equal(o.v[IK_OPT_LIST].n, 0);
    ik__cli_opts_free(&o);

    char *good[] = {"--max", "10000", "--semaphore-layout=kazoo", "--list", "/x", NULL};
    assert_int_equal(ik__cli_parse(&o, &spec, 5, good, &env), 0);
    assert_int_equal(o.v[IK_OPT_MAX].n, IK_SEMAPHORE_MAX_LEASES);
    assert_int_equal(o.v[IK_OPT_SEMAPHORE_LAYOUT].n, 1);
    assert_int_equal(o.v[IK_OPT_LIST].n, 1);
    ik__cli_opts_free(&o);

    static const char *const bad[][3] = {
        {"--max", "0", "--max: 0 is out of range 1..10000"},
        {"--max", "10001", "--max: 10001 is out of range 1..10000"},
        {"--max", "-3", "--max: '-3' is not a number"},
        {"--semaphore-layout", "zookeeper",
         "--semaphore-layout: 'zookeeper' is not one of curator|kazoo"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = {(char *)bad[i][0], (char *)bad[i][1], NULL};
        assert_int_equal(ik__cli_parse(&o, &spec, 2, argv, &env), 2);
        assert_err_has(&o, bad[i][2]);
        ik__cli_opts_free(&o);
    }

    /* the environment, and the command's section of the file */
    env.ctx = &f;
    char *file[] = {"--config", "s.ini", "/x", NULL};
    assert_int_equal(ik__cli_parse(&o, &spec, 3, file, &env), 0);
    assert_int_equal(o.v[IK_OPT_MAX].n, 7);
    assert_int_equal(o.v[IK_OPT_MAX].src, IK_SRC_FILE_SECTION);
    assert_int_equal(o.v[IK_OPT_SEMAPHORE_LAYOUT].n, 1);
    assert_int_equal(o.v[IK_OPT_SEMAPHORE_LAYOUT].src, IK_SRC_ENV);
    assert_int_equal(o.v[IK_OPT_LIST].n, 1);
    ik__cli_opts_free(&o);

    /* lock takes no --max: in its section of the file, an error */
    ik_cli_spec lock = {"lock", IK_OPT_BIT(IK_OPT_CONFIG) | IK_OPT_BIT(IK_OPT_COORD), secs};
    char *lfile[] = {"--config", "l.ini", "/x", NULL};
    assert_int_equal(ik__cli_parse(&o, &lock, 3, lfile, &env), 2);
    assert_err_has(&o, "max");
    ik__cli_opts_free(&o);
}

static void tag_options(void **state)
{
    const uint64_t tags = IK_OPT_BIT(IK_OPT_CONFIG) | IK_OPT_BIT(IK_OPT_COORD) |
                          IK_OPT_BIT(IK_OPT_APP) | IK_OPT_BIT(IK_OPT_KIND) |
                          IK_OPT_BIT(IK_OPT_START) | IK_OPT_BIT(IK_OPT_STEP) |
                          IK_OPT_BIT(IK_OPT_DESCRIPTION) | IK_OPT_BIT(IK_OPT_JSON);
    char d255[256], d256[257], line[300];
    memset(d255, 'd', 255);
    d255[255] = 0;
    memset(d256, 'd', 256);
    d256[256] = 0;
    snprintf(line, sizeof line, "[tags]\ndescription = %.180s\n", d256);
    fake f = {.env = {{"IDKEEPER_DESCRIPTION", d256}},
              .files = {{"k.ini", "kind = sequence\n[tags]\nstart = 7\n"}, {"d.ini", line}}};
    fake none = {0};
    ik_cli_spec spec = {"tags", tags, sections};
    ik_cli_env env = {fake_get, fake_read, &none};
    ik_cli_opts o;

    assert_int_equal(ik__cli_parse(&o, &spec, 2, (char *[]){"add", "t", NULL}, &env), 0);
    assert_null(o.v[IK_OPT_KIND].text);
    assert_null(o.v[IK_OPT_STEP].text);
    assert_null(o.v[IK_OPT_DESCRIPTION].text);
    assert_int_equal(o.v[IK_OPT_START].n, 1);
    assert_int_equal(o.v[IK_OPT_START].src, IK_SRC_DEFAULT);
    ik__cli_opts_free(&o);

    char *good[] = {"--kind",  "sequence",      "--start=0", "--step",
                    "1000000", "--description", d255,        NULL};
    assert_int_equal(ik__cli_parse(&o, &spec, 7, good, &env), 0);
    assert_int_equal(o.v[IK_OPT_KIND].n, 1);
    assert_int_equal(o.v[IK_OPT_START].n, 0);
    assert_int_equal(o.v[IK_OPT_STEP].n, 1000000);
    assert_string_equal(o.v[IK_OPT_DESCRIPTION].text, d255);
    ik__cli_opts_free(&o);

    static const char *const bad[][3] = {
        {"--kind", "segments", "--kind: 'segments' is not one of segment|sequence"},
        {"--start", "-1", "--start: '-1' is not a number"},
        {"--start", "1000000000000000001", "--start: 1000000000000000001 is out of range"},
        {"--step", "0", "--step: 0 is out of range 1..1000000"},
        {"--step", "1000001", "--step: 1000001 is out of range"},
        {"--description", "a\nb", "--description: the value holds a control character"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = {(char *)bad[i][0], (char *)bad[i][1], NULL};
        assert_int_equal(ik__cli_parse(&o, &spec, 2, argv, &env), 2);
        assert_err_has(&o, bad[i][2]);
        ik__cli_opts_free(&o);
    }
    char *longd[] = {"--description", d256, NULL};
    assert_int_equal(ik__cli_parse(&o, &spec, 2, longd, &env), 2);
    assert_err_has(&o, "--description: 256 bytes, over 255");
    ik__cli_opts_free(&o);

    /* the same limits from the environment and the file */
    env.ctx = &f;
    assert_int_equal(ik__cli_parse(&o, &spec, 0, NULL, &env), 2);
    assert_err_has(&o, "IDKEEPER_DESCRIPTION: 256 bytes, over 255");
    ik__cli_opts_free(&o);
    f.env[0][0] = NULL;
    assert_int_equal(ik__cli_parse(&o, &spec, 2, (char *[]){"--config", "d.ini", NULL}, &env), 0);
    assert_int_equal(strlen(o.v[IK_OPT_DESCRIPTION].text), 180);
    ik__cli_opts_free(&o);
    assert_int_equal(ik__cli_parse(&o, &spec, 2, (char *[]){"--config", "k.ini", NULL}, &env), 0);
    assert_int_equal(o.v[IK_OPT_KIND].n, 1);
    assert_int_equal(o.v[IK_OPT_START].n, 7);
    assert_int_equal(o.v[IK_OPT_START].src, IK_SRC_FILE_SECTION);
    ik__cli_opts_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_apply),
        cmocka_unit_test(precedence_argv_env_file_default),
        cmocka_unit_test(config_flag_beats_config_env),
        cmocka_unit_test(equals_and_space_forms),
        cmocka_unit_test(bad_values_name_their_source),
        cmocka_unit_test(bad_values_of_each_kind),
        cmocka_unit_test(good_values_of_each_kind),
        cmocka_unit_test(unknown_options),
        cmocka_unit_test(config_keys_and_sections),
        cmocka_unit_test(config_file_errors),
        cmocka_unit_test(empty_env_is_unset),
        cmocka_unit_test(positionals_and_dashdash),
        cmocka_unit_test(help_wins),
        cmocka_unit_test(table_is_consistent),
        cmocka_unit_test(layout_from_options),
        cmocka_unit_test(source_names),
        cmocka_unit_test(tag_options),
        cmocka_unit_test(semaphore_options),
        cmocka_unit_test(values_the_library_takes),
        cmocka_unit_test(log_sequence_commits_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
