/* backend_zk_leaf.c: worker slots taken as members of a Meituan Leaf snowflake fleet
 * (ik_coord_options.leaf_name), on Leaf's own ZooKeeper nodes; what the take finds,
 * refuses and creates, what a holder checks between its writes, and the fleet's
 * listing. The held slot is then written and released by backend_zk_slots.c like
 * any other, in Leaf's data format (docs/zookeeper.md, "A Leaf fleet"; the runbook
 * is docs/migration-from-leaf.md).
 *
 * Node layout, CHROOT = the zk:// URI's chroot, NAME = the leaf name:
 *
 *   CHROOT/snowflake/NAME/forever/IP:PORT-NNNNNNNNNN   Leaf's: persistent
 *       sequential, data {"ip":"IP","port":"PORT","timestamp":MS}; the worker
 *       number is the 10-digit suffix; never reused (ZooKeeper's counter only grows)
 *   CHROOT/idkeeper/leaf/NAME/owners/NNNN              ours: ephemeral, the live
 *       idkeeper holder of number NNNN (the fencing Leaf lacks)
 *   CHROOT/idkeeper/leaf/NAME/marks/IP:PORT            ours: persistent, the mark:
 *       written only together with IP:PORT's Leaf node (ZLF4)
 *
 * Why a mark. A Leaf server caches its number in workerID.properties, and whenever
 * its start-up checks fail (ZooKeeper unreachable, a node's timestamp ahead of its
 * clock, a node it cannot parse) it starts on the cached number without writing a
 * heartbeat (Leaf's SnowflakeZookeeperHolder.init). Nothing in ZooKeeper can fence
 * such a server, so idkeeper issues only on numbers no Leaf server has held: nodes
 * idkeeper made and no one else wrote since. The mark says which those are.
 *
 * Invariants
 *   ZLF1. A number is used only as the suffix of a node whose name carries this
 *       server's identity: ZooKeeper gives each sequential node a distinct suffix,
 *       so no Leaf server is ever given a number an idkeeper server made.
 *   ZLF2. Number 0 is never used: Leaf's first start on a missing forever path
 *       uses 0 whatever suffix it got, so two Leaf servers may both hold it. A node
 *       of ours with suffix 0 is deleted before it is used.
 *   ZLF3. A number is taken only with one zoo_multi [set the Leaf node at the
 *       version read, set (or create) the identity's mark, create our owner node],
 *       and every later write of it is [check owner, set the node at our version,
 *       set the mark] (backend_zk_slots.c): two idkeeper servers cannot both hold
 *       it, and a write by anyone else makes the holder's next write fail, which
 *       stops its issuing; it does not take the number back (ZLF5).
 *   ZLF4. The mark of IP:PORT is written only in a transaction that also creates or
 *       writes IP:PORT's Leaf node, so the node was last written by idkeeper iff its
 *       mzxid is the mark's ("idkeeper's node"). Its timestamp is then the record
 *       an idkeeper holder wrote, above every ID issued under it: the floor, at once.
 *   ZLF5. A node that is not idkeeper's was made or written by a Leaf server, which
 *       may start on its number from its cache at any time: it is never taken,
 *       unless ik_coord_options.leaf_takeover names the identity (the operator's
 *       word that its Leaf deployment and cache are gone; docs/migration-from-leaf.md).
 *       Then it is taken by ZLF7, and the take makes it idkeeper's.
 *   ZLF6. One node per identity. A node is made only with the mark in one zoo_multi
 *       [create the mark | set it at the version read, create the node], so two
 *       idkeeper servers cannot both make one; after the create a scan that finds
 *       another node of the identity (a Leaf server made one meanwhile) deletes
 *       ours, never used, and yields. While a number is held, another node of its
 *       identity appearing (a watch on forever's children, ik__zk_leaf_recheck)
 *       loses it.
 *   ZLF7. Taken over (ZLF5), a node is taken only once its timestamp is older than
 *       IK__ZK_LEAF_HEARTBEAT_MS + IK__ZK_LEAF_SKEW_MS by this clock (a Leaf server
 *       writes it every 3 s while it runs), and the floor is that timestamp plus
 *       the same: a Leaf server issues IDs up to its next heartbeat, not only up to
 *       its last one.
 *   ZLF8. The time record is the node's `timestamp`, as Leaf writes it. Every write
 *       of it but a release's, from the node's creation on, puts it at least
 *       IK__ZK_LEAF_HEARTBEAT_MS + IK__ZK_LEAF_SKEW_MS ahead of this clock (or at the
 *       lease's record, if later: ik__zk_leaf_stamp), so a Leaf server started on the
 *       identity, its clock within the skew margin, fails its start-up check and
 *       starts, if at all, on its own cached number (ZLF5: never this one). A release
 *       lowers it to the first ms after the last ID.
 *
 * The take (ik__zk_leaf_take), one pass; IK_ENOSLOT passes are tried again by the
 * lease within its slot wait:
 *
 *   scan --no node of the identity--> make_node --made--> scan again
 *        --alone--> judge
 *        --another node beside ours--> unmake (ours deleted): IK_ENOSLOT (yield)
 *   make_node --the mark moved (another idkeeper server makes it)--> IK_ENOSLOT
 *   scan --one node--> judge --idkeeper's--> claim (floor: its record)
 *        judge --a Leaf server's, no takeover--> IK_ESTORE (refused, ZLF5)
 *        judge --a Leaf server's, takeover--> leaf_quiet --quiet--> claim (ZLF7)
 *                                             --may be alive--> IK_ENOSLOT
 *   scan --two nodes, a malformed name--> IK_ESTORE (refused, naming them)
 *   claim --owner node of another session--> IK_ENOSLOT (naming it)
 *         --zoo_multi ok--> IK_OK   --conflict--> IK_ENOSLOT   --no answer--> IK_EINDOUBT
 *
 * What it deliberately does not do: it never deletes a Leaf node (except one it
 * just made and never used, ZLF2, ZLF6), never takes a number a Leaf server may
 * hold from its cache unless told to, and cannot stop a Leaf server that issues
 * from its cache: no Leaf server learns anything from us but a timestamp.
 */
