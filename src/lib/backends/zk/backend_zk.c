/* backend_zk.c: the zk:// backend (zk://HOST:PORT[,HOST:PORT...][/CHROOT]) as the
 * seam sees it: its ops table, and the open and close that make and free its
 * parts. The work is done below, each part in a file of its own:
 *
 *   backend_zk_slots.c   worker slots: ephemeral owner nodes, versioned records
 *   backend_zk_leaf.c    worker slots on a Meituan Leaf fleet's own nodes
 *   backend_zk_scan.c    reading many slots at once (slots_list, refusals)
 *   backend_zk_tags.c    tags advanced: version-checked counter nodes with a
 *                        writer table that decides the doubt engine's writes
 *   backend_zk_tagread.c tags made and read (create, get, list)
 *   backend_zk_data.c    the pure parts: node data, names, worker sets, doubts
 *   zk_session.c         the session all of them (and recipe_zk*.c) run on
 *   zk_hazards.c         the store hazard checks (docs/hazards.md): at open, and
 *                        before slot takes, renewals and counter advances (the
 *                        ops table sends those through its gated calls)
 *
 * Calls go one way: coord.c -> this file -> slots, scan, tags -> tagread -> zk_session.c.
 * docs/zookeeper.md has the node layout and the invariants.
 */
#include "backend.h"
#include "backend_zk.h"
#include "internal.h"
#include "zk_hazards.h"
#include "zk_session.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void zk_close(ik__backend *be)
{
    ik__zk_backend *b = ik__zk_backend_of(be);
    if (!b) return;
    ik__zk_hazards_close(be);    /* it stops listening to the client */
    ik__zk_client_close(&b->zc); /* then no completion touches b (ZS6: a handle left
                                    to its thread pays only its requests' waits) */
    ik__zk_slots_free(b->slots);
    ik__zk_tags_free(b->tags);
    free(b->leaf);
    free(b->leaf_takeover);
    ik__hazards_free(&be->hz); /* last: a freed verdict answers "safe" (backend.h) */
    free(b);
}

static int zk_open(const char *uri, const ik_coord_options *o, ik__backend **out, char *why,
                   size_t why_len)
{
    ik__zk_backend *b = calloc(1, sizeof *b);
    if (!b) return IK_ENOMEM;
    b->base.ops = &ik__backend_zk_ops;
    ik__zk_client_init(&b->zc);
    int rc = IK_ENOMEM;
    if (o && ((o->leaf_name && !(b->leaf = strdup(o->leaf_name))) ||
              (o->leaf_takeover && !(b->leaf_takeover = strdup(o->leaf_takeover))))) {
        zk_close(&b->base);
        return IK_ENOMEM;
    }
    if ((b->slots = ik__zk_slots_new()) && (rc = ik__zk_tags_new(&b->tags, why, why_len)) == IK_OK)
        rc = ik__zk_client_open(&b->zc, uri, o, why, why_len);
    if (rc == IK_OK) {
        rc = ik__zk_hazards_open(&b->base, o, why, why_len);
        if (rc == IK_EUNSAFE && o && o->check_only) rc = IK_OK; /* reported, not fatal */
    }
    if (rc) {
        zk_close(&b->base);
        return rc;
    }
    *out = &b->base;
    return IK_OK;
}

static void zk_cut(ik__backend *be)
{
    ik__zk_client_cut(&ik__zk_backend_of(be)->zc);
}

static void zk_stop_begin(ik__backend *be)
{
    ik__zk_client_stopping(&ik__zk_backend_of(be)->zc);
}

static void zk_client_version(char *buf, size_t len)
{
    snprintf(buf, len, "zookeeper %s", ZOO_VERSION); /* the C client has no run-time call */
}

/* Its options (rules.h, "store options"): --zk-NAME, or ?NAME= in the URI. */
static const ik__store_option zk_options[] = {
    {.family = "zk",
     .name = "session-timeout",
     .shape = IK__STORE_INT,
     .min = 100,
     .max = 3600000,
     .def = "10000",
     .metavar = "MS",
     .help = "ZooKeeper session timeout: a dead holder's slot frees after it",
     .legacy = offsetof(ik_coord_options, zk_session_timeout_ms)},
    {.family = "zk",
     .name = "auth",
     .shape = IK__STORE_USERPASS,
     .metavar = "USER:PASSWORD",
     .help = "ZooKeeper digest auth, and ACLs on every node made (prefer the environment or the "
             "config file)",
     .legacy = offsetof(ik_coord_options, zk_auth)},
    {.name = NULL},
};

const ik__backend_ops ik__backend_zk_ops = {
    .scheme = "zk",
    .uri_form = "zk://HOST:PORT[,HOST:PORT...][/CHROOT]",
    .uri_examples = (const char *const[]){"zk://127.0.0.1:2181",
                                          "zk://h1:2181,h2:2181,[::1]:2182/idkeeper", NULL},
    .uri_check = ik__zk_uri_check,
    .recipe = &ik__recipe_zk_ops,
    .options = zk_options,
    .leaf_fleet = 1,
    .open = zk_open,
    .close = zk_close,
    .uri = ik__zk_uri,
    .slot_acquire = ik__zk_gated_slot_acquire,
    .slot_persist = ik__zk_gated_slot_persist,
    .slot_release = ik__zk_slot_release,
    .slot_forget = ik__zk_slot_forget,
    .recover = ik__zk_recover,
    .slots_list = ik__zk_slots_list,
    .slot_free_ms = ik__zk_slot_free_ms,
    .slot_frees_after = "the session timeout",
    .session = ik__zk_session_desc,
    .hazards_check = ik__zk_hazards_check,
    .cut = zk_cut,
    .stop_begin = zk_stop_begin,
    /* zookeeper_close sends the session's close and waits up to 1.5 s for the
     * server to end it (the C client's own bound); after a cut, on a thread of its
     * own (zk_session.c, conn_close) */
    .close_wait_ms = 1500,
    .client_version = zk_client_version,
    .tag_create = ik__zk_tag_create,
    .tag_get = ik__zk_tag_get,
    .tag_list = ik__zk_tag_list,
    .tag_advance = ik__zk_gated_tag_advance,
    .tag_settle = ik__zk_tag_settle,
    .tag_lanes = 1, /* one advance of a tag at a time: ZT2 (backend_zk_tags.c) */
};
