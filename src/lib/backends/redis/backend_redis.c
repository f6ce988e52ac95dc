/* backend_redis.c: the redis:// backend (redis://HOST[:PORT][/DB],
 * redis+unix:///PATH) as the seam sees it: its ops tables, and the open and close
 * that make and free its parts. The work is done below, each part in a file of its
 * own:
 *
 *   backend_redis_slots.c   worker slots: token keys with a TTL, the time record
 *   backend_redis_tags.c    tags: INCRBY counters and our hash beside each
 *   redis_scripts.c         the Lua scripts every write runs as (the key layout)
 *   redis_conn.c            connections, the store hazard checks, running scripts
 *   redis_uri.c             the URI syntax (pure)
 *
 * No locks or elections: Redis cannot fence them (a failover to a replica that lacks
 * the lock key lets a second holder in while the first still runs), so .recipe is
 * NULL and no_locks says why. Calls go one way: coord.c -> this file -> slots,
 * tags -> redis_conn.c. docs/redis.md has the key layout and the failure model.
 */
#include "backend.h"
#include "internal.h"
#include "redis_conn.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

static void redis_close(ik__backend *be)
{
    ik__redis_backend *b = ik__redis_backend_of(be);
    if (!b) return;
    ik__redis_client_close(&b->rc);
    ik__hazards_free(&b->base.hz);
    free(b);
}

static int redis_open(const char *uri, const ik_coord_options *o, ik__backend **out, char *why,
                      size_t why_len)
{
    ik__redis_backend *b = calloc(1, sizeof *b);
    if (!b) return IK_ENOMEM;
    b->base.ops = &ik__backend_redis_ops;
    int rc = ik__redis_client_open(&b->rc, uri, o, &b->base.hz, why, why_len);
    if (rc) {
        redis_close(&b->base);
        return rc;
    }
    *out = &b->base;
    return IK_OK;
}

const char *ik__redis_uri(const ik__backend *be)
{
    return ((const ik__redis_backend *)be)->rc.uri;
}

int64_t ik__redis_slot_free_ms(ik__backend *be)
{
    return ik__redis_backend_of(be)->rc.lease_ttl_ms;
}

#define NO_LOCKS                                                                                   \
    "Redis offers no locks or elections here: it cannot fence them (a failover to a replica "      \
    "that lacks the lock lets a second holder in while the first still runs); use zk:// "          \
    "(ZooKeeper), postgresql:// or mysql:// for a fleet, or local:DIR on one host"

/* The seam's hazards_check (backend.h): every check now, on a pooled connection. */
static int redis_hazards_check(ik__backend *be, char *why, size_t why_len)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    int e = IK_OK;
    redisContext *ctx = ik__redis_get(rc, 5000, &e, why, why_len);
    if (!ctx) return e;
    e = ik__redis_hazards(rc, ctx, why, why_len);
    ik__redis_put(rc, ctx, e == IK_ESTORE);
    return e;
}

static void redis_cut(ik__backend *be)
{
    ik__redis_client_cut(&ik__redis_backend_of(be)->rc);
}

static void redis_client_version(char *buf, size_t len)
{
    /* hiredis has no run-time call: the version built against */
    snprintf(buf, len, "hiredis %d.%d.%d", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
}

/* Its options (rules.h, "store options"), one table for both schemes: --redis-NAME,
 * or ?NAME= in the URI beside its own keys (db, prefix, user). */
static const ik__store_option redis_options[] = {
    {.family = "redis",
     .name = "wait-replicas",
     .shape = IK__STORE_INT,
     .min = 0,
     .max = 100,
     .def = "0",
     .metavar = "N",
     .help = "each counter write waits until N replicas have it (WAIT); one not confirmed in "
             "time is in doubt and never handed out",
     .legacy = offsetof(ik_coord_options, redis_wait_replicas)},
    {.name = NULL},
};

#define REDIS_OPS(SCHEME, FORM, EXAMPLES)                                                          \
    {                                                                                              \
        .scheme = (SCHEME), .uri_form = (FORM), .uri_examples = (EXAMPLES), .takes_password = 1,   \
        .uri_check = ik__redis_uri_check, .recipe = NULL, .no_locks = NO_LOCKS,                    \
        .options = redis_options, .uri_keys = "db, prefix, user", .open = redis_open,              \
        .close = redis_close, .uri = ik__redis_uri, .slot_acquire = ik__redis_slot_acquire,        \
        .slot_persist = ik__redis_slot_persist, .slot_release = ik__redis_slot_release,            \
        .slot_forget = ik__redis_slot_forget, .recover = NULL, .slots_list = ik__redis_slots_list, \
        .slot_free_ms = ik__redis_slot_free_ms, .slot_frees_after = IK__FREES_AFTER_LEASE_TTL,     \
        .session = ik__redis_session_desc, .hazards_check = redis_hazards_check, .cut = redis_cut, \
        .client_version = redis_client_version, .tag_create = ik__redis_tag_create,                \
        .tag_get = ik__redis_tag_get, .tag_list = ik__redis_tag_list,                              \
        .tag_advance = ik__redis_tag_advance, .tag_settle = ik__redis_tag_settle, .tag_lanes = 64, \
    }

static const char *const redis_examples[] = {"redis://127.0.0.1:6379/0",
                                             "redis://h:7000/2?prefix=ik/&user=idkeeper", NULL};
static const char *const redis_unix_examples[] = {"redis+unix:///run/redis/redis.sock?db=3", NULL};

const ik__backend_ops ik__backend_redis_ops =
    REDIS_OPS("redis", "redis://HOST[:PORT][/DB]", redis_examples);
/* the same backend on a unix socket: its own scheme, so coord.c finds it */
const ik__backend_ops ik__backend_redis_unix_ops =
    REDIS_OPS("redis+unix", "redis+unix:///PATH", redis_unix_examples);
