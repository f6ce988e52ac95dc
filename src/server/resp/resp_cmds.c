/* resp_cmds.c: the RESP command table (docs/resp.md) and its handlers, one row per
 * command like the HTTP route table: name, Redis arity (n: exactly n words with the
 * name; -n: at least n), handler, flags, summary (COMMAND DOCS).
 *
 * Handlers append their answer to c->out, or issue IDs through issue.c (the same
 * step the HTTP routes take) and leave an ik__pend whose answer ik__resp_render
 * writes when the store has answered. Errors are those Redis clients know: -ERR,
 * -NOAUTH, -WRONGPASS, -NOPROTO, -WRONGTYPE, and idkeeper's -NOTAG (unknown tag) and
 * -TRYAGAIN (where HTTP answers 503).
 */
#include "resp_cmds.h"
#include "conn.h" /* IK_ANSWER_BYTES, IK_ID_BYTES: the charge of a pending answer */
#include "issue.h"
#include "log.h"
#include "token.h"
#include "../../lib/rules.h" /* ik__fmt_iso8601 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define F_NOAUTH 1u /* allowed before AUTH */

/* Answer shapes of pending ID commands. */
enum { SH_LAST = 0, SH_ARRAY = 1 };

typedef void (*cmd_fn)(ik__rcall *c);

typedef struct cmd_row {
    const char *name;
    int arity;
    cmd_fn fn;
    unsigned flags;
    const char *group, *summary;
} cmd_row;

static void c_incr(ik__rcall *c);
static void c_incrby(ik__rcall *c);
static void c_snowflake(ik__rcall *c);
static void c_segment(ik__rcall *c);
static void c_sequence(ik__rcall *c);
static void c_decode(ik__rcall *c);
static void c_ping(ik__rcall *c);
static void c_echo(ik__rcall *c);
static void c_hello(ik__rcall *c);
static void c_auth(ik__rcall *c);
static void c_select(ik__rcall *c);
static void c_client(ik__rcall *c);
static void c_command(ik__rcall *c);
static void c_info(ik__rcall *c);
static void c_config(ik__rcall *c);
static void c_quit(ik__rcall *c);
static void c_reset(ik__rcall *c);

static const cmd_row cmds[] = {
    {"incr", 2, c_incr, 0, "string",
     "INCR TAG: the next ID of a sequence or segment tag (by the tag's kind)"},
    {"incrby", 3, c_incrby, 0, "string",
     "INCRBY TAG N: N IDs of the tag; answers the last (docs/resp.md says which are yours)"},
    {"idk.snowflake", -1, c_snowflake, 0, "idkeeper",
     "IDK.SNOWFLAKE [COUNT N]: a snowflake ID, or an array of N"},
    {"idk.segment", -2, c_segment, 0, "idkeeper",
     "IDK.SEGMENT TAG [COUNT N]: a segment ID of TAG, or an array of N"},
    {"idk.sequence", -2, c_sequence, 0, "idkeeper",
     "IDK.SEQUENCE TAG [COUNT N]: the next sequence ID of TAG, or an array of N contiguous"},
    {"idk.decode", 2, c_decode, 0, "idkeeper",
     "IDK.DECODE ID: the time, worker and sequence inside a snowflake ID"},
    {"ping", -1, c_ping, 0, "connection", "PING [MESSAGE]"},
    {"echo", 2, c_echo, 0, "connection", "ECHO MESSAGE"},
    {"hello", -1, c_hello, F_NOAUTH, "connection",
     "HELLO [2|3 [AUTH default TOKEN] [SETNAME NAME]]"},
    {"auth", -2, c_auth, F_NOAUTH, "connection", "AUTH [default] TOKEN (the http-token-file's)"},
    {"select", 2, c_select, 0, "connection", "SELECT 0 (the only database)"},
    {"client", -2, c_client, 0, "connection", "CLIENT ID|SETNAME|GETNAME|INFO|SETINFO"},
    {"command", -1, c_command, 0, "server", "COMMAND [COUNT|DOCS|INFO [NAME...]]"},
    {"info", -1, c_info, 0, "server", "INFO [SECTION]"},
    {"config", -2, c_config, 0, "server",
     "CONFIG GET PARAMETER (save and appendonly, for redis-benchmark)"},
    {"quit", -1, c_quit, F_NOAUTH, "connection", "QUIT: +OK, then the server closes"},
    {"reset", 1, c_reset, F_NOAUTH, "connection",
     "RESET: back to RESP2, no name, not authenticated when a token is set"},
};
#define NCMDS (sizeof cmds / sizeof cmds[0])
const size_t ik__resp_ncmds = NCMDS;
_Static_assert(NCMDS < IK_RESP_CMDS_MAX, "IK_RESP_CMDS_MAX too small for the command table");

