/* store_flags.c: the backends' store options as CLI options. Each row of a backend's
 * table (rules.h, "store options"; the registry lists them, ik__coord_store_option)
 * becomes one option of every command that opens the store: --FAMILY-NAME, its
 * variable IDKEEPER_FAMILY_NAME and its config key FAMILY-NAME ("zk" and
 * "session-timeout": --zk-session-timeout, IDKEEPER_ZK_SESSION_TIMEOUT), its value
 * checked by the row, its help, metavar and default the row's. No backend is named
 * here: a new backend's options are options of the CLI without a line of it.
 *
 * What it deliberately does not do: hand the library an option of another backend
 * than --coord's. Such a value is checked, then not used, as a flag of a store the
 * command does not open always was (a config file may serve several stores). */
#include "cli.h"

#include "../lib/rules.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS (IK_OPT_STORE_LAST - IK_OPT_STORE_FIRST + 1)

static char names[SLOTS][64], envs[SLOTS][80];
static int filled; /* 1 once the slots are filled, -1 if they could not be */

int ik__cli_store_rows(void)
{
    if (filled) return filled > 0 ? 0 : -1;
    filled = 1;
    for (size_t i = 0; ik__coord_store_option(i); i++) {
        const ik__store_option *r = ik__coord_store_option(i);
        if (i >= SLOTS) {
            filled = -1;
            break;
        }
        ik_cli_option *op = &ik__cli_options[IK_OPT_STORE_FIRST + i];
        snprintf(names[i], sizeof names[i], "%s-%s", r->family, r->name);
        size_t n = (size_t)snprintf(envs[i], sizeof envs[i], "IDKEEPER_");
        for (const char *p = names[i]; *p && n + 1 < sizeof envs[i]; p++)
            envs[i][n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        envs[i][n] = '\0';
        *op = (ik_cli_option){
            .name = names[i],
            .env = envs[i],
            .kind = IK_KIND_STORE,
            .def = r->def,
            .metavar = r->metavar,
            .help = r->help,
            .store = r,
        };
    }
    return filled > 0 ? 0 : -1;
}

/* The store options given (not defaults) that belong to uri's backend, as
 * "NAME=VALUE" into list (cap entries with room for the NULL, the texts in buf).
 * 0, or -1 if they do not fit. */
int ik__cli_store_options(const ik_cli_opts *o, const char *uri, const char **list, size_t cap,
                          char *buf, size_t buf_len)
{
    size_t k = 0, used = 0;
    for (int id = IK_OPT_STORE_FIRST; id <= IK_OPT_STORE_LAST; id++) {
        const ik_cli_option *op = &ik__cli_options[id];
        const ik_cli_value *v = &o->v[id];
        if (!op->name || !v->text || v->src == IK_SRC_DEFAULT ||
            !ik__coord_store_option_of(uri, op->store))
            continue;
        int n = snprintf(buf + used, buf_len - used, "%s=%s", op->store->name, v->text);
        if (k + 1 >= cap || n < 0 || (size_t)n >= buf_len - used) return -1;
        list[k++] = buf + used;
        used += (size_t)n + 1;
    }
    list[k] = NULL;
    return 0;
}

/* The body of an option's entry: its scheme, its query key, its help, its range and
 * its default, one line. */
static void entry_body(FILE *f, const ik__store_option *r)
{
    fprintf(f, "\tThe %s backend's, or ?%s= in its URI: %s", r->family, r->name, r->help);
    if (r->shape == IK__STORE_INT)
        fprintf(f, "; %lld to %lld", (long long)r->min, (long long)r->max);
    if (r->def) fprintf(f, ". Default %s", r->def);
    fprintf(f, ".\n");
}

void ik__cli_print_store_options(FILE *f, const char *commands)
{
    fprintf(f,
            "Store options: a backend's own settings. Each is --FAMILY-NAME VALUE, the\n"
            "variable IDKEEPER_FAMILY_NAME, the config key FAMILY-NAME, or NAME=VALUE in\n"
            "the query of the backend's URI (docs/configuration.md, \"Store options\"). One\n"
            "for another backend than --coord's is checked, then not used.\n"
            "Taken by: %s.\n"
            "This build's:\n",
            commands);
    for (int id = IK_OPT_STORE_FIRST; id <= IK_OPT_STORE_LAST; id++) {
        const ik_cli_option *op = &ik__cli_options[id];
        if (!op->name) continue;
        fprintf(f, "\n--%s %s (%s)\n", op->name, op->metavar, op->env);
        entry_body(f, op->store);
    }
}
