/* backend_zk_scan.c: reading the slots of an app on ZooKeeper, many at once: the
 * workers named under a directory, every slot node and the owner node of each held
 * one (pipelined zoo_aget), for slots_list (ik_slots_list) and for the refusal of
 * backend_zk_slots.c that names the holders. It only reads: nothing here takes,
 * writes or frees a slot. Node layout: backend_zk_slots.c and docs/zookeeper.md.
 *
 * Threads: safe from any thread; each call borrows the session's handle (life held
 * for reading) or runs on one its caller borrowed.
 */
#include "backend.h"
#include "backend_zk.h"
#include "backend_zk_leaf.h"
#include "internal.h"
#include "zk_session.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ZK_PATH_MAX 512

/* The workers in [lo, hi] named by the children of dir, into *out (emptied first).
 * A missing dir is an empty set. */
int ik__zk_list_workers(zhandle_t *zh, const char *dir, uint32_t lo, uint32_t hi, ik__zk_wset *out,
                        char *why, size_t why_len)
{
    struct String_vector kids = {0, NULL};
    out->n = 0;
    int zrc = ik__zk_sync_children(zh, dir, &kids);
    if (zrc == ZNONODE) return IK_OK;
    if (zrc != ZOK) return ik__zk_fail(zrc, why, why_len, dir);
    int rc = IK_OK;
    for (int i = 0; i < kids.count && rc == IK_OK; i++) {
        uint32_t w;
        if (ik__zk_parse_worker(kids.data[i], &w) == 0 && w >= lo && w <= hi &&
            ik__zk_wset_add(out, w))
            rc = IK_ENOMEM;
    }
    deallocate_String_vector(&kids);
    return rc;
}

/* ------------------------------------------------------------------------------
 * Reading many slots at once (listing, and naming the holders in a refusal)
 */
typedef struct zk_node {
    uint32_t worker;
    int gone;     /* listed, then not found */
    int readable; /* record parsed */
    int version;
    int64_t czxid;
    ik__zk_fields slot;    /* record, last holder */
    int held;              /* an owner node exists */
    int owner_known;       /* owner data read */
    int64_t owner_session; /* ephemeralOwner of the owner node */
    int owner_version;
    ik__zk_fields owner;
} zk_node;

/* Reads every slot node of app with worker in [lo, hi], and the owner node of each
 * held one, pipelined (zoo_aget). *out sorted by worker, freed by the caller. */
static int scan_slots(const char *chroot, zhandle_t *zh, const char *app, uint32_t lo, uint32_t hi,
                      zk_node **out, size_t *n_out, char *why, size_t why_len)
{
    char dir[ZK_PATH_MAX], path[ZK_PATH_MAX];
    ik__zk_wset names = {0}, held = {0};
    *out = NULL;
    *n_out = 0;
    ik__zk_app_path(chroot, app, "slots", dir, sizeof dir);
    int rc = ik__zk_list_workers(zh, dir, lo, hi, &names, why, why_len);
    if (rc == IK_OK) {
        ik__zk_app_path(chroot, app, "owners", path, sizeof path);
        rc = ik__zk_list_workers(zh, path, lo, hi, &held, why, why_len);
    }
    size_t n = names.n;
    zk_node *nodes = rc ? NULL : calloc(n + 1, sizeof *nodes);
    if (!rc && !nodes) rc = IK_ENOMEM;
    for (size_t i = 0; i < n && !rc; i++) {
        nodes[i].worker = names.v[i];
        nodes[i].held = ik__zk_wset_has(&held, names.v[i]);
    }
    free(names.v);
    free(held.v);
    int64_t wait_ms = (int64_t)zoo_recv_timeout(zh) + 1000;
    /* Round 1: slot nodes; round 2: owners of the held ones. */
    for (int round = 0; round < 2 && rc == IK_OK && n > 0; round++) {
        ik__zk_wait *w = ik__zk_wait_new((int)n, 0);
        if (!w) {
            rc = IK_ENOMEM;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            ik__zk_req *it = &w->r[i];
            if (round == 1 && !nodes[i].held) {
                it->done = 1;
                it->rc = ZNONODE;
                continue;
            }
            ik__zk_worker_path(chroot, app, round ? "owners" : "slots", nodes[i].worker, path,
                               sizeof path);
            ik__zk_arm(it, zh);
            ik__zk_issued(it, zoo_aget(zh, path, 0, ik__zk_on_data, it));
        }
        if (!ik__zk_wait_until(w, zh, ik__mono_ns() + wait_ms * 1000000)) {
            rc = ik__fail(IK_ESTORE, why, why_len, "ZooKeeper did not answer reading %s", dir);
        } else {
            for (size_t i = 0; i < n && rc == IK_OK; i++) {
                ik__zk_req *it = &w->r[i];
                zk_node *nd = &nodes[i];
                if (it->rc == ZNONODE) {
                    if (round == 0)
                        nd->gone = 1; /* deleted since the listing */
                    else
                        nd->held = 0; /* freed since the listing */
                    continue;
                }
                if (it->rc != ZOK) {
                    if (ik__zk_session_gone(it->rc))
                        rc = ik__fail(IK_ELOST, why, why_len, "%s", zerror(it->rc));
                    else
                        rc = ik__fail(IK_ESTORE, why, why_len, "reading %s: %s", dir,
                                      zerror(it->rc));
                    break;
                }
                if (round == 0) {
                    ik__zk_parse_fields(it->data, it->len, &nd->slot);
                    nd->readable = nd->slot.has_record;
                    nd->version = it->st.version;
                    nd->czxid = it->st.czxid;
                } else {
                    nd->owner_known = 1;
                    nd->owner_session = it->st.ephemeralOwner;
                    nd->owner_version = it->st.version;
                    ik__zk_parse_fields(it->data, it->len, &nd->owner);
                }
            }
        }
        ik__zk_wait_put(w);
        if (round == 0) {
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (!nodes[i].gone) nodes[k++] = nodes[i];
            n = k;
        }
    }
    if (rc) {
        free(nodes);
        return rc;
    }
    *out = nodes;
    *n_out = n;
    return IK_OK;
}