const char *ik__resp_cmd_name(size_t i)
{
    return i < NCMDS ? cmds[i].name : i == NCMDS ? "unknown" : NULL;
}

/* ---- small helpers ----------------------------------------------------------------------- */

static uint32_t argc_of(const ik__rcall *c)
{
    const char *a;
    size_t n;
    return ik__respp_arg(c->rp, 0, &a, &n);
}

static const char *arg(const ik__rcall *c, uint32_t i, size_t *n)
{
    const char *a;
    size_t len;
    ik__respp_arg(c->rp, i, &a, &len);
    if (n) *n = len;
    return a;
}

/* Answers an unknown subcommand of CMD (argument 1) as Redis words it. */
static void unknown_subcommand(ik__rcall *c, const char *cmd)
{
    size_t n;
    const char *a = arg(c, 1, &n);
    char q[140];
    ik__resp_quote(q, a, n);
    ik__resp_error(
        c->out, "ERR unknown subcommand or wrong number of arguments for %s. Try %s HELP.", q, cmd);
}

/* 1 if argument i is lit, case-insensitively. */
static int arg_is(const ik__rcall *c, uint32_t i, const char *lit)
{
    size_t n;
    const char *a = arg(c, i, &n);
    return ik__ieq(a, n, lit);
}

static void wrong_args(ik__rcall *c, const char *name)
{
    ik__resp_error(c->out, "ERR wrong number of arguments for '%s' command", name);
}

static void syntax_error(ik__rcall *c)
{
    ik__resp_error(c->out, "ERR syntax error");
}

/* 1 if a[0..n-1] is a tag name by ik_tag_name_check's rules (1 to IK_TAG_NAME_MAX
 * of [A-Za-z0-9._:-], not "." or ".."), checked in place; 0 if not, or not sure
 * (the caller asks ik_tag_name_check, which says why). */
static int tag_name_ok(const char *a, size_t n)
{
    if (n == 0 || n > IK_TAG_NAME_MAX || (a[0] == '.' && (n == 1 || (n == 2 && a[1] == '.'))))
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)a[i];
        if ((unsigned)((ch | 0x20) - 'a') >= 26 && (unsigned)(ch - '0') >= 10 && ch != '.' &&
            ch != '_' && ch != ':' && ch != '-')
            return 0;
    }
    return 1;
}

/* Argument i as a tag name into tag; -ERR and -1 if it is not one. */
static int get_tag(ik__rcall *c, uint32_t i, char tag[IK_TAG_NAME_MAX + 1])
{
    size_t n;
    const char *a = arg(c, i, &n);
    char why[160];
    if (tag_name_ok(a, n)) { /* the common case, without copying twice */
        memcpy(tag, a, n + 1);
        return 0;
    }
    if (n <= IK_TAG_NAME_MAX && memchr(a, 0, n) == NULL) {
        memcpy(tag, a, n + 1);
        if (ik_tag_name_check(tag, why, sizeof why) == 0) return 0;
    } else {
        snprintf(why, sizeof why, "1 to %d characters of [A-Za-z0-9._:-]", IK_TAG_NAME_MAX);
    }
    char q[140];
    ik__resp_quote(q, a, n);
    ik__resp_error(c->out, "ERR bad tag name %s: %s", q, why);
    return -1;
}

/* Argument i as a count 1..max-batch into *n; -ERR and -1 if it is not. */
static int get_count(ik__rcall *c, uint32_t i, uint32_t *n, const char *what)
{
    size_t len;
    const char *a = arg(c, i, &len);
    int64_t v;
    uint32_t max = c->w->srv->cfg->max_batch;
    if (ik__parse_i64(a, len, &v) != 0) {
        ik__resp_error(c->out, "ERR value is not an integer or out of range");
        return -1;
    }
    if (v < 1 || v > max) {
        ik__resp_error(c->out, "ERR %s must be from 1 to %u (max-batch)", what, max);
        return -1;
    }
    *n = (uint32_t)v;
    return 0;
}

/* [COUNT N] from argument i on: *n (1 if absent), *array (1 if given); -1 after an
 * error answer. */
static int get_count_opt(ik__rcall *c, uint32_t i, uint32_t *n, int *array)
{
    uint32_t argc = argc_of(c);
    *n = 1;
    *array = 0;
    if (argc == i) return 0;
    if (argc != i + 2 || !arg_is(c, i, "count")) {
        syntax_error(c);
        return -1;
    }
    *array = 1;
    return get_count(c, i + 1, n, "COUNT");
}

/* ---- the tag-kind cache --------------------------------------------------------------------- */