#include "backend.h"
#include "backend_zk.h"
#include "backend_zk_leaf.h"
#include "internal.h"
#include "zk_session.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEAF_PATH_MAX 512
#define LEAF_DATA_MAX 1024
#define LEAF_NAME_MAX 300

/* ------------------------------------------------------------------------------
 * Pure parts: node names and data
 */
int ik__zk_leaf_parse_name(const char *name, char *ident, size_t ident_len, uint32_t *seq)
{
    size_t n = strlen(name);
    /* Leaf splits the name at every '-' (SnowflakeZookeeperHolder.init): IP:PORT,
     * one '-', 10 digits. */
    if (n < 12 || n - 11 >= ident_len || name[n - 11] != '-') return -1;
    for (size_t i = 0; i < n - 11; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch == '-' || ch == '/' || ch <= 0x20 || ch >= 0x7f) return -1;
    }
    uint64_t v;
    if (ik__zk_parse_u64(name + n - 10, 10, 10, &v) != 0 || v > INT32_MAX) return -1;
    if (!strchr(name, ':') || strchr(name, ':') > name + n - 11) return -1;
    memcpy(ident, name, n - 11);
    ident[n - 11] = '\0';
    *seq = (uint32_t)v;
    return 0;
}

/* Skips JSON white space. */
static const char *ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* A JSON string without escapes other than \" and \\ (Leaf's ip and port never
 * have any) at p: its body into out. The end of it, or NULL. */
static const char *json_str(const char *p, const char *end, char *out, size_t cap)
{
    if (p >= end || *p != '"') return NULL;
    size_t k = 0;
    for (p++; p < end && *p != '"'; p++) {
        if (*p == '\\') {
            if (++p >= end || (*p != '"' && *p != '\\')) return NULL;
        } else if ((unsigned char)*p < 0x20) {
            return NULL;
        }
        if (k + 1 >= cap) return NULL;
        out[k++] = *p;
    }
    if (p >= end) return NULL;
    out[k] = '\0';
    return p + 1;
}

int ik__zk_leaf_parse_data(const char *data, int len, ik__zk_leaf_data *out)
{
    memset(out, 0, sizeof *out);
    if (!data || len <= 0) return -1;
    const char *p = data, *end = data + len;
    p = ws(p, end);
    if (p >= end || *p++ != '{') return -1;
    int seen = 0;
    for (;;) {
        char key[32], val[64];
        p = ws(p, end);
        if (!(p = json_str(p, end, key, sizeof key))) return -1;
        p = ws(p, end);
        if (p >= end || *p++ != ':') return -1;
        p = ws(p, end);
        if (p < end && *p == '"') {
            if (!(p = json_str(p, end, val, sizeof val))) return -1;
            if (!strcmp(key, "ip")) snprintf(out->ip, sizeof out->ip, "%s", val), seen |= 1;
            if (!strcmp(key, "port")) snprintf(out->port, sizeof out->port, "%s", val), seen |= 2;
            if (!strcmp(key, "timestamp")) return -1; /* Leaf writes a number */
        } else {
            /* a number: Leaf writes the port as a string and the timestamp as a
             * long; a numeric port is read too */
            const char *q = p;
            while (q < end && (isdigit((unsigned char)*q) || *q == '-'))
                q++;
            uint64_t v;
            if (q == p || *p == '-' || ik__zk_parse_u64(p, (size_t)(q - p), 10, &v) != 0 ||
                v > (uint64_t)INT64_MAX)
                return -1;
            if (!strcmp(key, "timestamp")) out->timestamp_ms = (int64_t)v, seen |= 4;
            if (!strcmp(key, "port"))
                snprintf(out->port, sizeof out->port, "%" PRIu64, v), seen |= 2;
            p = q;
        }
        p = ws(p, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}') break;
        return -1;
    }
    p = ws(p + 1, end);
    if (p != end || !(seen & 4)) return -1;
    return 0;
}

