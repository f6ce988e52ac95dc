/* cmd_workers.c: `idkeeper workers`, the worker slots of an app as the backend
 * sees them: who holds each, since when, and its time record. */
#include "cli.h"
#include "output.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Fills buf (IK__ISO8601_SIZE bytes) with the ISO time of ms, or "-" for 0 (never). */
static const char *iso_or_dash(int64_t ms, char *buf)
{
    if (ms == 0)
        snprintf(buf, IK__ISO8601_SIZE, "-");
    else
        ik__fmt_iso8601(buf, ms);
    return buf;
}

static const char *or_dash(const char *s)
{
    return s[0] ? s : "-";
}

/* The slots as one JSON object; returns 0 or -1 (out of memory, or stdout failed). */
static int print_json(const ik_cli_opts *o, const char *uri, const ik_slot_info *s, size_t n)
{
    json_t *slots = json_array();
    for (size_t i = 0; slots && i < n; i++) {
        json_t *one =
            json_pack("{s:I,s:s,s:o,s:I,s:o?,s:I,s:o?,s:o}", "worker", (json_int_t)s[i].worker,
                      "state", s[i].held ? "held" : "free", "holder",
                      ik__cli_json_text(s[i].holder), "since_ms", (json_int_t)s[i].since_ms,
                      "since", s[i].since_ms ? ik__cli_json_time(s[i].since_ms) : NULL, "record_ms",
                      (json_int_t)s[i].record_ms, "record",
                      s[i].record_ms ? ik__cli_json_time(s[i].record_ms) : NULL, "detail",
                      ik__cli_json_text(s[i].detail));
        if (json_array_append_new(slots, one) != 0) {
            json_decref(slots);
            slots = NULL;
        }
    }
    return ik__cli_json_print(stdout,
                              json_pack("{s:o,s:o,s:o}", "coord", ik__cli_json_text(uri), "app",
                                        ik__cli_json_text(o->v[IK_OPT_APP].text), "slots", slots));
}

static void print_table(const ik_slot_info *s, size_t n)
{
    int wh = (int)strlen("HOLDER");
    for (size_t i = 0; i < n; i++) {
        int hl = (int)strlen(or_dash(s[i].holder));
        if (hl > wh) wh = hl;
    }
    printf("%-6s  %-5s  %-*s  %-24s  %-24s  %s\n", "WORKER", "STATE", wh, "HOLDER", "SINCE",
           "RECORD", "DETAIL");
    for (size_t i = 0; i < n; i++) {
        char since[IK__ISO8601_SIZE], rec[IK__ISO8601_SIZE];
        printf("%-6" PRIu32 "  %-5s  %-*s  %-24s  %-24s  %s\n", s[i].worker,
               s[i].held ? "held" : "free", wh, or_dash(s[i].holder),
               iso_or_dash(s[i].since_ms, since), iso_or_dash(s[i].record_ms, rec),
               or_dash(s[i].detail));
    }
}

int ik__cmd_workers(const ik_cli_command *cmd, ik_cli_opts *o)
{
    int rc = ik__cli_no_args(cmd, o);
    if (rc != 0) return rc;
    ik_coord *c = NULL;
    int err = ik__cli_open_coord(cmd, o, &c);
    if (err != 0) return err;
    ik_slot_info *slots = NULL;
    size_t n = 0;
    err = ik_slots_list(c, o->v[IK_OPT_APP].text, &slots, &n);
    if (err != 0) {
        char why[700];
        ik__cli_fail(cmd, "cannot list the slots of app '%s' on %s: %s", o->v[IK_OPT_APP].text,
                     ik_coord_uri(c), ik__cli_store_why(c, err, why, sizeof why));
        ik_coord_close(c);
        return IK_EXIT_FAIL;
    }
    if (o->v[IK_OPT_JSON].n && print_json(o, ik_coord_uri(c), slots, n) != 0) {
        ik__cli_fail(cmd, "cannot write the slots to stdout");
        ik_free(slots);
        ik_coord_close(c);
        return IK_EXIT_FAIL;
    }
    if (!o->v[IK_OPT_JSON].n) print_table(slots, n);
    ik_free(slots);
    ik_coord_close(c);
    if (fflush(stdout) != 0) {
        ik__cli_fail(cmd, "cannot write to stdout");
        return IK_EXIT_FAIL;
    }
    return IK_EXIT_OK;
}
