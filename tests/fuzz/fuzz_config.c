/* fuzz_config.c: the CLI's INI config file, through the option parser's file path
 * (ik__cli_parse with an empty argv; the environment names the file and nothing else).
 *
 * The input is the file's contents. It is parsed once as each command's config
 * (every command of src/cli/commands.h), since sections and keys are
 * checked against the command. Like the process's reader, a file holding a NUL byte
 * is refused with a reason.
 *
 * Checks: the parse returns 0 or 2, and 2 comes with a one-line reason; 0 leaves no
 * value on an option the command does not take, and every value from the file names
 * a line the file has. Under ASan/LSan: no crash, no leak.
 */
/* fuzz-sources: src/cli/options.c src/cli/store_flags.c */
#include "fuzz.h"
#include "fuzz_cli_specs.h"
#include "options.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct file_in {
    const uint8_t *data;
    size_t size;
} file_in;

static const char *env_get(void *ctx, const char *name)
{
    return strcmp(name, "IDKEEPER_CONFIG") == 0 ? "fuzz.ini" : NULL;
}

static int read_input(void *ctx, const char *path, char **text, char *why, size_t why_len)
{
    const file_in *f = ctx;
    if (memchr(f->data, 0, f->size)) {
        snprintf(why, why_len, "holds a NUL byte: not a text file");
        return -1;
    }
    char *t = malloc(f->size + 1);
    if (!t) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    memcpy(t, f->data, f->size);
    t[f->size] = 0;
    *text = t;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    file_in f = {data, size};
    const ik_cli_env env = {env_get, read_input, &f};
    int lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    for (size_t s = 0; s < FUZZ_NSPECS; s++) {
        /* commands without options read no file: give each the file, as `serve` does */
        ik_cli_spec spec = fuzz_specs[s];
        spec.allowed |= IK_OPT_BIT(IK_OPT_CONFIG);
        ik_cli_opts o;
        int rc = ik__cli_parse(&o, &spec, 0, NULL, &env);
        if (rc == 2) {
            if (!o.err[0] || strchr(o.err, '\n')) abort();
        } else if (rc == 0) {
            if (o.err[0] || o.help || o.nargs || !o.config_path) abort();
            for (int i = 0; i < IK_OPT__COUNT; i++) {
                const ik_cli_value *v = &o.v[i];
                if (!(spec.allowed & IK_OPT_BIT(i)) && v->text) abort();
                if (v->text && (v->src == IK_SRC_FILE || v->src == IK_SRC_FILE_SECTION) &&
                    (v->line < 1 || v->line > lines))
                    abort();
            }
        } else {
            abort();
        }
        ik__cli_opts_free(&o);
    }
    return 0;
}