int ik__zk_leaf_format(char *buf, size_t len, const char *identity, int64_t timestamp_ms)
{
    /* Jackson's order for Leaf's Endpoint (ip, port, timestamp); nothing else, as
     * Leaf's ObjectMapper refuses unknown keys. The port is a string. */
    const char *colon = strrchr(identity, ':');
    if (!colon || strchr(identity, '"') || strchr(identity, '\\')) return -1;
    int n = snprintf(buf, len, "{\"ip\":\"%.*s\",\"port\":\"%s\",\"timestamp\":%" PRId64 "}",
                     (int)(colon - identity), identity, colon + 1, timestamp_ms);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

int ik__zk_leaf_identity_check(const char *identity, char *why, size_t why_len)
{
    const char *colon = strrchr(identity, ':');
    char name[300];
    int n = snprintf(name, sizeof name, "%s-0000000001", identity);
    char back[300];
    uint32_t seq;
    size_t digits = colon ? strspn(colon + 1, "0123456789") : 0;
    /* Leaf's listenAddress is an IPv4 address, ':', and its port (Leaf skips IPv6) */
    if (!colon || colon == identity || memchr(identity, ':', (size_t)(colon - identity)) ||
        digits < 1 || digits > 5 || colon[1 + digits] || n < 0 || (size_t)n >= sizeof name ||
        ik__zk_leaf_parse_name(name, back, sizeof back, &seq) != 0 || strchr(identity, '"') ||
        strchr(identity, '\\'))
        return ik__fail(IK_EINVAL, why, why_len,
                        "identity '%.80s' is not a Leaf IP:PORT (one ':', a numeric port, no "
                        "'-', '/', quote or space; a Leaf fleet names its workers by it)",
                        identity);
    return IK_OK;
}

/* ------------------------------------------------------------------------------
 * Paths
 */
static void forever_path(const ik__zk_backend *b, const char *leaf, char *out, size_t len)
{
    snprintf(out, len, "%s/snowflake/%s/forever", b->zc.chroot, leaf);
}

static void owner_path(const ik__zk_backend *b, const char *leaf, uint32_t w, char *out, size_t len)
{
    char wn[16];
    ik__zk_worker_name(w, wn, sizeof wn);
    snprintf(out, len, "%s/idkeeper/leaf/%s/owners/%s", b->zc.chroot, leaf, wn);
}

static void mark_path(const ik__zk_backend *b, const char *leaf, const char *identity, char *out,
                      size_t len)
{
    snprintf(out, len, "%s/idkeeper/leaf/%s/marks/%s", b->zc.chroot, leaf, identity);
}

/* The owner node's data: who holds the number (for `workers` and refusals). */
static int format_owner(char *buf, size_t len, int64_t session, const char *identity)
{
    char host[64] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if ((unsigned char)*c < 0x20) *c = '?';
    int n = snprintf(buf, len, "pid=%ld\nhost=%s\nsession=0x%" PRIx64 "\nidentity=%s\n",
                     (long)getpid(), host, (uint64_t)session, identity);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* Creates Leaf's forever path as Leaf's Curator does (creatingParentsIfNeeded, open
 * ACL: Leaf servers log in with nothing) and our owners and marks paths (our ACLs). */
static int ensure_paths(ik__zk_backend *b, ik__zk_conn *c, const char *leaf, char *why,
                        size_t why_len)
{
    static const char *const ours[] = {"owners", "marks"};
    char path[LEAF_PATH_MAX], failed[LEAF_PATH_MAX] = "";
    forever_path(b, leaf, path, sizeof path);
    int zrc = ik__zk_sync_exists(c->zh, path, NULL);
    if (zrc == ZNONODE)
        zrc = ik__zk_create_path(c->zh, path, strlen(b->zc.chroot), &b->zc.shared_acl,
                                 &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, failed, sizeof failed);
    for (size_t i = 0; i < sizeof ours / sizeof ours[0] && zrc == ZOK; i++) {
        snprintf(path, sizeof path, "%s/idkeeper/leaf/%s/%s", b->zc.chroot, leaf, ours[i]);
        zrc = ik__zk_sync_exists(c->zh, path, NULL);
        if (zrc == ZNONODE)
            zrc = ik__zk_create_path(c->zh, path, strlen(b->zc.chroot) + strlen("/idkeeper"),
                                     &b->zc.shared_acl, &b->zc.app_acl, ZOO_PERSISTENT, failed,
                                     sizeof failed);
    }
    if (zrc == ZOK) return IK_OK;
    return ik__zk_fail(zrc, why, why_len, failed[0] ? failed : path);
}

/* ------------------------------------------------------------------------------
 * Finding an identity's nodes
 */

/* Bumped by every event of the watch on a forever path (ZLF6), of any fleet and any
 * backend of the process: a needless look costs one listing, a missed one would miss
 * a second node of an identity we hold. Process-wide, so the watch's context is
 * nothing a close could free. */
static atomic_uint forever_events = 1;

static void on_forever(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
    atomic_fetch_add(&forever_events, 1);
}

typedef struct leaf_node {
    char name[LEAF_NAME_MAX]; /* IP:PORT-NNNNNNNNNN */
    uint32_t seq;
} leaf_node;

/* An identity's nodes in a listing of forever: how many, the first two. */
typedef struct leaf_scan {
    int n;
    leaf_node v[2];
} leaf_scan;

/* Finds identity's nodes among kids, the children of dir. IK_OK, or (strict) a
 * refusal naming a child whose name is not Leaf's (a Leaf server cannot start on
 * the path either, but from its cache). Number 0 counts: it is a Leaf server's. */
static int find_identity(const struct String_vector *kids, const char *dir, const char *identity,
                         int strict, leaf_scan *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < kids->count; i++) {
        char ident[LEAF_NAME_MAX];
        uint32_t seq;
        if (ik__zk_leaf_parse_name(kids->data[i], ident, sizeof ident, &seq) != 0) {
            if (!strict) continue;
            return ik__fail(IK_ESTORE, why, why_len,
                            "Leaf node %s/%.200s: the name is not IP:PORT-NNNNNNNNNN (Leaf "
                            "servers fail their start on this path too); remove or rename it",
                            dir, kids->data[i]);
        }
        if (strcmp(ident, identity) != 0) continue;
        if (out->n < 2) {
            snprintf(out->v[out->n].name, sizeof out->v[out->n].name, "%s", kids->data[i]);
            out->v[out->n].seq = seq;
        }
        out->n++;
    }
    return IK_OK;
}

/* Lists dir (forever) and arms the watch on its children (ZLF6), waiting up to
 * wait_ms for the answer (bounded as zk_session.h's synchronous calls are; the client
 * has no bounded call with a watch): its code, ZOPERATIONTIMEOUT without one, and
 * the children into *kids (the caller deallocates them). */
static int list_watched(ik__zk_conn *c, const char *dir, int64_t wait_ms,
                        struct String_vector *kids)
{
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    ik__zk_req *r = &w->r[0];
    ik__zk_arm(r, c->zh);
    ik__zk_issued(r, zoo_awget_children(c->zh, dir, on_forever, NULL, ik__zk_on_kids, r));
    int zrc =
        ik__zk_wait_until(w, c->zh, ik__mono_ns() + wait_ms * 1000000) ? r->rc : ZOPERATIONTIMEOUT;
    if (zrc == ZOK) { /* answered: the copy is the caller's now */
        *kids = r->kids;
        r->kids = (struct String_vector){0, NULL};
    }
    ik__zk_wait_put(w);
    return zrc;
}

/* Lists forever, arming the watch (ZLF6), and finds identity's nodes. */
static int scan(ik__zk_conn *c, const char *dir, const char *identity, leaf_scan *out, char *why,
                size_t why_len)
{
    struct String_vector kids = {0, NULL};
    int zrc = list_watched(c, dir, (int64_t)zoo_recv_timeout(c->zh) + 1000, &kids);
    if (zrc != ZOK) {
        memset(out, 0, sizeof *out);
        return zrc == ZNONODE ? IK_OK : ik__zk_fail(zrc, why, why_len, dir);
    }
    int rc = find_identity(&kids, dir, identity, 1, out, why, why_len);
    deallocate_String_vector(&kids);
    return rc;
}

/* ------------------------------------------------------------------------------
 * Making an identity's node (ZLF6)
 */

/* The mark's version, -1 if there is none: read before the scan that found no node,
 * so that a node made after it moved the mark (ZLF6). */
static int mark_version_of(ik__zk_conn *c, const char *mark, int *version, char *why,
                           size_t why_len)
{
    struct Stat mst;
    int zrc = ik__zk_sync_exists(c->zh, mark, &mst);
    if (zrc != ZOK && zrc != ZNONODE) return ik__zk_fail(zrc, why, why_len, mark);
    *version = zrc == ZOK ? mst.version : -1;
    return IK_OK;
}

/* Makes identity's node and writes its mark in one zoo_multi, the mark at
 * mark_version (read before the scan that found no node; -1: created); a suffix 0 is
 * deleted and made again (ZLF2). The node's timestamp is stamp_ms, ahead of the
 * clock from the start (ZLF8): a Leaf server that finds the node before the claim
 * fails its check too. IK_OK and *made; IK_ENOSLOT if the mark moved (a node was
 * made since: another idkeeper server's); IK_EINDOUBT without an answer (the next
 * pass's scan finds what landed). */
static int make_node(ik__zk_backend *b, ik__zk_conn *c, const char *dir, const char *mark,
                     int mark_version, const char *identity, int64_t stamp_ms, leaf_node *made,
                     char *why, size_t why_len)
{
    char prefix[LEAF_PATH_MAX], data[LEAF_DATA_MAX], path[LEAF_PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s/%s-", dir, identity);
    int dl = ik__zk_leaf_format(data, sizeof data, identity, stamp_ms);
    if (dl < 0) return ik__fail(IK_EINVAL, why, why_len, "identity too long");
    int zrc, il = (int)strlen(identity);
    for (int attempt = 0; attempt < 2; attempt++) {
        zoo_op_t ops[2];
        zoo_op_result_t res[2];
        memset(res, 0, sizeof res);
        if (mark_version < 0)
            zoo_create_op_init(&ops[0], mark, identity, il, &b->zc.app_acl, ZOO_PERSISTENT, NULL,
                               0);
        else
            zoo_set_op_init(&ops[0], mark, identity, il, mark_version, NULL);
        zoo_create_op_init(&ops[1], prefix, data, dl, &ZOO_OPEN_ACL_UNSAFE,
                           ZOO_PERSISTENT_SEQUENTIAL, path, sizeof path);
        zrc = ik__zk_multi(c->zh, 2, ops, res);
        if (zrc == ZNODEEXISTS || zrc == ZBADVERSION)
            return ik__fail(IK_ENOSLOT, why, why_len,
                            "identity %s: another idkeeper server is making its Leaf node (mark "
                            "%s moved)",
                            identity, mark);
        if (zrc != ZOK) return ik__zk_fail(zrc, why, why_len, prefix);
        const char *nm = strrchr(path, '/');
        nm = nm ? nm + 1 : path;
        char ident[LEAF_NAME_MAX];
        if (ik__zk_leaf_parse_name(nm, ident, sizeof ident, &made->seq) != 0)
            return ik__fail(IK_ESTORE, why, why_len, "ZooKeeper made node %s: not Leaf's form",
                            path);
        snprintf(made->name, sizeof made->name, "%s", nm);
        if (made->seq != 0) return IK_OK;
        /* ZLF2: the forever path was new, and a Leaf server starting now may use 0
         * whatever suffix it gets. Ours goes; the next suffix is ours. */
        zrc = ik__zk_sync_delete(c->zh, path, -1);
        if (zrc != ZOK && zrc != ZNONODE) return ik__zk_fail(zrc, why, why_len, path);
        mark_version = mark_version < 0 ? 0 : mark_version + 1;
    }
    return ik__fail(IK_ESTORE, why, why_len, "ZooKeeper gave %s number 0 twice", prefix);
}

/* ZLF6: a node of the identity appeared beside the one this pass made: ours, never
 * used, goes, and the pass yields (the next one judges what is left). */
static int unmake(ik__zk_conn *c, const char *dir, const leaf_node *ours, const leaf_scan *sc,
                  char *why, size_t why_len)
{
    const leaf_node *other = strcmp(sc->v[0].name, ours->name) ? &sc->v[0] : &sc->v[1];
    char path[LEAF_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, ours->name);
    int zrc = ik__zk_sync_delete(c->zh, path, -1);
    if (zrc != ZOK && zrc != ZNONODE) return ik__zk_fail(zrc, why, why_len, path);
    return ik__fail(IK_ENOSLOT, why, why_len,
                    "Leaf node %s/%s appeared beside the one this server made (%s, deleted "
                    "unused): one node per identity",
                    dir, other->name, ours->name);
}

/* ------------------------------------------------------------------------------
 * Judging the node found
 */

/* One consistent look at a node and its identity's mark (ZLF4). */
typedef struct leaf_look {
    struct Stat st; /* the node's */
    ik__zk_leaf_data d;
    int data_ok;
    int mark_version; /* -1: no mark */
    int ours;         /* idkeeper's node: its mzxid is the mark's */
} leaf_look;

/* Reads the node, the mark, and the node again: the mark read between two reads of
 * an unchanged node is of the same moment (both change in one transaction when
 * idkeeper writes, ZLF4). IK_OK and *l; IK_ENOSLOT if the node kept changing (a
 * writer is at work: wait); IK_ESTORE and others on errors. */
static int look(ik__zk_conn *c, const char *node, const char *mark, leaf_look *l, char *why,
                size_t why_len)
{
    char buf[LEAF_DATA_MAX];
    for (int attempt = 0; attempt < 3; attempt++) {
        struct Stat mst, again;
        int blen = sizeof buf - 1;
        int zrc = ik__zk_sync_get(c->zh, node, buf, &blen, &l->st);
        int mrc = zrc == ZOK ? ik__zk_sync_exists(c->zh, mark, &mst) : ZOK;
        if (zrc == ZOK && (mrc == ZOK || mrc == ZNONODE))
            zrc = ik__zk_sync_exists(c->zh, node, &again);
        if (zrc == ZNONODE) /* deleted since the scan: its maker's ZLF2 or ZLF6 */
            return ik__fail(IK_ENOSLOT, why, why_len, "Leaf node %s went: looking again", node);
        if (zrc != ZOK) return ik__zk_fail(zrc, why, why_len, node);
        if (mrc != ZOK && mrc != ZNONODE) return ik__zk_fail(mrc, why, why_len, mark);
        if (again.mzxid != l->st.mzxid) continue;
        l->mark_version = mrc == ZOK ? mst.version : -1;
        l->ours = mrc == ZOK && mst.mzxid == l->st.mzxid;
        l->data_ok = ik__zk_leaf_parse_data(buf, blen < 0 ? 0 : blen, &l->d) == 0;
        return IK_OK;
    }
    return ik__fail(IK_ENOSLOT, why, why_len, "Leaf node %s is being written: waiting", node);
}

/* ZLF7, for a node taken over: IK_OK and the floor once its timestamp is quiet,
 * else IK_ENOSLOT (a Leaf server may still be alive) or IK_ESTORE (no timestamp). */
static int leaf_quiet(const char *node, const char *identity, uint32_t seq, const leaf_look *l,
                      int64_t *floor_ms, char *why, size_t why_len)
{
    int64_t now = ik__wall_ms();
    int64_t quiet = IK__ZK_LEAF_HEARTBEAT_MS + IK__ZK_LEAF_SKEW_MS;
    if (!l->data_ok)
        return ik__fail(IK_ESTORE, why, why_len,
                        "Leaf node %s: its data is not Leaf's JSON {\"ip\",\"port\","
                        "\"timestamp\"}: refusing to guess when its server last issued",
                        node);
    if (l->d.timestamp_ms > now)
        return ik__fail(IK_ENOSLOT, why, why_len,
                        "Leaf node %s (number %" PRIu32 "): its timestamp is %" PRId64
                        " ms ahead of this clock: waiting",
                        node, seq, l->d.timestamp_ms - now);
    if (now - l->d.timestamp_ms < quiet)
        return ik__fail(IK_ENOSLOT, why, why_len,
                        "Leaf node %s (number %" PRIu32 "): Leaf server %s may still be alive: "
                        "written %" PRId64 " ms ago, taken once %" PRId64 " ms old",
                        node, seq, identity, now - l->d.timestamp_ms, quiet);
    *floor_ms = l->d.timestamp_ms + quiet;
    return IK_OK;
}

/* What a pass decided to claim. */
typedef struct leaf_claim {
    const char *node, *mark, *owner;
    uint32_t seq;
    int64_t floor_ms;
} leaf_claim;

/* Decides whether the node found may be claimed, and its floor: idkeeper's node at
 * once (ZLF4), a Leaf server's only taken over (ZLF5, ZLF7). */
static int judge(ik__zk_backend *b, ik__zk_conn *c, const ik__slot_request *req, const leaf_look *l,
                 int created, leaf_claim *k, char *why, size_t why_len)
{
    if (!l->ours && (!b->leaf_takeover || strcmp(b->leaf_takeover, req->identity) != 0))
        return ik__fail(IK_ESTORE, why, why_len,
                        "Leaf number %" PRIu32 " is a Leaf server's (node %s was written by one, "
                        "which may restart on it from its workerID.properties): use a fresh "
                        "identity, or --leaf-takeover %s once its cache is gone "
                        "(docs/migration-from-leaf.md)",
                        k->seq, k->node, req->identity);
    if (k->seq == 0 && l->ours) { /* ZLF2: ours, made and left by a pass that died */
        int zrc = ik__zk_sync_delete(c->zh, k->node, l->st.version);
        if (zrc != ZOK && zrc != ZNONODE && zrc != ZBADVERSION)
            return ik__zk_fail(zrc, why, why_len, k->node);
        return ik__fail(IK_ENOSLOT, why, why_len, "Leaf node %s: number 0, deleted", k->node);
    }
    if (k->seq == 0)
        return ik__fail(IK_ESTORE, why, why_len,
                        "Leaf node %s: number 0 is never used (two Leaf servers may share it): "
                        "use a fresh identity",
                        k->node);
    if (k->seq < req->worker_min || k->seq > req->worker_max)
        return ik__fail(IK_ESTORE, why, why_len,
                        "Leaf node %s: number %" PRIu32 " is outside the worker range %" PRIu32
                        "-%" PRIu32 " (Leaf refuses a number above its 1023 too)",
                        k->node, k->seq, req->worker_min, req->worker_max);
    if (!l->ours) return leaf_quiet(k->node, req->identity, k->seq, l, &k->floor_ms, why, why_len);
    if (!l->data_ok)
        return ik__fail(IK_ESTORE, why, why_len, "Leaf node %s: its data is not Leaf's JSON",
                        k->node);
    /* ZLF4: the record of the last idkeeper holder; a node just made was never
     * issued under */
    k->floor_ms = created ? 0 : l->d.timestamp_ms;
    return IK_OK;
}

/* ------------------------------------------------------------------------------
 * Claiming it (ZLF3)
 */

/* IK_ENOSLOT naming the live idkeeper holder of the owner node, if another session
 * has one; ours without a handle (live() says no) is deleted first. */
static int owner_free(ik__zk_backend *b, ik__zk_conn *c, const ik__slot_request *req,
                      const leaf_claim *k, int (*live)(ik__zk_backend *, const char *, uint32_t),
                      char *why, size_t why_len)
{
    struct Stat ost;
    int64_t session = ik__zk_conn_session(&b->zc, c);
    int zrc = ik__zk_sync_exists(c->zh, k->owner, &ost);
    if (zrc == ZOK && ost.ephemeralOwner == session && !live(b, req->app, k->seq))
        zrc = ik__zk_sync_delete(c->zh, k->owner, ost.version) == ZOK ? ZNONODE : ZOK;
    if (zrc == ZOK)
        return ik__fail(IK_ENOSLOT, why, why_len,
                        "held by idkeeper session 0x%" PRIx64 ": Leaf number %" PRIu32
                        " (%s), owner %s: a server with the same identity runs",
                        (uint64_t)ost.ephemeralOwner, k->seq, k->node, k->owner);
    return zrc == ZNONODE ? IK_OK : ik__zk_fail(zrc, why, why_len, k->owner);
}

/* The take's zoo_multi [set node at the version looked at, set (create) the mark at
 * its version, create the owner node]. IK_OK and *t. */
static int claim(ik__zk_backend *b, ik__zk_conn *c, const ik__slot_request *req, const leaf_look *l,
                 const leaf_claim *k, ik__zk_leaf_taken *t, char *why, size_t why_len)
{
    char data[LEAF_DATA_MAX], owner[LEAF_DATA_MAX];
    int64_t session = ik__zk_conn_session(&b->zc, c);
    t->found_ms = k->floor_ms;
    t->record_ms = req->new_record_ms > k->floor_ms ? req->new_record_ms : k->floor_ms;
    t->since_ms = ik__wall_ms();
    t->worker = k->seq;
    int dl = ik__zk_leaf_format(data, sizeof data, req->identity, ik__zk_leaf_stamp(t->record_ms));
    int ol = format_owner(owner, sizeof owner, session, req->identity);
    int il = (int)strlen(req->identity);
    if (dl < 0 || ol < 0) return ik__fail(IK_EINVAL, why, why_len, "identity too long");
    zoo_op_t ops[3];
    zoo_op_result_t res[3];
    struct Stat wst;
    memset(res, 0, sizeof res);
    memset(&wst, 0, sizeof wst);
    zoo_set_op_init(&ops[0], k->node, data, dl, l->st.version, &wst);
    if (l->mark_version < 0)
        zoo_create_op_init(&ops[1], k->mark, req->identity, il, &b->zc.app_acl, ZOO_PERSISTENT,
                           NULL, 0);
    else
        zoo_set_op_init(&ops[1], k->mark, req->identity, il, l->mark_version, NULL);
    zoo_create_op_init(&ops[2], k->owner, owner, ol, &b->zc.app_acl, ZOO_EPHEMERAL, NULL, 0);
    t->sent_ns = ik__mono_ns();
    int zrc = ik__zk_multi(c->zh, 3, ops, res);
    if (zrc == ZOK) {
        t->version = wst.version;
        t->czxid = wst.czxid;
        return IK_OK;
    }
    if (zrc == ZBADVERSION || zrc == ZNODEEXISTS || zrc == ZNONODE)
        return ik__fail(IK_ENOSLOT, why, why_len,
                        "Leaf node %s (number %" PRIu32 ") was written while it was being "
                        "taken: a Leaf heartbeat or another taker",
                        k->node, k->seq);
    if (ik__zk_doubtful(zrc)) /* did it land? our owner node says so: the next pass
                                 deletes it (ours, no handle) and takes again */
        return ik__fail(IK_EINDOUBT, why, why_len,
                        "ZooKeeper connection lost while taking Leaf number %" PRIu32, k->seq);
    return ik__zk_fail(zrc, why, why_len, k->node);
}

/* ------------------------------------------------------------------------------
 * Taking a number
 */
int64_t ik__zk_leaf_stamp(int64_t record_ms)
{
    int64_t lead = ik__wall_ms() + IK__ZK_LEAF_HEARTBEAT_MS + IK__ZK_LEAF_SKEW_MS;
    return record_ms > lead ? record_ms : lead;
}

int ik__zk_leaf_take(ik__zk_backend *b, ik__zk_conn *c, const char *leaf,
                     const ik__slot_request *req,
                     int (*live)(ik__zk_backend *, const char *, uint32_t), ik__zk_leaf_taken *t,
                     char *why, size_t why_len)
{
    char dir[LEAF_PATH_MAX];
    int rc = ik__zk_leaf_identity_check(req->identity, why, why_len);
    if (!rc && b->leaf_takeover && strcmp(b->leaf_takeover, req->identity) != 0)
        rc = ik__fail(IK_EINVAL, why, why_len,
                      "--leaf-takeover names %.80s, but this server's identity is %.80s: it "
                      "takes over its own identity's Leaf number only",
                      b->leaf_takeover, req->identity);
    if (!rc) rc = ensure_paths(b, c, leaf, why, why_len);
    if (rc) return rc;
    forever_path(b, leaf, dir, sizeof dir);
    mark_path(b, leaf, req->identity, t->mark_path, sizeof t->mark_path);
    t->seen = atomic_load(&forever_events); /* before the scan that arms the watch */
    leaf_scan sc;
    leaf_node made;
    int created = 0, mark_version = -1;
    if ((rc = mark_version_of(c, t->mark_path, &mark_version, why, why_len)) ||
        (rc = scan(c, dir, req->identity, &sc, why, why_len)))
        return rc;
    if (sc.n == 0) {
        if ((rc = make_node(b, c, dir, t->mark_path, mark_version, req->identity,
                            ik__zk_leaf_stamp(req->new_record_ms), &made, why, why_len)))
            return rc;
        created = 1;
        if ((rc = scan(c, dir, req->identity, &sc, why, why_len))) return rc;
        if (sc.n != 1 || strcmp(sc.v[0].name, made.name) != 0)
            return unmake(c, dir, &made, &sc, why, why_len);
    }
    if (sc.n > 1)
        return ik__fail(IK_ESTORE, why, why_len,
                        "identity %s has two Leaf nodes, %s/%s and %s/%s: which number it holds "
                        "is unclear (a Leaf server restarting on it picks either); remove the "
                        "one no server uses",
                        req->identity, dir, sc.v[0].name, dir, sc.v[1].name);
    snprintf(t->node_path, sizeof t->node_path, "%s/%s", dir, sc.v[0].name);
    owner_path(b, leaf, sc.v[0].seq, t->owner_path, sizeof t->owner_path);
    leaf_claim k = {t->node_path, t->mark_path, t->owner_path, sc.v[0].seq, 0};
    leaf_look l;
    if (!(rc = owner_free(b, c, req, &k, live, why, why_len)) &&
        !(rc = look(c, t->node_path, t->mark_path, &l, why, why_len)) &&
        !(rc = judge(b, c, req, &l, created, &k, why, why_len)))
        rc = claim(b, c, req, &l, &k, t, why, why_len);
    return rc;
}

/* ------------------------------------------------------------------------------
 * Between writes of a held number
 */
int ik__zk_leaf_recheck(ik__zk_backend *b, ik__zk_conn *c, const char *leaf, const char *identity,
                        const char *node_path, unsigned *seen, int64_t wait_ms)
{
    unsigned ev = atomic_load(&forever_events);
    if (ev == *seen) return IK_OK;
    char dir[LEAF_PATH_MAX];
    forever_path(b, leaf, dir, sizeof dir);
    struct String_vector kids = {0, NULL};
    int rc = IK_OK;
    if (list_watched(c, dir, wait_ms, &kids) == ZOK) { /* else: looked at next time */
        leaf_scan sc;
        const char *mine = strrchr(node_path, '/');
        mine = mine ? mine + 1 : node_path;
        find_identity(&kids, dir, identity, 0, &sc, NULL, 0);
        if (sc.n > 1 || (sc.n == 1 && strcmp(sc.v[0].name, mine) != 0)) {
            const leaf_node *other = strcmp(sc.v[0].name, mine) ? &sc.v[0] : &sc.v[1];
            ik__logf("Leaf node %s/%s names identity %s beside ours (%s): a Leaf server made "
                     "it; number given up (docs/zookeeper.md, \"A Leaf fleet\")",
                     dir, other->name, identity, mine);
            rc = IK_ELOST;
        }
        *seen = ev;
    }
    deallocate_String_vector(&kids);
    return rc;
}

/* ------------------------------------------------------------------------------
 * Listing the fleet
 */
static int by_worker(const void *a, const void *b)
{
    const ik_slot_info *x = a, *y = b;
    return x->worker < y->worker ? -1 : x->worker > y->worker;
}

/* The detail and held of one well-formed node, path, of identity s->holder. */
static int describe(ik__zk_backend *b, ik__zk_conn *c, const char *leaf, const char *path,
                    ik_slot_info *s)
{
    char buf[LEAF_DATA_MAX], opath[LEAF_PATH_MAX], mpath[LEAF_PATH_MAX];
    struct Stat st, ost, mst;
    int blen = sizeof buf - 1;
    int zrc = ik__zk_sync_get(c->zh, path, buf, &blen, &st);
    if (zrc != ZOK) return zrc;
    ik__zk_leaf_data d;
    int ok = ik__zk_leaf_parse_data(buf, blen < 0 ? 0 : blen, &d) == 0;
    s->record_ms = ok ? d.timestamp_ms : 0;
    owner_path(b, leaf, s->worker, opath, sizeof opath);
    mark_path(b, leaf, s->holder, mpath, sizeof mpath);
    int orc = ik__zk_sync_exists(c->zh, opath, &ost);
    int mrc = orc == ZOK || orc == ZNONODE ? ik__zk_sync_exists(c->zh, mpath, &mst) : orc;
    if (orc != ZOK && orc != ZNONODE) return orc;
    if (mrc != ZOK && mrc != ZNONODE) return mrc;
    int64_t now = ik__wall_ms();
    int live = ok && now - d.timestamp_ms < IK__ZK_LEAF_HEARTBEAT_MS + IK__ZK_LEAF_SKEW_MS;
    if (orc == ZOK) {
        s->held = 1;
        snprintf(s->detail, sizeof s->detail, "idkeeper session 0x%" PRIx64,
                 (uint64_t)ost.ephemeralOwner);
    } else if (mrc == ZOK && mst.mzxid == st.mzxid) { /* ZLF4 */
        snprintf(s->detail, sizeof s->detail, "idkeeper's, no holder");
    } else if (!ok) {
        s->held = 1; /* whose and since when, unknown */
        snprintf(s->detail, sizeof s->detail, "leaf: data is not Leaf's JSON");
    } else if (d.timestamp_ms > now) {
        s->held = 1;
        snprintf(s->detail, sizeof s->detail, "leaf: timestamp %" PRId64 " ms ahead of this clock",
                 d.timestamp_ms - now);
    } else {
        s->held = live;
        snprintf(s->detail, sizeof s->detail, "leaf: %s, heartbeat %" PRId64 " ms ago",
                 live ? "live" : "stale", now - d.timestamp_ms);
    }
    return ZOK;
}

/* The row after the nodes: the lowest number a new node can get, one above the
 * highest in use (ZooKeeper's counter only grows, and nodes deleted above it, ZLF6,
 * used numbers too), and how many are left below Leaf's 1024 at most. */
static void next_number(const ik_slot_info *v, size_t n, ik_slot_info *s)
{
    uint32_t top = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].worker != UINT32_MAX && v[i].worker > top) top = v[i].worker;
    memset(s, 0, sizeof *s);
    s->worker = n ? top + 1 : 0;
    if (s->worker <= 1023)
        snprintf(s->detail, sizeof s->detail,
                 "leaf: a new node gets this number or a higher one; at most %" PRIu32
                 " left to 1023",
                 1024 - s->worker);
    else
        snprintf(s->detail, sizeof s->detail,
                 "leaf: a new node gets this number or a higher one; none left to 1023 (Leaf "
                 "refuses above)");
}

