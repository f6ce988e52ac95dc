/* backend_zk_leaf.c: worker slots taken as members of a Meituan Leaf snowflake fleet
 * (ik_coord_options.leaf_name), on Leaf's own ZooKeeper nodes; what the take finds,
 * refuses and creates. The held slot is then written and released by
 * backend_zk_slots.c like any other, in Leaf's data format (docs/zookeeper.md,
 * "A Leaf fleet"; the runbook is docs/migration-from-leaf.md).
 *
 * Node layout, CHROOT = the zk:// URI's chroot, NAME = the leaf name:
 *
 *   CHROOT/snowflake/NAME/forever/IP:PORT-NNNNNNNNNN   Leaf's: persistent
 *       sequential, data {"ip":"IP","port":"PORT","timestamp":MS}; the worker
 *       number is the 10-digit suffix; never deleted, never reused
 *   CHROOT/idkeeper/leaf/NAME/owners/NNNN              ours: ephemeral, the live
 *       idkeeper holder of number NNNN (the fencing Leaf lacks)
 *
 * Invariants
 *   ZLF1. A number is used only as the suffix of a node whose name carries this
 *       server's identity: ZooKeeper gives each sequential node a distinct suffix,
 *       so no Leaf server is ever given a number an idkeeper server uses.
 *   ZLF2. Number 0 is never used: Leaf's first start on a missing forever path
 *       uses 0 whatever suffix it got, so two Leaf servers may both hold it.
 *   ZLF3. A number is taken only with a zoo_multi [set the Leaf node at the
 *       version read, create our owner node]: a Leaf heartbeat or another taker
 *       in between makes it fail, and two idkeeper servers cannot both hold it.
 *   ZLF4. A node last written by someone else is taken only once its timestamp
 *       is older than IK__ZK_LEAF_HEARTBEAT_MS + IK__ZK_LEAF_SKEW_MS by this
 *       clock (a Leaf server writes it every 3 s while it runs), and the floor is
 *       that timestamp plus the same: a Leaf server issues IDs up to its next
 *       heartbeat, not only up to its last one.
 *   ZLF5. The time record in the node is Leaf's `timestamp`: a Leaf server later
 *       started on this identity refuses to start while it is ahead of its clock.
 *
 * What it deliberately does not do: it never deletes a Leaf node (except one it
 * just made with suffix 0, ZLF2), never creates a second node for an identity that
 * has one, and cannot stop a Leaf server that keeps issuing after its heartbeat
 * failed (Leaf only logs that): the runbook stops each Leaf server before its
 * identity is taken.
 */
#include "backend.h"
#include "backend_zk.h"
#include "backend_zk_leaf.h"
#include "internal.h"
#include "zk_session.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEAF_PATH_MAX 512
#define LEAF_DATA_MAX 1024

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
 * ACL: Leaf servers log in with nothing) and our owners path (our ACLs). */
static int ensure_paths(ik__zk_backend *b, ik__zk_conn *c, const char *leaf, char *why,
                        size_t why_len)
{
    char path[LEAF_PATH_MAX], failed[LEAF_PATH_MAX] = "";
    forever_path(b, leaf, path, sizeof path);
    int zrc = zoo_exists(c->zh, path, 0, NULL);
    if (zrc == ZNONODE)
        zrc = ik__zk_create_path(c->zh, path, strlen(b->zc.chroot), &b->zc.shared_acl,
                                 &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, failed, sizeof failed);
    if (zrc == ZOK) {
        snprintf(path, sizeof path, "%s/idkeeper/leaf/%s/owners", b->zc.chroot, leaf);
        zrc = zoo_exists(c->zh, path, 0, NULL);
        if (zrc == ZNONODE)
            zrc = ik__zk_create_path(c->zh, path, strlen(b->zc.chroot) + strlen("/idkeeper"),
                                     &b->zc.shared_acl, &b->zc.app_acl, ZOO_PERSISTENT, failed,
                                     sizeof failed);
    }
    if (zrc == ZOK) return IK_OK;
    return ik__zk_fail(zrc, why, why_len, failed[0] ? failed : path);
}

/* ------------------------------------------------------------------------------
 * Taking a number
 */

/* What one look at the forever path found for this identity. */
typedef struct leaf_scan {
    int found;    /* nodes of this identity with a number other than 0 */
    uint32_t seq; /* the one */
    char name[LEAF_PATH_MAX];
} leaf_scan;

