/* cmd_tags.c: `idkeeper tags list|show|add`, the segment and sequence tags of an
 * app, read and created on the backend directly through the library (no server).
 *
 * The subcommands are a table like the commands of main.c: name, handler, whether
 * it takes a TAG, the options of the `tags` row that only it takes, usage. Checks
 * that need no backend (arguments, tag name, kind, step) run before the backend is
 * opened, so a usage error (exit 2) never touches the store.
 *
 * Exit codes beyond 0/1/2: IK_EXIT_EXISTS (add: the name is taken; nothing was
 * changed) and IK_EXIT_NOTFOUND (show: no such tag), so scripts can tell an
 * idempotent re-run or a missing tag from a real failure.
 */
#include "cli.h"
#include "output.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A segment tag's step when --step is not given. Leaf has no default (its README
 * example uses 2000); blocks grow with the rate anyway (docs/segment.md), so the step only
 * bounds the smallest block and the IDs a restart may skip. */
#define DEFAULT_SEGMENT_STEP 1000
#define ADD_ONLY                                                                                   \
    (IK_OPT_BIT(IK_OPT_KIND) | IK_OPT_BIT(IK_OPT_START) | IK_OPT_BIT(IK_OPT_STEP) |                \
     IK_OPT_BIT(IK_OPT_DESCRIPTION))

typedef struct tags_sub tags_sub;

/* Runs one subcommand on arguments already checked; tag is NULL for list. */
typedef int (*tags_handler)(const ik_cli_command *cmd, const tags_sub *sub, ik_cli_opts *o,
                            const char *tag);

struct tags_sub {
    const char *name;
    tags_handler run;
    int takes_tag;
    uint64_t options; /* which of ADD_ONLY it takes */
    const char *usage;
};

static int tags_list(const ik_cli_command *cmd, const tags_sub *sub, ik_cli_opts *o,
                     const char *tag);
static int tags_show(const ik_cli_command *cmd, const tags_sub *sub, ik_cli_opts *o,
                     const char *tag);
static int tags_add(const ik_cli_command *cmd, const tags_sub *sub, ik_cli_opts *o,
                    const char *tag);

static const tags_sub subs[] = {
    {"list", tags_list, 0, 0, "tags list [--coord URI] [--app NAME] [--json]"},
    {"show", tags_show, 1, 0, "tags show TAG [--coord URI] [--app NAME] [--json]"},
    {"add", tags_add, 1, ADD_ONLY,
     "tags add TAG --kind segment|sequence [--start N] [--step N] [--description TEXT]"},
};

#define NSUBS (sizeof subs / sizeof subs[0])

/* ---- helpers ------------------------------------------------------------------ */

/* Copies s into buf for a one-line message: control and non-ASCII bytes as '?', cut
 * to 40 bytes with "..." (a bad name may be long or hold a newline). Returns buf. */
