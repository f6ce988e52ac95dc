/* backend_redis_tagmeta.c: tags on Redis (redis://): creating a tag and reading what
 * it holds (its hash of kind, start, step and description, and its counter key);
 * docs/redis.md has the key layout, redis_scripts.c the create script. Advancing a
 * tag is backend_redis_tags.c's, over this file.
 *
 * Threads: any; each call takes its own connection from the pool (redis_conn.c).
 */
#include "internal.h"
#include "redis_conn.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void ik__redis_tag_keys(ik__redis_client *rc, const char *app, const char *name, char *meta,
                        char *counter)
{
    char sub[IK_TAG_NAME_MAX + 8];
    snprintf(sub, sizeof sub, "tag/%s", name);
    ik__redis_key(rc, app, sub, meta, IK__REDIS_KEY_MAX);
    ik__redis_counter_key(rc, app, name, counter, IK__REDIS_KEY_MAX);
}

int ik__redis_parse_i64(const char *s, int64_t *v)
{
    if (!s || !*s) return -1;
    char *e;
    errno = 0;
    long long x = strtoll(s, &e, 10);
    if (*e || errno) return -1;
    *v = (int64_t)x;
    return 0;
}

int ik__redis_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                         size_t why_len)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    char meta[IK__REDIS_KEY_MAX], counter[IK__REDIS_KEY_MAX], index[IK__REDIS_KEY_MAX];
    ik__redis_tag_keys(rc, app, t->name, meta, counter);
    ik__redis_key(rc, app, "tags", index, sizeof index);
    char start[24], step[24], now[24], before[24];
    snprintf(start, sizeof start, "%" PRId64, t->start);
    snprintf(step, sizeof step, "%" PRId64, t->step);
    snprintf(now, sizeof now, "%" PRId64, t->update_time_ms);
    snprintf(before, sizeof before, "%" PRId64, t->max_id - 1);
    const char *keys[] = {meta, counter, index};
    const char *args[] = {t->name, ik_tag_kind_name(t->kind), start, step, t->description, now,
                          before};
    int e = IK_OK;
    redisContext *ctx = ik__redis_get_write(rc, IK__REDIS_TAG_TIMEOUT_MS, &e, why, why_len);
    if (!ctx) return e;
    redisReply *r = NULL;
    e = ik__redis_script(rc, ctx, IK__RS_TAG_CREATE, 3, keys, 7, args, 1, &r, NULL, why, why_len);
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    if (e == IK_EINDOUBT)
        e = ik__fail(IK_ESTORE, why, why_len, "tag %s: no answer from redis (it may exist now)",
                     t->name);
    if (e == IK_EUNSAFE) { /* RT6: it ran, but Redis may lose it */
        char inner[400];
        snprintf(inner, sizeof inner, "%s", why);
        e = ik__fail(IK_EUNSAFE, why, why_len,
                     "tag %s: written under a setting that can lose it (it may exist now): %s",
                     t->name, inner);
    }
    if (e) {
        if (r) freeReplyObject(r);
        return e;
    }
    long long code = r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                             r->element[0]->type == REDIS_REPLY_INTEGER
                         ? r->element[0]->integer
                         : -100;
    if (code == -1)
        e = ik__fail(IK_EEXIST, why, why_len, "tag %s exists already", t->name);
    else if (code == -2)
        e = ik__fail(IK_ESTORE, why, why_len,
                     "tag %s: the key %s holds a %s, not an integer counter: pick another tag "
                     "name, or remove the key",
                     t->name, counter,
                     r->elements > 1 && r->element[1]->type == REDIS_REPLY_STRING
                         ? r->element[1]->str
                         : "value of another type");
    else if (code == -3)
        e = ik__fail(IK_ESTORE, why, why_len,
                     "tag %s: the key %s holds a string that is not an integer", t->name, counter);
    else if (code == -4)
        e = ik__fail(IK_ESTORE, why, why_len,
                     "tag %s: the key %s has a TTL: when it expires, an INCR starts it again "
                     "at 1 and IDs repeat; PERSIST it first (docs/redis.md, Adopting a key)",
                     t->name, counter);
    else if (code != 0)
        e = ik__fail(IK_ESTORE, why, why_len, "tag %s: the create script answered oddly", t->name);
    freeReplyObject(r);
    return e;
}