/* Lists forever and finds this identity's node. IK_OK, or a refusal naming the
 * node: a malformed name (Leaf itself fails to start on one), two nodes of this
 * identity. */
static int scan(ik__zk_conn *c, const char *dir, const char *identity, leaf_scan *out, char *why,
                size_t why_len)
{
    struct String_vector kids = {0, NULL};
    memset(out, 0, sizeof *out);
    int zrc = ik__zk_sync_children(c->zh, dir, &kids);
    if (zrc == ZNONODE) return IK_OK;
    if (zrc != ZOK) return ik__zk_fail(zrc, why, why_len, dir);
    int rc = IK_OK;
    for (int i = 0; i < kids.count && rc == IK_OK; i++) {
        char ident[300];
        uint32_t seq;
        if (ik__zk_leaf_parse_name(kids.data[i], ident, sizeof ident, &seq) != 0) {
            rc = ik__fail(IK_ESTORE, why, why_len,
                          "Leaf node %s/%.200s: the name is not IP:PORT-NNNNNNNNNN (Leaf "
                          "cannot start on this path either); remove or rename it",
                          dir, kids.data[i]);
        } else if (strcmp(ident, identity) != 0 || seq == 0) {
            continue; /* another's; or number 0, never used (ZLF2): the identity gets
                         a node of its own */
        } else if (out->found++) {
            rc = ik__fail(IK_ESTORE, why, why_len,
                          "Leaf nodes %s/%s and %s/%.200s both name identity %s: which "
                          "number it holds is unclear; remove the one no server uses",
                          dir, out->name, dir, kids.data[i], identity);
        } else {
            out->seq = seq;
            snprintf(out->name, sizeof out->name, "%s", kids.data[i]);
        }
    }
    deallocate_String_vector(&kids);
    return rc;
}

/* Creates this identity's node: a new number from ZooKeeper (ZLF1), never 0 (ZLF2).
 * IK_OK with *seq and name, or an error. */