static const char *shown(const char *s, char *buf, size_t len)
{
    size_t n = 0, max = len > 44 ? 40 : len - 4;
    for (; *s && n < max; s++, n++)
        buf[n] = (unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f ? '?' : *s;
    buf[n] = 0;
    if (*s) strcat(buf, "...");
    return buf;
}

/* The exit code for a library error. */
static int exit_for(int err)
{
    switch (err) {
    case IK_EEXIST:
        return IK_EXIT_EXISTS;
    case IK_ENOTFOUND:
        return IK_EXIT_NOTFOUND;
    case IK_EINVAL:
        return IK_EXIT_USAGE;
    default:
        return IK_EXIT_FAIL;
    }
}

/* Text for a table cell or a show line: control bytes as '?', "-" when empty. */
static void put_text(const char *s)
{
    if (!s[0]) {
        putchar('-');
        return;
    }
    for (; *s; s++)
        putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

/* One tag as a JSON object. start and max_id are IDs, so strings as in the HTTP API
 * (JSON numbers lose precision above 2^53); step is a number. */
static json_t *tag_json(const ik_tag_info *t)
{
    char start[24], max_id[24];
    snprintf(start, sizeof start, "%" PRId64, t->start);
    snprintf(max_id, sizeof max_id, "%" PRId64, t->max_id);
    return json_pack("{s:o,s:s,s:s,s:I,s:s,s:I,s:o?,s:o}", "tag", ik__cli_json_text(t->name),
                     "kind", ik_tag_kind_name(t->kind), "start", start, "step", (json_int_t)t->step,
                     "max_id", max_id, "update_time_ms", (json_int_t)t->update_time_ms,
                     "update_time", t->update_time_ms ? ik__cli_json_time(t->update_time_ms) : NULL,
                     "description", ik__cli_json_text(t->description));
}

/* One tag as "field: value" lines (show, add), or JSON with --json. Returns 0, or
 * -1 if the JSON could not be made (out of memory) or written. */
static int print_tag(const ik_cli_opts *o, const ik_tag_info *t)
{
    if (o->v[IK_OPT_JSON].n) return ik__cli_json_print(stdout, tag_json(t));
    char iso[IK__ISO8601_SIZE];
    printf("tag:          %s\n", t->name);
    printf("kind:         %s\n", ik_tag_kind_name(t->kind));
    printf("start:        %" PRId64 "\n", t->start);
    printf("step:         %" PRId64 "\n", t->step);
    printf("max_id:       %" PRId64 "\n", t->max_id);
    if (t->update_time_ms) ik__fmt_iso8601(iso, t->update_time_ms);
    printf("updated:      %s\n", t->update_time_ms ? iso : "-");
    printf("description:  ");
    put_text(t->description);
    putchar('\n');
    return 0;
}

static int flush_stdout(const ik_cli_command *cmd)
{
    if (fflush(stdout) != 0) {
        ik__cli_fail(cmd, "cannot write to stdout");
        return IK_EXIT_FAIL;
    }
    return IK_EXIT_OK;
}

/* ---- the subcommands ------------------------------------------------------------ */

static int tags_list(const ik_cli_command *cmd, const tags_sub *sub, ik_cli_opts *o,
                     const char *tag)
{
    ik_coord *c = NULL;
    int rc = ik__cli_open_coord(cmd, o, &c);
    if (rc != 0) return rc;
    const char *app = o->v[IK_OPT_APP].text;
    ik_tag_info *t = NULL;
    size_t n = 0;
    int err = ik_tags_list(c, app, &t, &n);
    if (err != 0) {
        char why[700];
        ik__cli_fail(cmd, "cannot list the tags of app '%s' on %s: %s", app, ik_coord_uri(c),
                     ik__cli_store_why(c, err, why, sizeof why));
        ik_coord_close(c);
        return exit_for(err) == IK_EXIT_USAGE ? IK_EXIT_USAGE : IK_EXIT_FAIL;
    }
    if (o->v[IK_OPT_JSON].n) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < n; i++)
            if (json_array_append_new(list, tag_json(&t[i])) != 0) {
                json_decref(list);
                list = NULL;
            }
        if (ik__cli_json_print(stdout, json_pack("{s:o,s:o,s:o}", "coord",
                                                 ik__cli_json_text(ik_coord_uri(c)), "app",
                                                 ik__cli_json_text(app), "tags", list)) != 0) {
            ik__cli_fail(cmd, "cannot write the tags to stdout");
            ik_free(t);
            ik_coord_close(c);
            return IK_EXIT_FAIL;
        }
    } else {
        int wt = 3, ws = 5, wm = 6;
        char num[24];
        for (size_t i = 0; i < n; i++) {
            int l = (int)strlen(t[i].name);
            if (l > wt) wt = l;
            l = snprintf(num, sizeof num, "%" PRId64, t[i].start);
            if (l > ws) ws = l;
            l = snprintf(num, sizeof num, "%" PRId64, t[i].max_id);
            if (l > wm) wm = l;
        }
        printf("%-*s  %-8s  %-*s  %-7s  %-*s  %-24s  %s\n", wt, "TAG", "KIND", ws, "START", "STEP",
               wm, "MAX_ID", "UPDATED", "DESCRIPTION");
        for (size_t i = 0; i < n; i++) {
            char iso[IK__ISO8601_SIZE] = "-";
            if (t[i].update_time_ms) ik__fmt_iso8601(iso, t[i].update_time_ms);
            printf("%-*s  %-8s  %-*" PRId64 "  %-7" PRId64 "  %-*" PRId64 "  %-24s  ", wt,
                   t[i].name, ik_tag_kind_name(t[i].kind), ws, t[i].start, t[i].step, wm,
                   t[i].max_id, iso);
            put_text(t[i].description);
            putchar('\n');
        }
    }
    ik_free(t);
    ik_coord_close(c);
    return flush_stdout(cmd);
}

static int tags_show(const ik_cli_command *cmd, const tags_sub *sub, ik_cli_opts *o,
                     const char *tag)
{
    ik_coord *c = NULL;
    int rc = ik__cli_open_coord(cmd, o, &c);
    if (rc != 0) return rc;
    const char *app = o->v[IK_OPT_APP].text;
    ik_tag_info t;
    char why[512] = "";
    int err = ik_tag_read(c, app, tag, &t, why, sizeof why);
    if (err == IK_ENOTFOUND) {
        ik__cli_fail(cmd, "no tag '%s' in app '%s' on %s (idkeeper tags add %s --kind ...)", tag,
                     app, ik_coord_uri(c), tag);
    } else if (err != 0) {
        ik__cli_fail(cmd, "cannot read tag '%s' of app '%s' on %s: %s", tag, app, ik_coord_uri(c),
                     why[0] ? why : ik_strerror(err));
    } else if (print_tag(o, &t) != 0) {
        ik__cli_fail(cmd, "cannot write the tag to stdout");
        ik_coord_close(c);
        return IK_EXIT_FAIL;
    }
    ik_coord_close(c);
    return err ? exit_for(err) : flush_stdout(cmd);
}