/* The tag's hash fields and counter, read in one round trip. */
static int read_tag(ik__redis_client *rc, redisContext *ctx, const char *app, const char *name,
                    ik_tag_info *out)
{
    char meta[IK__REDIS_KEY_MAX], counter[IK__REDIS_KEY_MAX];
    ik__redis_tag_keys(rc, app, name, meta, counter);
    redisAppendCommand(ctx, "HMGET %s kind start step description update_time", meta);
    redisAppendCommand(ctx, "GET %s", counter);
    redisReply *h = NULL, *g = NULL;
    int e = IK_OK;
    if (redisGetReply(ctx, (void **)&h) != REDIS_OK || redisGetReply(ctx, (void **)&g) != REDIS_OK)
        e = IK_EINDOUBT; /* the connection is broken; a read changes nothing */
    else if (h->type != REDIS_REPLY_ARRAY || h->elements != 5)
        e = IK_ESTORE; /* WRONGTYPE: the key is not our hash */
    else if (h->element[0]->type != REDIS_REPLY_STRING)
        e = IK_ENOTFOUND;
    if (!e) {
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", name);
        if (ik_tag_kind_parse(h->element[0]->str, &out->kind)) e = IK_ESTORE;
        ik__redis_parse_i64(h->element[1]->str, &out->start);
        ik__redis_parse_i64(h->element[2]->str, &out->step);
        if (h->element[3]->type == REDIS_REPLY_STRING)
            snprintf(out->description, sizeof out->description, "%s", h->element[3]->str);
        ik__redis_parse_i64(h->element[4]->str, &out->update_time_ms);
        int64_t v;
        if (g->type == REDIS_REPLY_STRING && ik__redis_parse_i64(g->str, &v) == 0 && v < INT64_MAX)
            out->max_id = v + 1;
        else
            e = IK_ESTORE; /* the counter is gone or not an integer */
    }
    if (h) freeReplyObject(h);
    if (g) freeReplyObject(g);
    return e;
}

int ik__redis_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out,
                      char *why, size_t why_len)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    (void)why, (void)why_len;
    char cause[300];
    int e = IK_OK;
    redisContext *ctx = ik__redis_get(rc, IK__REDIS_TAG_TIMEOUT_MS, &e, cause, sizeof cause);
    if (!ctx) return e;
    e = read_tag(rc, ctx, app, name, out);
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    return e == IK_EINDOUBT ? IK_ESTORE : e;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ik_tag_info *)a)->name, ((const ik_tag_info *)b)->name);
}

int ik__redis_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n_out)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    *out = NULL;
    *n_out = 0;
    char why[300], index[IK__REDIS_KEY_MAX];
    int e = IK_OK;
    redisContext *ctx = ik__redis_get(rc, IK__REDIS_TAG_TIMEOUT_MS, &e, why, sizeof why);
    if (!ctx) return e;
    ik__redis_key(rc, app, "tags", index, sizeof index);
    redisReply *r = redisCommand(ctx, "SMEMBERS %s", index);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r) freeReplyObject(r);
        ik__redis_put(rc, ctx, 1);
        return IK_ESTORE;
    }
    ik_tag_info *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < r->elements && !e; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING) continue;
        if (ik_tag_name_check(r->element[i]->str, NULL, 0)) continue;
        if (ik__grow((void **)&v, &cap, n, sizeof *v, 16)) {
            e = IK_ENOMEM;
            break;
        }
        int g = read_tag(rc, ctx, app, r->element[i]->str, &v[n]);
        if (g == 0)
            n++;
        else if (g != IK_ENOTFOUND)
            e = g;
    }
    freeReplyObject(r);
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    if (e) {
        free(v);
        return e == IK_EINDOUBT ? IK_ESTORE : e;
    }
    if (n) qsort(v, n, sizeof *v, by_name);
    *out = v;
    *n_out = n;
    return IK_OK;
}