/* Writes "no free worker slot: all N slots of app A in LO-HI are held: 0 by a, ..."
 * into why, naming as many holders as fit. */
void ik__zk_describe_holders(const char *chroot, zhandle_t *zh, const ik__slot_request *req,
                             uint64_t range, char *why, size_t why_len)
{
    if (!why || why_len == 0) return;
    zk_node *nodes = NULL;
    size_t n = 0;
    size_t len = (size_t)snprintf(why, why_len,
                                  "no free worker slot: all %" PRIu64 " slots of app %s in %" PRIu32
                                  "-%" PRIu32 " are held",
                                  range, req->app, req->worker_min, req->worker_max);
    if (len >= why_len) return;
    if (scan_slots(chroot, zh, req->app, req->worker_min, req->worker_max, &nodes, &n, NULL, 0))
        return;
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < n; i++)
        total += nodes[i].held || !nodes[i].readable;
    for (size_t i = 0; i < n; i++) {
        const zk_node *nd = &nodes[i];
        if (!nd->held && nd->readable) continue;
        char item[320];
        const char *sep = shown ? ", " : ": ";
        if (!nd->held)
            snprintf(item, sizeof item, "%s%" PRIu32 " has an unreadable record", sep, nd->worker);
        else
            snprintf(item, sizeof item, "%s%" PRIu32 " by %s", sep, nd->worker,
                     nd->owner_known && nd->owner.ident[0] ? nd->owner.ident : "?");
        size_t il = strlen(item);
        if (len + il + 16 >= why_len) break; /* keep room for " (+NNNNN more)" */
        memcpy(why + len, item, il + 1);
        len += il;
        shown++;
    }
    if (shown < total && len + 16 < why_len)
        snprintf(why + len, why_len - len, " (+%zu more)", total - shown);
    free(nodes);
}

/* ------------------------------------------------------------------------------
 * Sessions again: recovery, listing, description
 */
int ik__zk_slots_list(ik__backend *be, const char *app, ik_slot_info **out, size_t *n_out)
{
    ik__zk_backend *b = ik__zk_backend_of(be);
    if (!ik__zk_app_ok(app) || !out || !n_out) return IK_EINVAL;
    pthread_rwlock_rdlock(&b->zc.life);
    ik__zk_conn *c = b->zc.conn;
    int rc = ik__zk_conn_wait(&b->zc, c, ik__zk_connect_wait_ms(b->zc.timeout_ms));
    if (rc == IK_ELOST) {
        pthread_rwlock_unlock(&b->zc.life);
        rc = ik__zk_recover(be, NULL, 0);
        if (rc) return rc;
        pthread_rwlock_rdlock(&b->zc.life);
        c = b->zc.conn;
    } else if (rc) {
        pthread_rwlock_unlock(&b->zc.life);
        return IK_ESTORE;
    }
    if (b->leaf) { /* a Leaf fleet's nodes, whatever the app */
        rc = ik__zk_leaf_list(b, c, b->leaf, out, n_out);
        pthread_rwlock_unlock(&b->zc.life);
        return rc == IK_ELOST ? IK_ESTORE : rc;
    }
    zk_node *nodes = NULL;
    size_t n = 0;
    rc = scan_slots(b->zc.chroot, c->zh, app, 0, UINT32_MAX, &nodes, &n, NULL, 0);
    pthread_rwlock_unlock(&b->zc.life);
    if (rc) return rc == IK_ELOST ? IK_ESTORE : rc;
    ik_slot_info *v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        free(nodes);
        return IK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const zk_node *nd = &nodes[i];
        ik_slot_info *si = &v[i];
        si->worker = nd->worker;
        si->held = nd->held;
        si->record_ms = nd->slot.record_ms;
        if (nd->held && nd->owner_known) {
            snprintf(si->holder, sizeof si->holder, "%s", nd->owner.ident);
            snprintf(si->detail, sizeof si->detail, "pid=%" PRId64 " host=%s session=0x%" PRIx64,
                     nd->owner.pid, nd->owner.host, (uint64_t)nd->owner_session);
            si->since_ms = nd->owner.since_ms;
        } else {
            snprintf(si->holder, sizeof si->holder, "%s", nd->slot.ident);
            if (!nd->readable) snprintf(si->detail, sizeof si->detail, "unreadable record");
        }
    }
    free(nodes);
    *out = v;
    *n_out = n;
    return IK_OK;
}