static uint32_t hash_tag(const char *s)
{
    uint32_t h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static int kind_get(const ik__rkinds *k, const char *tag)
{
    for (uint32_t i = hash_tag(tag) % IK_RKINDS, probes = 0; probes < IK_RKINDS;
         i = (i + 1) % IK_RKINDS, probes++) {
        if (!k->e[i].kind) return 0;
        if (strcmp(k->e[i].tag, tag) == 0) return k->e[i].kind;
    }
    return 0;
}

static void kind_put(ik__rkinds *k, const char *tag, int kind)
{
    if (k->n >= IK_RKINDS / 2) { /* full enough: start over */
        memset(k, 0, sizeof *k);
    }
    for (uint32_t i = hash_tag(tag) % IK_RKINDS;; i = (i + 1) % IK_RKINDS) {
        if (!k->e[i].kind) {
            k->e[i].kind = (uint8_t)kind;
            snprintf(k->e[i].tag, sizeof k->e[i].tag, "%s", tag);
            k->n++;
            return;
        }
        if (strcmp(k->e[i].tag, tag) == 0) {
            k->e[i].kind = (uint8_t)kind;
            return;
        }
    }
}

/* ---- answers of ID commands ------------------------------------------------------------------ */

/* The library's refusal of a tag request as a RESP error. incr: the command was
 * INCR/INCRBY, which serves either kind. */
static void put_store_error(ik__worker *w, ik__buf *out, int op, int rc, const char *tag, int incr)
{
    const char *code;
    char msg[400];
    if (rc == IK_ENOTFOUND && incr) {
        ik__resp_error(out,
                       "NOTAG no tag '%s': create it first (idkeeper tags add %s --kind "
                       "sequence|segment, or POST /v1/tags)",
                       tag, tag);
        return;
    }
    if (rc == IK_EKIND) {
        ik__resp_error(out, "WRONGTYPE tag '%s' is a %s tag: use IDK.%s or INCR", tag,
                       op == IK_OP_SEQUENCE ? "segment" : "sequence",
                       op == IK_OP_SEQUENCE ? "SEGMENT" : "SEQUENCE");
        return;
    }
    int st = ik__store_error(w, op, rc, tag, &code, msg, sizeof msg);
    ik__resp_error(out, "%s %s", st == 404 ? "NOTAG" : st == 503 ? "TRYAGAIN" : "ERR", msg);
}

/* The generator's refusal rc: -TRYAGAIN where HTTP answers 503, else -ERR. */
static void put_gen_error(ik__worker *w, ik__buf *out, int rc)
{
    const char *code;
    char msg[400];
    int st = ik__gen_error(w, rc, &code, msg, sizeof msg);
    ik__resp_error(out, "%s %s", st == 503 ? "TRYAGAIN" : "ERR", msg);
}

/* n IDs (ids[], or first + i when ids is NULL) in the answer's shape. */
static void put_ids(ik__buf *out, const int64_t *ids, int64_t first, size_t n, int shape)
{
    if (shape == SH_LAST) {
        ik__resp_int(out, ids ? ids[n - 1] : first + (int64_t)n - 1);
        return;
    }
    ik__buf_reserve(out, 16 + n * 23);
    ik__resp_array(out, n);
    for (size_t i = 0; i < n; i++)
        ik__resp_int(out, ids ? ids[i] : first + (int64_t)i);
}

/* What a pending answer of n IDs in shape is charged against its connection's output
 * limit (conn.h, "Charge"): one integer answers hold at most the ID array while
 * pending; 0 lets the core charge an array's worth. */
static uint32_t charge_of(uint32_t n, int shape)
{
    return shape == SH_LAST ? IK_ANSWER_BYTES + 8u * n : 0;
}

static void count_cmd(ik__worker *w, size_t row, int ok)
{
    ik__count(&w->m.resp_cmds[row][ok ? 0 : 1]);
}

/* Issues n IDs of tag from the allocator op and answers (shape) now or later.
 * flip (IK_RFLIP_*): INCR, which may find the tag of the other kind and ask that
 * one. */
static void issue(ik__rcall *c, int op, const char *tag, uint32_t n, int shape, int flip)
{
    ik__worker *w = c->w;
    int64_t small[64], *ids = ik__ids_scratch(w, n, small);
    if (!ids) {
        ik__resp_error(c->out, "ERR out of memory");
        return;
    }
    for (int tries = 0;; tries++) {
        ik__pend *p;
        int rc = ik__issue(w, (ik__op)op, tag, n, ids, &p);
        if (rc == IK_PENDING) {
            p->rshape = (uint8_t)shape;
            p->rproto = c->s->proto;
            p->rflip = (uint8_t)flip;
            p->charge = charge_of(n, shape);
            c->pend = p;
            return;
        }
        if (rc == IK_OK) {
            /* learnt: a guess that held, or the other kind (a known kind is kept) */
            if (flip == IK_RFLIP_GUESS || tries) kind_put(c->kinds, tag, op);
            put_ids(c->out, op == IK_OP_SEGMENT ? ids : NULL, 0, n, shape);
            break;
        }
        if (rc == IK_EKIND && flip && tries == 0) {
            op = op == IK_OP_SEGMENT ? IK_OP_SEQUENCE : IK_OP_SEGMENT;
            continue;
        }
        put_store_error(w, c->out, op, rc, tag, flip);
        break;
    }
    ik__ids_scratch_trim(w);
}

int ik__resp_render(ik__worker *w, ik__rkinds *kinds, ik__pend *p)
{
    ik__buf *out = &p->out;
    if (p->op == IK_OP_SNOWFLAKE) { /* came back from the loop's retry queue */
        if (p->rc != 0) {
            put_gen_error(w, out, p->rc);
        } else {
            put_ids(out, p->ids, 0, p->nids, p->rshape);
        }
        count_cmd(w, p->route, p->rc == 0);
        return 0;
    }
    if (p->rc == IK_EKIND && p->rflip) { /* INCR guessed the kind wrong: ask the other */
        int op = p->op == IK_OP_SEGMENT ? IK_OP_SEQUENCE : IK_OP_SEGMENT;
        int64_t small[64], *ids = ik__ids_scratch(w, p->n, small);
        p->rflip = 0;
        int rc = ids ? ik__issue_into(w, p, (ik__op)op, ids) : IK_ENOMEM;
        if (rc == IK_PENDING) {
            ik__pend_submitted(w);
            return IK_PENDING;
        }
        p->rc = rc;
        if (rc == IK_OK) {
            kind_put(kinds, p->tag, op);
            put_ids(out, ids, 0, p->n, p->rshape);
            count_cmd(w, p->route, 1);
            ik__ids_scratch_trim(w);
            return 0;
        }
        ik__ids_scratch_trim(w);
    }
    if (p->rc != 0) {
        put_store_error(w, out, p->op, p->rc, p->tag, p->route <= 1);
        count_cmd(w, p->route, 0);
        return 0;
    }
    if (p->route <= 1) kind_put(kinds, p->tag, p->op); /* INCR, INCRBY */
    ik__issue_count(w, p);
    put_ids(out, p->ids, p->first, p->nids, p->rshape);
    count_cmd(w, p->route, 1);
    return 0;
}

/* ---- ID commands ------------------------------------------------------------------------------
 */

/* INCR TAG, INCRBY TAG N: the kind learnt for the tag, else segment first. */
static void incr_n(ik__rcall *c, uint32_t n)
{
    char tag[IK_TAG_NAME_MAX + 1];
    if (get_tag(c, 1, tag) != 0) return;
    int kind = kind_get(c->kinds, tag);
    issue(c, kind ? kind : IK_OP_SEGMENT, tag, n, SH_LAST, kind ? IK_RFLIP_KNOWN : IK_RFLIP_GUESS);
}

static void c_incr(ik__rcall *c)
{
    incr_n(c, 1);
}

static void c_incrby(ik__rcall *c)
{
    uint32_t n;
    if (get_count(c, 2, &n, "the increment") != 0) return;
    incr_n(c, n);
}

static void c_snowflake(ik__rcall *c)
{
    uint32_t n;
    int array;
    if (get_count_opt(c, 1, &n, &array) != 0) return;
    ik__worker *w = c->w;
    int64_t small[64], *ids = ik__ids_scratch(w, n, small);
    if (!ids) {
        ik__resp_error(c->out, "ERR out of memory");
        return;
    }
    ik__pend *p;
    int rc = ik__sf_issue(w, n, ids, &p); /* never sleeps on the loop */
    if (rc == IK_PENDING) {
        p->rshape = (uint8_t)(array ? SH_ARRAY : SH_LAST);
        p->rproto = c->s->proto;
        p->charge = charge_of(n, p->rshape);
        c->pend = p;
    } else if (rc != 0) {
        put_gen_error(w, c->out, rc);
    } else {
        put_ids(c->out, ids, 0, n, array ? SH_ARRAY : SH_LAST);
    }
    ik__ids_scratch_trim(w);
}

static void tag_cmd(ik__rcall *c, int op)
{
    char tag[IK_TAG_NAME_MAX + 1];
    uint32_t n;
    int array;
    if (get_tag(c, 1, tag) != 0) return;
    if (get_count_opt(c, 2, &n, &array) != 0) return;
    issue(c, op, tag, n, array ? SH_ARRAY : SH_LAST, 0);
}

static void c_segment(ik__rcall *c)
{
    tag_cmd(c, IK_OP_SEGMENT);
}

static void c_sequence(ik__rcall *c)
{
    tag_cmd(c, IK_OP_SEQUENCE);
}

static void c_decode(ik__rcall *c)
{
    size_t n;
    const char *a = arg(c, 1, &n);
    int64_t id;
    ik_id_parts parts;
    if (ik_parse_id(a, n, &id) != 0 || ik_layout_decode(c->w->srv->layout, id, &parts) != 0) {
        char q[140];
        ik__resp_quote(q, a, n);
        ik__resp_error(c->out,
                       "ERR %s is not an ID: want a decimal integer from 0 to "
                       "9223372036854775807 without sign or leading zeros",
                       q);
        return;
    }
    char iso[32];
    ik__fmt_iso8601(iso, parts.time_ms);
    ik__buf *b = c->out;
    ik__resp_map(b, 5, c->s->proto);
    ik__resp_bulk_str(b, "id");
    ik__resp_int(b, parts.id);
    ik__resp_bulk_str(b, "time_ms");
    ik__resp_int(b, parts.time_ms);
    ik__resp_bulk_str(b, "time");
    ik__resp_bulk_str(b, iso);
    ik__resp_bulk_str(b, "worker");
    ik__resp_int(b, parts.worker);
    ik__resp_bulk_str(b, "sequence");
    ik__resp_int(b, parts.sequence);
}

/* ---- connection commands ------------------------------------------------------------------- */

static void c_ping(ik__rcall *c)
{
    size_t n;
    uint32_t argc = argc_of(c);
    if (argc > 2) {
        wrong_args(c, "ping");
    } else if (argc == 2) {
        const char *a = arg(c, 1, &n);
        ik__resp_bulk(c->out, a, n);
    } else {
        ik__resp_simple(c->out, "PONG");
    }
}

static void c_echo(ik__rcall *c)
{
    size_t n;
    const char *a = arg(c, 1, &n);
    ik__resp_bulk(c->out, a, n);
}

/* 1 if user/token (arguments u and t; u == 0: no user) is "default"/the token. With
 * no token the default user has no password, as Redis's without requirepass: any
 * password passes for it (c_auth refuses AUTH TOKEN alone before this). */
static int check_auth(ik__rcall *c, uint32_t u, uint32_t t)
{
    ik__server *srv = c->w->srv;
    size_t n;
    if (u && !arg_is(c, u, "default")) return 0;
    if (!srv->token) return 1;
    const char *a = arg(c, t, &n);
    return ik__ct_equal(a, n, srv->token, srv->token_len);
}

static void c_auth(ik__rcall *c)
{
    uint32_t argc = argc_of(c);
    if (argc > 3) {
        syntax_error(c);
        return;
    }
    if (!c->w->srv->token && argc == 2) { /* Redis 7: only the old form is refused */
        ik__resp_error(c->out, "ERR AUTH <password> called without any password configured for the "
                               "default user. Are you sure your configuration is correct?");
        return;
    }
    if (!check_auth(c, argc == 3 ? 1 : 0, argc - 1)) {
        ik__resp_error(c->out, "WRONGPASS invalid username-password pair or user is disabled.");
        return;
    }
    c->s->authed = 1;
    ik__resp_simple(c->out, "OK");
}

static void c_hello(ik__rcall *c)
{
    uint32_t argc = argc_of(c);
    int proto = c->s->proto;
    uint32_t i = 1;
    if (argc >= 2) {
        size_t n;
        const char *a = arg(c, 1, &n);
        int64_t v;
        if (ik__parse_i64(a, n, &v) != 0) {
            ik__resp_error(c->out, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (v != 2 && v != 3) {
            ik__resp_error(c->out, "NOPROTO unsupported protocol version");
            return;
        }
        proto = (int)v;
        i = 2;
    }
    const char *name = NULL;
    size_t name_len = 0;
    int authed = c->s->authed;
    for (; i < argc; i++) {
        if (arg_is(c, i, "auth") && i + 2 < argc) {
            if (!check_auth(c, i + 1, i + 2)) {
                ik__resp_error(c->out,
                               "WRONGPASS invalid username-password pair or user is disabled.");
                return;
            }
            authed = 1;
            i += 2;
        } else if (arg_is(c, i, "setname") && i + 1 < argc) {
            name = arg(c, i + 1, &name_len);
            i += 1;
        } else {
            ik__resp_error(c->out, "ERR Syntax error in HELLO option '%.40s'", arg(c, i, NULL));
            return;
        }
    }
    if (!authed) {
        ik__resp_error(c->out,
                       "NOAUTH HELLO must be called with the client already authenticated, "
                       "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                       "authenticate the client and select the RESP protocol version at the same "
                       "time");
        return;
    }
    if (name) {
        if (name_len >= sizeof c->s->name || memchr(name, ' ', name_len) ||
            memchr(name, '\n', name_len)) {
            ik__resp_error(c->out, "ERR Client names cannot contain spaces, newlines or special "
                                   "characters.");
            return;
        }
        memcpy(c->s->name, name, name_len);
        c->s->name[name_len] = 0;
    }
    c->s->authed = (uint8_t)authed;
    c->s->proto = (uint8_t)proto;
    ik__buf *b = c->out;
    ik__resp_map(b, 7, proto);
    ik__resp_bulk_str(b, "server");
    ik__resp_bulk_str(b, "idkeeper");
    ik__resp_bulk_str(b, "version");
    ik__resp_bulk_str(b, ik_version());
    ik__resp_bulk_str(b, "proto");
    ik__resp_int(b, proto);
    ik__resp_bulk_str(b, "id");
    ik__resp_int(b, (int64_t)c->s->id);
    ik__resp_bulk_str(b, "mode");
    ik__resp_bulk_str(b, "standalone");
    ik__resp_bulk_str(b, "role");
    ik__resp_bulk_str(b, "master");
    ik__resp_bulk_str(b, "modules");
    ik__resp_array(b, 0);
}

static void c_select(ik__rcall *c)
{
    size_t n;
    const char *a = arg(c, 1, &n);
    int64_t v;
    if (ik__parse_i64(a, n, &v) != 0) {
        ik__resp_error(c->out, "ERR value is not an integer or out of range");
    } else if (v != 0) {
        ik__resp_error(c->out, "ERR DB index is out of range");
    } else {
        ik__resp_simple(c->out, "OK");
    }
}

/* CLIENT INFO's line for this connection. */
static void client_info(ik__rcall *c, ik__buf *b)
{
    ik__rsess *s = c->s;
    ik__buf_printf(b,
                   "id=%llu addr=%s laddr=%s name=%s age=%lld db=0 resp=%d lib-name=%s "
                   "cmd=client|info\n",
                   (unsigned long long)s->id, s->peer, s->local, s->name,
                   (long long)((ik__now_ms() - s->since_ms) / 1000), s->proto, s->lib);
}

static void c_client(ik__rcall *c)
{
    uint32_t argc = argc_of(c);
    ik__rsess *s = c->s;
    if (arg_is(c, 1, "id") && argc == 2) {
        ik__resp_int(c->out, (int64_t)s->id);
    } else if (arg_is(c, 1, "setname") && argc == 3) {
        size_t n;
        const char *a = arg(c, 2, &n);
        for (size_t i = 0; i < n; i++)
            if (a[i] <= ' ' || a[i] > '~') {
                ik__resp_error(c->out, "ERR Client names cannot contain spaces, newlines or "
                                       "special characters.");
                return;
            }
        if (n >= sizeof s->name) {
            ik__resp_error(c->out, "ERR client names are at most %zu bytes here",
                           sizeof s->name - 1);
            return;
        }
        memcpy(s->name, a, n);
        s->name[n] = 0;
        ik__resp_simple(c->out, "OK");
    } else if (arg_is(c, 1, "getname") && argc == 2) {
        if (s->name[0]) {
            ik__resp_bulk_str(c->out, s->name);
        } else {
            ik__resp_null(c->out, s->proto);
        }
    } else if (arg_is(c, 1, "info") && argc == 2) {
        ik__buf line;
        char tmp[512];
        ik__buf_init(&line, tmp, sizeof tmp);
        client_info(c, &line);
        ik__resp_bulk(c->out, line.p, line.len);
        ik__buf_reset(&line);
    } else if (arg_is(c, 1, "setinfo") && argc == 4) {
        if (arg_is(c, 2, "lib-name")) {
            size_t n;
            const char *a = arg(c, 3, &n);
            snprintf(s->lib, sizeof s->lib, "%.*s", (int)(n < 63 ? n : 63), a);
            for (char *p = s->lib; *p; p++)
                if (*p <= ' ' || *p > '~') *p = '_';
        } else if (!arg_is(c, 2, "lib-ver")) {
            ik__resp_error(c->out, "ERR Unrecognized option '%.40s'", arg(c, 2, NULL));
            return;
        }
        ik__resp_simple(c->out, "OK");
    } else {
        unknown_subcommand(c, "CLIENT");
    }
}

/* COMMAND INFO's entry for row r. */
static void command_info(ik__buf *b, const cmd_row *r)
{
    ik__resp_array(b, 10);
    ik__resp_bulk_str(b, r->name);
    ik__resp_int(b, r->arity);
    int noauth = (r->flags & F_NOAUTH) != 0;
    ik__resp_array(b, noauth ? 2 : 1);
    ik__resp_simple(b, "fast");
    if (noauth) ik__resp_simple(b, "no_auth");
    int keyed = r->fn == c_incr || r->fn == c_incrby;
    ik__resp_int(b, keyed);
    ik__resp_int(b, keyed);
    ik__resp_int(b, keyed);
    ik__resp_array(b, 0); /* ACL categories */
    ik__resp_array(b, 0); /* tips */
    ik__resp_array(b, 0); /* key specs */
    ik__resp_array(b, 0); /* subcommands */
}

static const cmd_row *find_cmd(const char *a, size_t n)
{
    for (size_t i = 0; i < NCMDS; i++)
        if (ik__ieq(a, n, cmds[i].name)) return &cmds[i];
    return NULL;
}

static void command_docs(ik__buf *b, const cmd_row *r, int proto)
{
    ik__resp_bulk_str(b, r->name);
    ik__resp_map(b, 3, proto);
    ik__resp_bulk_str(b, "summary");
    ik__resp_bulk_str(b, r->summary);
    ik__resp_bulk_str(b, "since");
    ik__resp_bulk_str(b, "1.0.0");
    ik__resp_bulk_str(b, "group");
    ik__resp_bulk_str(b, r->group);
}

static void c_command(ik__rcall *c)
{
    uint32_t argc = argc_of(c);
    ik__buf *b = c->out;
    if (argc == 1) {
        ik__resp_array(b, NCMDS);
        for (size_t i = 0; i < NCMDS; i++)
            command_info(b, &cmds[i]);
    } else if (arg_is(c, 1, "count") && argc == 2) {
        ik__resp_int(b, (int64_t)NCMDS);
    } else if (arg_is(c, 1, "info")) {
        if (argc == 2) {
            ik__resp_array(b, NCMDS);
            for (size_t i = 0; i < NCMDS; i++)
                command_info(b, &cmds[i]);
            return;
        }
        ik__resp_array(b, argc - 2);
        for (uint32_t i = 2; i < argc; i++) {
            size_t n;
            const char *a = arg(c, i, &n);
            const cmd_row *r = find_cmd(a, n);
            if (r) {
                command_info(b, r);
            } else {
                ik__resp_null(b, c->s->proto);
            }
        }
    } else if (arg_is(c, 1, "docs")) {
        if (argc == 2) {
            ik__resp_map(b, NCMDS, c->s->proto);
            for (size_t i = 0; i < NCMDS; i++)
                command_docs(b, &cmds[i], c->s->proto);
            return;
        }
        size_t found = 0;
        for (uint32_t i = 2; i < argc; i++) {
            size_t n;
            const char *a = arg(c, i, &n);
            found += find_cmd(a, n) != NULL;
        }
        ik__resp_map(b, found, c->s->proto);
        for (uint32_t i = 2; i < argc; i++) {
            size_t n;
            const char *a = arg(c, i, &n);
            const cmd_row *r = find_cmd(a, n);
            if (r) command_docs(b, r, c->s->proto);
        }
    } else {
        unknown_subcommand(c, "COMMAND");
    }
}

static void c_info(ik__rcall *c)
{
    ik__server *srv = c->w->srv;
    ik__buf b;
    char tmp[1024];
    ik__buf_init(&b, tmp, sizeof tmp);
    int64_t now = ik__now_ms();
    ik__buf_printf(&b,
                   "# Server\r\nredis_version:7.0.0\r\nidkeeper_version:%s\r\n"
                   "redis_mode:standalone\r\nprocess_id:%ld\r\ntcp_port:%s\r\n"
                   "uptime_in_seconds:%lld\r\nio_threads_active:%d\r\n\r\n"
                   "# Clients\r\nconnected_clients:%d\r\nmaxclients:%d\r\n\r\n"
                   "# Idkeeper\r\napp:%s\r\nbackend:%s\r\nlayout:%s\r\nhttp:%s\r\n\r\n"
                   "# Keyspace\r\n",
                   ik_version(), (long)getpid(), strrchr(srv->resp_text, ':') + 1,
                   (long long)((now - srv->started_ms) / 1000), srv->nworkers,
                   atomic_load_explicit(&srv->connections, memory_order_relaxed),
                   srv->cfg->max_connections, srv->cfg->app, ik_coord_uri(srv->coord),
                   srv->layout_text, srv->listen_text);
    ik__resp_bulk(c->out, b.p, b.len);
    ik__buf_reset(&b);
}

/* CONFIG GET: the two parameters redis-benchmark asks for at start (else it warns);
 * idkeeper has no Redis persistence settings (docs/resp.md). */
static void c_config(ik__rcall *c)
{
    uint32_t argc = argc_of(c);
    if (!arg_is(c, 1, "get") || argc < 3) {
        ik__resp_error(c->out, "ERR only CONFIG GET is answered here (save, appendonly)");
        return;
    }
    static const char *const known[][2] = {{"save", ""}, {"appendonly", "no"}};
    size_t found = 0;
    for (size_t k = 0; k < 2; k++)
        for (uint32_t i = 2; i < argc; i++)
            if (arg_is(c, i, known[k][0]) || arg_is(c, i, "*")) {
                found++;
                break;
            }
    ik__resp_map(c->out, found, c->s->proto);
    for (size_t k = 0; k < 2; k++)
        for (uint32_t i = 2; i < argc; i++)
            if (arg_is(c, i, known[k][0]) || arg_is(c, i, "*")) {
                ik__resp_bulk_str(c->out, known[k][0]);
                ik__resp_bulk_str(c->out, known[k][1]);
                break;
            }
}

static void c_quit(ik__rcall *c)
{
    c->s->quit = 1;
    ik__resp_simple(c->out, "OK");
}

static void c_reset(ik__rcall *c)
{
    ik__rsess *s = c->s;
    s->proto = 2;
    s->name[0] = 0;
    s->authed = c->w->srv->token == NULL;
    ik__resp_simple(c->out, "RESET");
}

/* ---- dispatch ----------------------------------------------------------------------------------
 */

/* A command named POST or Host: (ik__resp_cross_protocol): an HTTP request on this
 * port, a browser made to post a form here, whose next lines must not run. As
 * redis-server: nothing answered, the connection closes (quit), logged at most once
 * a minute per loop (docs/resp.md, "Errors"). Off the hot path: only for names not
 * in the table. */
static void cross_protocol(ik__rcall *c, const char *name, size_t n)
{
    ik__worker *w = c->w;
    uint64_t now = uv_now(&w->loop);
    if (w->attack_logged_ms == 0 || now - w->attack_logged_ms >= 60000) {
        w->attack_logged_ms = now;
        ik__log("Possible SECURITY ATTACK detected: a %s line from %s on the RESP port, an "
                "HTTP request (a web page can make a browser send one); connection closed, "
                "nothing in it run",
                n == 4 ? "POST" : "Host:", c->s->peer);
    }
    c->s->quit = 1;
}

void ik__resp_dispatch(ik__rcall *c)
{
    ik__worker *w = c->w;
    size_t n;
    const char *name = arg(c, 0, &n);
    uint32_t argc = argc_of(c);
    size_t row = NCMDS;
    const cmd_row *r = NULL;
    /* the hot one first (| 0x20: a letter's lower case, and only the two cases of it
     * match a lower-case letter) */
    if (n == 4 && (name[0] | 0x20) == 'i' && (name[1] | 0x20) == 'n' && (name[2] | 0x20) == 'c' &&
        (name[3] | 0x20) == 'r') {
        r = &cmds[0];
    } else {
        r = find_cmd(name, n);
    }
    size_t before = c->out->len;
    c->pend = NULL;
    if (!r && ik__resp_cross_protocol(name, n)) {
        cross_protocol(c, name, n);
        count_cmd(w, NCMDS, 0);
        return;
    }
    if (!r) {
        char q[140], args[600];
        size_t k = 0;
        args[0] = 0;
        for (uint32_t i = 1; i < argc && k < sizeof args - 140; i++) {
            size_t an;
            const char *a = arg(c, i, &an);
            ik__resp_quote(q, a, an);
            k += (size_t)snprintf(args + k, sizeof args - k, "%s ", q);
        }
        ik__resp_quote(q, name, n);
        ik__resp_error(c->out, "ERR unknown command %s, with args beginning with: %s", q, args);
    } else {
        row = (size_t)(r - cmds);
        if (!c->s->authed && !(r->flags & F_NOAUTH)) {
            ik__resp_error(c->out, "NOAUTH Authentication required.");
        } else if ((r->arity > 0 && argc != (uint32_t)r->arity) ||
                   (r->arity < 0 && argc < (uint32_t)-r->arity)) {
            wrong_args(c, r->name);
        } else {
            r->fn(c);
        }
    }
    if (c->pend) {
        c->pend->route = (uint16_t)row;
        return;
    }
    count_cmd(w, row, !(c->out->len > before && c->out->p[before] == '-'));
}