static int tags_add(const ik_cli_command *cmd, const tags_sub *sub, ik_cli_opts *o, const char *tag)
{
    char where[300];
    const ik_cli_value *kind = &o->v[IK_OPT_KIND], *step = &o->v[IK_OPT_STEP];
    if (!kind->text) {
        ik__cli_fail(cmd, "add needs --kind segment or --kind sequence (usage: idkeeper %s)",
                     sub->usage);
        return IK_EXIT_USAGE;
    }
    ik_tag_kind k = kind->n == 0 ? IK_TAG_SEGMENT : IK_TAG_SEQUENCE;
    int64_t st = DEFAULT_SEGMENT_STEP;
    if (k == IK_TAG_SEQUENCE) {
        if (step->text && step->n != 1) {
            ik__cli_fail(cmd, "%s: a sequence tag takes no step (its IDs are contiguous)",
                         ik__cli_source_name(o, IK_OPT_STEP, where, sizeof where));
            return IK_EXIT_USAGE;
        }
        st = 1;
    } else if (step->text) {
        st = step->n;
    }

    ik_coord *c = NULL;
    int rc = ik__cli_open_coord(cmd, o, &c);
    if (rc != 0) return rc;
    const char *app = o->v[IK_OPT_APP].text;
    char why[512] = "";
    int err = ik_tag_create(c, app, tag, k, o->v[IK_OPT_START].n, st, o->v[IK_OPT_DESCRIPTION].text,
                            why, sizeof why);
    ik_tag_info t;
    if (err == IK_EEXIST) {
        if (ik_tag_get(c, app, tag, &t) == 0)
            ik__cli_fail(cmd,
                         "tag '%s' exists already in app '%s' on %s (a %s tag, start %" PRId64
                         "); nothing changed",
                         tag, app, ik_coord_uri(c), ik_tag_kind_name(t.kind), t.start);
        else
            ik__cli_fail(cmd, "tag '%s' exists already in app '%s' on %s; nothing changed", tag,
                         app, ik_coord_uri(c));
    } else if (err != 0) {
        ik__cli_fail(cmd, "cannot add tag '%s' to app '%s' on %s: %s", tag, app, ik_coord_uri(c),
                     why[0] ? why : ik_strerror(err));
    } else if ((err = ik_tag_get(c, app, tag, &t)) != 0) {
        ik__cli_fail(cmd, "added tag '%s', but cannot read it back: %s", tag, ik_strerror(err));
        ik_coord_close(c);
        return IK_EXIT_FAIL;
    } else if (print_tag(o, &t) != 0) {
        ik__cli_fail(cmd, "cannot write the tag to stdout");
        ik_coord_close(c);
        return IK_EXIT_FAIL;
    }
    ik_coord_close(c);
    return err ? exit_for(err) : flush_stdout(cmd);
}

/* ---- dispatch -------------------------------------------------------------------- */

int ik__cmd_tags(const ik_cli_command *cmd, ik_cli_opts *o)
{
    char buf[64];
    if (o->nargs == 0) {
        ik__cli_fail(cmd, "which one: tags list, tags show TAG or tags add TAG (see idkeeper "
                          "tags --help)");
        return IK_EXIT_USAGE;
    }
    const tags_sub *sub = NULL;
    for (size_t i = 0; i < NSUBS; i++)
        if (strcmp(subs[i].name, o->args[0]) == 0) sub = &subs[i];
    if (!sub) {
        ik__cli_fail(cmd, "unknown subcommand '%s' (list, show or add; see idkeeper tags --help)",
                     shown(o->args[0], buf, sizeof buf));
        return IK_EXIT_USAGE;
    }
    int want = 1 + sub->takes_tag;
    if (o->nargs < want) {
        ik__cli_fail(cmd, "%s needs a TAG (usage: idkeeper %s)", sub->name, sub->usage);
        return IK_EXIT_USAGE;
    }
    if (o->nargs > want) {
        ik__cli_fail(cmd, "unexpected argument '%s' (usage: idkeeper %s)",
                     shown(o->args[want], buf, sizeof buf), sub->usage);
        return IK_EXIT_USAGE;
    }
    /* add's options on the command line of list or show are a mistake; from the
     * environment or a config file they are meant for add and are ignored here */
    for (int i = 0; i < IK_OPT__COUNT; i++) {
        if ((ADD_ONLY & IK_OPT_BIT(i)) && !(sub->options & IK_OPT_BIT(i)) &&
            o->v[i].src == IK_SRC_ARGV) {
            ik__cli_fail(cmd, "--%s is an option of tags add, not of tags %s",
                         ik__cli_options[i].name, sub->name);
            return IK_EXIT_USAGE;
        }
    }
    const char *tag = sub->takes_tag ? o->args[1] : NULL;
    char why[256] = "";
    if (tag && ik_tag_name_check(tag, why, sizeof why) != 0) {
        ik__cli_fail(cmd, "bad tag name '%s': %s", shown(tag, buf, sizeof buf), why);
        return IK_EXIT_USAGE;
    }
    return sub->run(cmd, sub, o, tag);
}