static int create_node(ik__zk_conn *c, const char *dir, const ik__slot_request *req, leaf_scan *sc,
                       char *why, size_t why_len)
{
    char prefix[LEAF_PATH_MAX], data[LEAF_DATA_MAX], made[LEAF_PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s/%s-", dir, req->identity);
    int dl = ik__zk_leaf_format(data, sizeof data, req->identity, ik__wall_ms());
    if (dl < 0) return ik__fail(IK_EINVAL, why, why_len, "identity too long");
    for (int attempt = 0; attempt < 2; attempt++) {
        int zrc = zoo_create(c->zh, prefix, data, dl, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_PERSISTENT_SEQUENTIAL, made, sizeof made);
        if (zrc != ZOK) return ik__zk_fail(zrc, why, why_len, prefix);
        const char *nm = strrchr(made, '/');
        nm = nm ? nm + 1 : made;
        char ident[300];
        if (ik__zk_leaf_parse_name(nm, ident, sizeof ident, &sc->seq) != 0)
            return ik__fail(IK_ESTORE, why, why_len, "ZooKeeper made node %s: not Leaf's form",
                            made);
        snprintf(sc->name, sizeof sc->name, "%s", nm);
        if (sc->seq != 0) return IK_OK;
        /* ZLF2: the forever path was new, and a Leaf server starting now may use 0
         * whatever suffix it gets. Ours goes; the next suffix is ours. */
        zrc = zoo_delete(c->zh, made, -1);
        if (zrc != ZOK && zrc != ZNONODE) return ik__zk_fail(zrc, why, why_len, made);
    }
    return ik__fail(IK_ESTORE, why, why_len, "ZooKeeper gave %s number 0 twice", prefix);
}

int ik__zk_leaf_take(ik__zk_backend *b, ik__zk_conn *c, const char *leaf,
                     const ik__slot_request *req,
                     int (*live)(ik__zk_backend *, const char *, uint32_t), ik__zk_leaf_taken *t,
                     char *why, size_t why_len)
{
    char dir[LEAF_PATH_MAX], buf[LEAF_DATA_MAX], data[LEAF_DATA_MAX], owner[LEAF_DATA_MAX];
    int rc = ik__zk_leaf_identity_check(req->identity, why, why_len);
    if (!rc) rc = ensure_paths(b, c, leaf, why, why_len);
    if (rc) return rc;
    forever_path(b, leaf, dir, sizeof dir);
    leaf_scan sc;
    if ((rc = scan(c, dir, req->identity, &sc, why, why_len))) return rc;
    int created = 0;
    if (!sc.found) {
        if ((rc = create_node(c, dir, req, &sc, why, why_len))) return rc;
        created = 1;
    }
    snprintf(t->node_path, sizeof t->node_path, "%s/%s", dir, sc.name);
    if (sc.seq < req->worker_min || sc.seq > req->worker_max)
        return ik__fail(IK_ESTORE, why, why_len,
                        "Leaf node %s: number %" PRIu32 " is outside the worker range %" PRIu32
                        "-%" PRIu32 " (Leaf refuses a number above its 1023 too)",
                        t->node_path, sc.seq, req->worker_min, req->worker_max);
    owner_path(b, leaf, sc.seq, t->owner_path, sizeof t->owner_path);
    int64_t session = ik__zk_conn_session(&b->zc, c);

    /* A live idkeeper holder (ZLF3): ours without a handle is deleted first. */
    struct Stat ost;
    int zrc = zoo_exists(c->zh, t->owner_path, 0, &ost);
    if (zrc == ZOK && ost.ephemeralOwner == session && !live(b, req->app, sc.seq))
        zrc = zoo_delete(c->zh, t->owner_path, ost.version) == ZOK ? ZNONODE : ZOK;
    if (zrc == ZOK)
        return ik__fail(IK_ENOSLOT, why, why_len,
                        "Leaf number %" PRIu32 " (%s) is held by idkeeper session 0x%" PRIx64
                        " (%s): a server with the same identity is running",
                        sc.seq, t->node_path, (uint64_t)ost.ephemeralOwner, t->owner_path);
    if (zrc != ZNONODE) return ik__zk_fail(zrc, why, why_len, t->owner_path);

    struct Stat st;
    int blen = sizeof buf - 1;
    zrc = zoo_get(c->zh, t->node_path, 0, buf, &blen, &st);
    if (zrc != ZOK) return ik__zk_fail(zrc, why, why_len, t->node_path);
    ik__zk_leaf_data d;
    if (ik__zk_leaf_parse_data(buf, blen < 0 ? 0 : blen, &d) != 0)
        return ik__fail(IK_ESTORE, why, why_len,
                        "Leaf node %s: its data is not Leaf's JSON {\"ip\",\"port\","
                        "\"timestamp\"}: refusing to guess when its server last issued",
                        t->node_path);
    int64_t now = ik__wall_ms();
    int64_t quiet = IK__ZK_LEAF_HEARTBEAT_MS + IK__ZK_LEAF_SKEW_MS;
    if (!created && d.timestamp_ms > now)
        return ik__fail(IK_ENOSLOT, why, why_len,
                        "Leaf server %s (number %" PRIu32 "): its node's timestamp is %" PRId64
                        " ms ahead of this clock (Leaf refuses to start on it too); node %s",
                        req->identity, sc.seq, d.timestamp_ms - now, t->node_path);
    if (!created && now - d.timestamp_ms < quiet)
        return ik__fail(IK_ENOSLOT, why, why_len,
                        "Leaf server %s (number %" PRIu32 ") may still be alive: written %" PRId64
                        " ms ago, taken once %" PRId64
                        " ms old (heartbeat %d ms + skew margin %d ms); node %s",
                        req->identity, sc.seq, now - d.timestamp_ms, quiet,
                        IK__ZK_LEAF_HEARTBEAT_MS, IK__ZK_LEAF_SKEW_MS, t->node_path);

    /* ZLF4: the floor. A node we just made was never issued under. */
    t->found_ms = created ? 0 : d.timestamp_ms + quiet;
    t->record_ms = req->new_record_ms > t->found_ms ? req->new_record_ms : t->found_ms;
    t->since_ms = now;
    t->worker = sc.seq;
    int dl = ik__zk_leaf_format(data, sizeof data, req->identity, t->record_ms);
    int ol = format_owner(owner, sizeof owner, session, req->identity);
    if (dl < 0 || ol < 0) return ik__fail(IK_EINVAL, why, why_len, "identity too long");
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    struct Stat wst;
    memset(res, 0, sizeof res);
    memset(&wst, 0, sizeof wst);
    zoo_set_op_init(&ops[0], t->node_path, data, dl, st.version, &wst);
    zoo_create_op_init(&ops[1], t->owner_path, owner, ol, &b->zc.app_acl, ZOO_EPHEMERAL, NULL, 0);
    t->sent_ns = ik__mono_ns();
    zrc = ik__zk_multi(c->zh, 2, ops, res);
    if (zrc == ZOK) {
        t->version = wst.version;
        t->czxid = wst.czxid;
        return IK_OK;
    }
    if (zrc == ZBADVERSION || zrc == ZNODEEXISTS || zrc == ZNONODE)
        return ik__fail(IK_ENOSLOT, why, why_len,
                        "Leaf node %s (number %" PRIu32 ") was written while it was being "
                        "taken: a Leaf heartbeat or another taker",
                        t->node_path, sc.seq);
    if (ik__zk_doubtful(zrc)) {
        /* Did it land? Our owner node says so; leave it for the next take to
         * delete (it is ours: ZLF3's own-session rule) and report in doubt. */
        return ik__fail(IK_EINDOUBT, why, why_len,
                        "ZooKeeper connection lost while taking Leaf number %" PRIu32, sc.seq);
    }
    return ik__zk_fail(zrc, why, why_len, t->node_path);
}

/* ------------------------------------------------------------------------------
 * Listing the fleet
 */
static int by_worker(const void *a, const void *b)
{
    const ik_slot_info *x = a, *y = b;
    return x->worker < y->worker ? -1 : x->worker > y->worker;
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
    ik_slot_info *v = calloc(kids.count > 0 ? (size_t)kids.count : 1, sizeof *v);
    if (!v) {
        deallocate_String_vector(&kids);
        return IK_ENOMEM;
    }
    int rc = IK_OK;
    size_t n = 0;
    int64_t now = ik__wall_ms();
    for (int i = 0; i < kids.count && rc == IK_OK; i++) {
        ik_slot_info *s = &v[n];
        char path[LEAF_PATH_MAX], buf[LEAF_DATA_MAX], opath[LEAF_PATH_MAX];
        uint32_t seq;
        if (ik__zk_leaf_parse_name(kids.data[i], s->holder, sizeof s->holder, &seq) != 0) {
            /* shown, not skipped: it stops Leaf servers from starting */
            snprintf(s->holder, sizeof s->holder, "%s", kids.data[i]);
            snprintf(s->detail, sizeof s->detail, "malformed Leaf node name");
            s->worker = UINT32_MAX;
            n++;
            continue;
        }
        s->worker = seq;
        snprintf(path, sizeof path, "%s/%s", dir, kids.data[i]);
        int blen = sizeof buf - 1;
        zrc = ik__zk_sync_get(c->zh, path, buf, &blen, NULL);
        if (zrc == ZNONODE) continue;
        if (zrc != ZOK) {
            rc = ik__zk_fail(zrc, NULL, 0, path);
            break;
        }
        ik__zk_leaf_data d;
        int ok = ik__zk_leaf_parse_data(buf, blen < 0 ? 0 : blen, &d) == 0;
        s->record_ms = ok ? d.timestamp_ms : 0;
        owner_path(b, leaf, seq, opath, sizeof opath);
        struct Stat ost;
        zrc = ik__zk_sync_exists(c->zh, opath, &ost);
        if (zrc != ZOK && zrc != ZNONODE) {
            rc = ik__zk_fail(zrc, NULL, 0, opath);
            break;
        }
        int live = ok && now - d.timestamp_ms < IK__ZK_LEAF_HEARTBEAT_MS + IK__ZK_LEAF_SKEW_MS;
        s->held = zrc == ZOK || live;
        if (zrc == ZOK)
            snprintf(s->detail, sizeof s->detail, "idkeeper session 0x%" PRIx64,
                     (uint64_t)ost.ephemeralOwner);
        else if (!ok)
            snprintf(s->detail, sizeof s->detail, "leaf: data is not Leaf's JSON");
        else
            snprintf(s->detail, sizeof s->detail, "leaf: %s, heartbeat %" PRId64 " ms ago",
                     live ? "live" : "stale", now - d.timestamp_ms);
        n++;
    }
    deallocate_String_vector(&kids);
    if (rc) {
        free(v);
        return rc;
    }
    qsort(v, n, sizeof *v, by_worker);
    *out = v;
    *n_out = n;
    return IK_OK;
}
