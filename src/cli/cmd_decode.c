/* cmd_decode.c: `idkeeper decode`, the time, worker and sequence inside snowflake
 * IDs, and the date on which a layout runs out. */
#include "cli.h"
#include "output.h"

#include "../lib/rules.h" /* ik__grow */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable list of parsed IDs. */
typedef struct id_list {
    int64_t *v;
    size_t n, cap;
} id_list;

static int id_push(id_list *l, int64_t id)
{
    if (ik__grow((void **)&l->v, &l->cap, l->n, sizeof *l->v, 64)) return -1;
    l->v[l->n++] = id;
    return 0;
}

/* Parses one ID argument into l; returns 0 or prints why and returns -1. */
static int add_id(const ik_cli_command *cmd, id_list *l, const char *text, size_t len,
                  const char *where)
{
    int64_t id;
    if (ik_parse_id(text, len, &id) != 0) {
        ik__cli_fail(cmd, "%s'%.*s' is not an ID (a decimal integer 0..9223372036854775807)", where,
                     (int)(len > 40 ? 40 : len), text);
        return -1;
    }
    if (id_push(l, id) != 0) {
        ik__cli_fail(cmd, "out of memory");
        return -1;
    }
    return 0;
}

/* Reads IDs from stdin, one a line (blank lines and surrounding spaces skipped). */
static int read_stdin_ids(const ik_cli_command *cmd, id_list *l)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        char *s = line, *e = line + n;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (s == e) continue;
        char where[48];
        snprintf(where, sizeof where, "stdin:%ld: ", lineno);
        rc = add_id(cmd, l, s, (size_t)(e - s), where);
    }
    free(line);
    return rc;
}

/* One ID's parts as key=value pairs, or a JSON object a line. Returns 0, or -1 if
 * the JSON could not be made (out of memory) or written. */
static int print_parts(const ik_id_parts *p, int json)
{
    char iso[IK__ISO8601_SIZE], id[24];
    ik__fmt_iso8601(iso, p->time_ms);
    snprintf(id, sizeof id, "%" PRId64, p->id);
    if (json)
        return ik__cli_json_print(stdout, json_pack("{s:s,s:s,s:I,s:I,s:I}", "id", id, "time", iso,
                                                    "time_ms", (json_int_t)p->time_ms, "worker",
                                                    (json_int_t)p->worker, "sequence",
                                                    (json_int_t)p->sequence));
    printf("id=%s time=%s time_ms=%" PRId64 " worker=%" PRIu32 " sequence=%" PRIu32 "\n", id, iso,
           p->time_ms, p->worker, p->sequence);
    return 0;
}

/* The layout's end, as print_parts prints. Returns 0 or -1. */
static int print_expiry(const ik_layout *l, int json)
{
    char spec[256], iso[IK__ISO8601_SIZE];
    ik_layout_format(l, spec, sizeof spec);
    int64_t end = ik_layout_end_ms(l);
    ik__fmt_iso8601(iso, end);
    if (json)
        return ik__cli_json_print(stdout,
                                  json_pack("{s:o,s:s,s:I}", "layout", ik__cli_json_text(spec),
                                            "expires", iso, "expires_ms", (json_int_t)end));
    printf("expires=%s expires_ms=%" PRId64 " layout=%s\n", iso, end, spec);
    return 0;
}

int ik__cmd_decode(const ik_cli_command *cmd, ik_cli_opts *o)
{
    ik_layout l;
    char why[512];
    if (ik__cli_layout_from_opts(o, &l, why, sizeof why) != 0) {
        ik__cli_fail(cmd, "%s", why);
        return IK_EXIT_USAGE;
    }
    /* Checked as of its own epoch: a layout that has run out by now still
     * decodes the IDs it once made. */
    if (ik_layout_check(&l, l.epoch_ms, why, sizeof why) != 0) {
        char from[256];
        ik__cli_fail(cmd, "layout from %s: %s", ik__cli_layout_sources(o, from, sizeof from), why);
        return IK_EXIT_USAGE;
    }
    id_list ids = {0};
    int rc = IK_EXIT_OK;
    for (int i = 0; i < o->nargs && rc == IK_EXIT_OK; i++) {
        const char *a = o->args[i];
        if (strcmp(a, "-") == 0) {
            if (read_stdin_ids(cmd, &ids) != 0) rc = IK_EXIT_FAIL;
        } else if (add_id(cmd, &ids, a, strlen(a), "") != 0) {
            rc = IK_EXIT_FAIL;
        }
    }
    int json = (int)o->v[IK_OPT_JSON].n;
    for (size_t i = 0; rc == IK_EXIT_OK && i < ids.n; i++) {
        ik_id_parts p;
        int err = ik_layout_decode(&l, ids.v[i], &p);
        if (err == IK_ERANGE) {
            ik__cli_fail(cmd,
                         "%" PRId64 " is not an ID of this layout: it has bits set above "
                         "the layout's %u",
                         ids.v[i], l.time_bits + l.worker_bits + l.seq_bits);
            rc = IK_EXIT_FAIL;
            break;
        }
        if (err != 0) {
            ik__cli_fail(cmd, "%" PRId64 ": %s", ids.v[i], ik_strerror(err));
            rc = IK_EXIT_FAIL;
            break;
        }
        if (print_parts(&p, json) != 0) {
            ik__cli_fail(cmd, "cannot write to stdout");
            rc = IK_EXIT_FAIL;
        }
    }
    if (rc == IK_EXIT_OK && (o->v[IK_OPT_EXPIRY].n || o->nargs == 0) &&
        print_expiry(&l, json) != 0) {
        ik__cli_fail(cmd, "cannot write to stdout");
        rc = IK_EXIT_FAIL;
    }
    free(ids.v);
    if (fflush(stdout) != 0 && rc == IK_EXIT_OK) {
        ik__cli_fail(cmd, "cannot write to stdout");
        rc = IK_EXIT_FAIL;
    }
    return rc;
}
