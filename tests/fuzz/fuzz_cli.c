/* fuzz_cli.c: the CLI's option parser (ik__cli_parse) on a fuzzed command line and
 * environment.
 *
 * The input is split on NUL and newline bytes into pieces (a separator at the very end
 * ends the last piece). The first piece names the command (one of src/cli/commands.h:
 * that command's options; anything else: every option, as command "fuzz"); pieces of the form
 * IDKEEPER_NAME=VALUE are the environment (the last one of a name wins); the rest is argv. There is
 * no config file: --config or IDKEEPER_CONFIG must fail with a reason.
 *
 * Checks: the parse returns 0 or 2, and 2 comes with a one-line reason; 0 leaves no
 * value on an option the command does not take, positional arguments point into argv,
 * and every value kept parses again, alone, as --name=VALUE, to the same numbers.
 * Under ASan/LSan: no crash, no leak.
 */
/* fuzz-sources: src/cli/options.c src/cli/store_flags.c */
#include "fuzz.h"
#include "fuzz_cli_specs.h"
#include "options.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuzz_env {
    char **vars; /* "IDKEEPER_X=VALUE" pieces */
    int n;
} fuzz_env;

static const char *env_get(void *ctx, const char *name)
{
    const fuzz_env *e = ctx;
    size_t len = strlen(name);
    for (int i = e->n - 1; i >= 0; i--)
        if (strncmp(e->vars[i], name, len) == 0 && e->vars[i][len] == '=')
            return e->vars[i] + len + 1;
    return NULL;
}

static int no_file(void *ctx, const char *path, char **text, char *why, size_t why_len)
{
    snprintf(why, why_len, "no files in the fuzzer");
    return -1;
}

static const ik_cli_spec every = {"fuzz", ~UINT64_C(0) >> (64 - IK_OPT__COUNT), fuzz_sections};

/* Every kept value must parse again, alone, to the same numbers. */
static void check_values(const ik_cli_opts *o, const ik_cli_spec *spec)
{
    static const fuzz_env none = {NULL, 0};
    const ik_cli_env env = {env_get, no_file, (void *)&none};
    for (int i = 0; i < IK_OPT__COUNT; i++) {
        const ik_cli_value *v = &o->v[i];
        if (!(spec->allowed & IK_OPT_BIT(i))) {
            if (v->text) abort(); /* a value for an option the command does not take */
            continue;
        }
        if (!v->text || i == IK_OPT_CONFIG) continue;
        size_t n = strlen(ik__cli_options[i].name) + strlen(v->text) + 4;
        char *arg = malloc(n);
        if (!arg) return;
        snprintf(arg, n, "--%s=%s", ik__cli_options[i].name, v->text);
        char *argv[] = {arg, NULL};
        ik_cli_opts again;
        if (ik__cli_parse(&again, spec, 1, argv, &env) != 0) abort();
        if (again.v[i].n != v->n || again.v[i].n2 != v->n2 || strcmp(again.v[i].text, v->text))
            abort();
        ik__cli_opts_free(&again);
        free(arg);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    char **pieces = calloc(size + 2, sizeof *pieces);
    char **argv = calloc(size + 2, sizeof *argv);
    fuzz_env e = {calloc(size + 2, sizeof(char *)), 0};
    if (!buf || !pieces || !argv || !e.vars) goto out;
    memcpy(buf, data, size);
    buf[size] = 0;
    int np = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && buf[i] != 0 && buf[i] != '\n') continue;
        if (i < size || i > start) pieces[np++] = buf + start;
        buf[i] = 0;
        start = i + 1;
    }
    const ik_cli_spec *spec = np > 0 ? fuzz_spec_find(pieces[0]) : NULL;
    if (!spec) spec = &every;
    int argc = 0;
    for (int i = 1; i < np; i++) {
        if (strncmp(pieces[i], "IDKEEPER_", 9) == 0 && strchr(pieces[i], '='))
            e.vars[e.n++] = pieces[i];
        else
            argv[argc++] = pieces[i];
    }

    const ik_cli_env env = {env_get, no_file, &e};
    ik_cli_opts o;
    int rc = ik__cli_parse(&o, spec, argc, argv, &env);
    if (rc == 2) {
        /* a refusal says why, in one line */
        if (!o.err[0] || strchr(o.err, '\n')) abort();
    } else if (rc == 0) {
        if (o.err[0]) abort();
        if (!o.help) {
            if (o.nargs < 0 || o.nargs > argc || o.rest < -1 || o.rest > o.nargs) abort();
            for (int i = 0; i < o.nargs; i++) /* each the start of a piece of buf */
                if (o.args[i] < buf || o.args[i] > buf + size || (o.args[i] > buf && o.args[i][-1]))
                    abort();
            check_values(&o, spec);
        }
    } else {
        abort();
    }
    ik__cli_opts_free(&o);
out:
    free(e.vars);
    free(argv);
    free(pieces);
    free(buf);
    return 0;
}