int ik__zk_leaf_list(ik__zk_backend *b, ik__zk_conn *c, const char *leaf, ik_slot_info **out,
                     size_t *n_out)
{
    char dir[LEAF_PATH_MAX];
    forever_path(b, leaf, dir, sizeof dir);
    struct String_vector kids = {0, NULL};
    *out = NULL;
    *n_out = 0;
    int zrc = ik__zk_sync_children(c->zh, dir, &kids);
    if (zrc == ZNONODE) return IK_OK;
    if (zrc != ZOK) return ik__zk_fail(zrc, NULL, 0, dir);
    ik_slot_info *v = calloc((size_t)kids.count + 1, sizeof *v);
    if (!v) {
        deallocate_String_vector(&kids);
        return IK_ENOMEM;
    }
    int rc = IK_OK;
    size_t n = 0;
    for (int i = 0; i < kids.count && rc == IK_OK; i++) {
        ik_slot_info *s = &v[n];
        char path[LEAF_PATH_MAX];
        uint32_t seq;
        if (ik__zk_leaf_parse_name(kids.data[i], s->holder, sizeof s->holder, &seq) != 0) {
            /* shown, not skipped: it fails every Leaf server's start (cache or not) */
            snprintf(s->holder, sizeof s->holder, "%s", kids.data[i]);
            snprintf(s->detail, sizeof s->detail, "malformed Leaf node name");
            s->worker = UINT32_MAX;
            n++;
            continue;
        }
        s->worker = seq;
        snprintf(path, sizeof path, "%s/%s", dir, kids.data[i]);
        zrc = describe(b, c, leaf, path, s);
        if (zrc == ZNONODE) {
            memset(s, 0, sizeof *s);
            continue;
        }
        if (zrc != ZOK) rc = ik__zk_fail(zrc, NULL, 0, path);
        n++;
    }
    deallocate_String_vector(&kids);
    if (rc) {
        free(v);
        return rc;
    }
    qsort(v, n, sizeof *v, by_worker);
    next_number(v, n, &v[n]);
    n++;
    *out = v;
    *n_out = n;
    return IK_OK;
}
