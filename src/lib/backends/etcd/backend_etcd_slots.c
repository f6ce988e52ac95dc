/* backend_etcd_slots.c: worker slots on etcd (etcd://): a key per slot on the
 * server's etcd lease (etcd_lease.c), taken by a txn that compares its
 * create_revision with 0; the time record in a key of its own without a lease,
 * written only by txns that compare the slot key's create_revision with ours
 * (docs/etcd.md, "Worker slots"; etcd_handle.h has the key layout).
 *
 * Invariants
 *   ES1. A slot is taken only by a txn that finds the slot key absent (create
 *        revision 0) and the record key as it was read (its mod revision, or
 *        absent): two callers racing for one slot cannot both win, and the record
 *        the take raises is exactly the one the new holder's floor comes from.
 *   ES2. A record is written (persist, release) only by a txn that finds the slot
 *        key with our create_revision: a holder whose key is gone (its lease
 *        expired, or revoked) never touches the next holder's record; such a txn
 *        answers "not succeeded", which is IK_ELOST.
 *   ES3. slot_persist reports as its proof the send time of the last keepalive of
 *        the slot's lease that was answered with a TTL, and that TTL (EL1), never
 *        a window: core/lease.c claims 2/3 of it.
 *   ES4. Reads that decide anything are etcd's default, linearizable ranges; no
 *        read is serializable.
 *   ES5. Every take and renewal passes the hazard gate (ik__etcd_write_gate); the
 *        cluster id of every answer is checked (EG1): an answer of another cluster
 *        is IK_EUNSAFE, a take so answered is never granted.
 *
 * Threads: any; each call is one or two gateway calls.
 */
#include "etcd_handle.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_MAX 600

typedef struct etcd_slot {
    uint32_t worker;
    int64_t lease;
    int64_t create_rev; /* our slot key's */
    char slot_key[KEY_MAX], record_key[KEY_MAX];
    char identity[256];
    int64_t since_ms;
    int64_t record_ms; /* the last record written */
    char said[200];    /* what etcd last answered a failed renewal with, as logged */
} etcd_slot;

/* One slot as a read found it. */
typedef struct slot_view {
    uint32_t worker;
    int held;
    char value[512]; /* the slot key's: "SINCE PID HOST IDENTITY" */
    int have_record;
    int64_t record_mod;
    int64_t record_ms, since_ms;
    char holder[256]; /* the record's identity */
    int unreadable;   /* the record has another shape: the slot is never taken */
    char record_key[KEY_MAX];
    char record_val[64]; /* the start of what an unreadable record holds */
} slot_view;

/* The worker number of a key the scan's range for pfx (".../slot/" or ".../record/")
 * answered: the key is pfx and then decimal digits, nothing else; -1 if not (not a
 * key of ours). Read by the exact layout, never by a search for "/slot/" in the key:
 * the URI prefix and the app name may hold such a segment themselves. */
static int64_t worker_of(const char *key, const char *pfx)
{
    size_t pl = strlen(pfx);
    if (strncmp(key, pfx, pl) != 0) return -1;
    const char *p = key + pl;
    if (!*p) return -1;
    int64_t w = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || w > UINT32_MAX) return -1;
        w = w * 10 + (*p - '0');
    }
    return w > UINT32_MAX ? -1 : w;
}

/* A time record's value "RECORD_MS SINCE_MS IDENTITY" into s; -1 if it has another
 * shape (then the slot's floor is unknown: its record is unreadable). */
static int parse_record(const char *val, slot_view *s)
{
    int64_t r, since;
    const char *p = val;
    if (ik__etcd_next_i64(&p, ' ', &r) || ik__etcd_next_i64(&p, ' ', &since) || r < 0 || since < 0)
        return -1;
    s->record_ms = r;
    s->since_ms = since;
    snprintf(s->holder, sizeof s->holder, "%s", p);
    return 0;
}

static slot_view *find(slot_view **v, size_t *n, size_t *cap, uint32_t w)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].worker == w) return &(*v)[i];
    if (ik__grow((void **)v, cap, *n, sizeof **v, 16)) return NULL;
    slot_view *s = &(*v)[(*n)++];
    memset(s, 0, sizeof *s);
    s->worker = w;
    return s;
}

/* Reads the app's slots and records (one txn of two ranges: one revision) into
 * *out sorted by worker. 0, IK_ENOMEM or the gateway's error with why. */
static int scan(ik__etcd_backend *b, const char *app, slot_view **out, size_t *n_out, char *why,
                size_t why_len)
{
    *out = NULL;
    *n_out = 0;
    char sp[KEY_MAX], rp[KEY_MAX];
    ik__etcd_key(b, app, "slot/", sp, sizeof sp);
    ik__etcd_key(b, app, "record/", rp, sizeof rp);
    ik__etcd_txn *t = ik__etcd_txn_new();
    if (!t || ik__etcd_txn_get(t, 1, sp, 1) || ik__etcd_txn_get(t, 1, rp, 1)) {
        ik__etcd_txn_free(t);
        return IK_ENOMEM;
    }
    ik__etcd_answer a = {0};
    int e = ik__etcd_txn_run(b->gw, t, b->wait_ms * 3, &a, why, why_len);
    ik__etcd_txn_free(t);
    if (e) return e == IK_EINDOUBT ? IK_ESTORE : e; /* a read applies nothing */
    slot_view *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < a.n_kvs && !e; i++) {
        ik__etcd_kv *kv = &a.kvs[i];
        int rec = kv->resp == 1;
        int64_t w = worker_of(kv->key, rec ? rp : sp);
        if (w < 0) continue; /* not a key of ours: ignored (docs/etcd.md) */
        slot_view *s = find(&v, &n, &cap, (uint32_t)w);
        if (!s) {
            e = IK_ENOMEM;
            break;
        }
        if (rec) {
            s->have_record = 1;
            s->record_mod = kv->mod_revision;
            if (parse_record(kv->value, s)) { /* refused, never read as 0 (promise 11) */
                s->unreadable = 1;
                s->record_ms = s->since_ms = 0;
                s->holder[0] = '\0';
                snprintf(s->record_key, sizeof s->record_key, "%s", kv->key);
                snprintf(s->record_val, sizeof s->record_val, "%.60s", kv->value);
                for (char *c = s->record_val; *c; c++) /* shown in one line */
                    if ((unsigned char)*c < ' ' || *c == 0x7f) *c = '?';
            }
        } else {
            s->held = 1;
            snprintf(s->value, sizeof s->value, "%s", kv->value);
        }
    }
    ik__etcd_answer_free(&a);
    if (e) {
        free(v);
        return e;
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1].worker > v[j].worker; j--) {
            slot_view x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    *out = v;
    *n_out = n;
    return IK_OK;
}

/* "pid P, host H" and the identity of a slot key's value "SINCE PID HOST IDENTITY" */
static void split_value(const char *val, int64_t *since, char *ident, size_t il, char *detail,
                        size_t dl)
{
    int64_t s = 0;
    char pid[32] = "", host[128] = "";
    const char *p = val;
    if (ik__etcd_next_i64(&p, ' ', &s) == 0 && (ik__etcd_next_word(&p, pid, sizeof pid), *pid) &&
        (ik__etcd_next_word(&p, host, sizeof host), *host) && *p) {
        snprintf(ident, il, "%s", p);
        if (detail) snprintf(detail, dl, "pid %s, host %s", pid, host);
        *since = s;
    } else {
        snprintf(ident, il, "?");
        if (detail && dl) detail[0] = '\0';
        *since = 0;
    }
}

static void describe_holders(const ik__slot_request *req, const slot_view *v, size_t n, char *why,
                             size_t why_len)
{
    if (!why || !why_len) return;
    uint64_t range = (uint64_t)req->worker_max - req->worker_min + 1;
    size_t len = (size_t)snprintf(why, why_len,
                                  "no free worker slot: all %" PRIu64 " slots of app %s in %" PRIu32
                                  "-%" PRIu32 " are held",
                                  range, req->app, req->worker_min, req->worker_max);
    size_t shown = 0;
    for (size_t i = 0; i < n && len < why_len; i++) {
        if ((!v[i].held && !v[i].unreadable) || v[i].worker < req->worker_min ||
            v[i].worker > req->worker_max)
            continue;
        char ident[256], item[1000];
        int64_t since;
        if (v[i].held) {
            split_value(v[i].value, &since, ident, sizeof ident, NULL, 0);
            snprintf(item, sizeof item, "%s%" PRIu32 " by %s", shown ? ", " : ": ", v[i].worker,
                     ident);
        } else {
            snprintf(item, sizeof item,
                     "%s%" PRIu32 " has an unreadable record (the key %s holds \"%s\", not "
                     "\"RECORD_MS SINCE_MS IDENTITY\": docs/etcd.md)",
                     shown ? ", " : ": ", v[i].worker, v[i].record_key, v[i].record_val);
        }
        size_t il = strlen(item);
        if (len + il + 16 >= why_len) break;
        memcpy(why + len, item, il + 1);
        len += il;
        shown++;
    }
}

/* The order in which to try the free slots of [lo, hi]: the identity's last one
 * first (if free), then by choice. A slot whose record is unreadable is never one:
 * its floor is unknown (docs/guarantees.md promise 11). cand[] gets up to max
 * workers. */
static size_t candidates(const ik__slot_request *req, const slot_view *v, size_t n, uint32_t *cand,
                         size_t max, uint64_t rnd)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].have_record && !v[i].held && !v[i].unreadable && v[i].worker >= req->worker_min &&
            v[i].worker <= req->worker_max && strcmp(v[i].holder, req->identity) == 0 && k < max)
            cand[k++] = v[i].worker;
    uint64_t range = (uint64_t)req->worker_max - req->worker_min + 1;
    uint64_t start = req->choice == IK_SLOT_LOWEST ? 0 : rnd % range;
    for (uint64_t j = 0; j < range && k < max; j++) {
        uint32_t w = (uint32_t)(req->worker_min + (start + j) % range);
        int held = 0;
        for (size_t i = 0; i < n; i++)
            if (v[i].worker == w) held = v[i].held || v[i].unreadable; /* its floor unknown */
        if (!held && (k == 0 || cand[0] != w)) cand[k++] = w;
    }
    return k;
}

/* A take whose answer was lost: its slot key, if it is there on our lease, is
 * deleted (else it would stay held for as long as this process keeps the lease
 * alive); a record it raised stays raised, which is safe (records only grow). If
 * this fails too, the key stays until the lease goes: logged. */
static void undo(ik__etcd_backend *b, etcd_slot *s)
{
    char why[300];
    ik__etcd_txn *t = ik__etcd_txn_new();
    int e = IK_ENOMEM;
    if (t && !ik__etcd_txn_cmp(t, s->slot_key, "LEASE", "EQUAL", s->lease, NULL) &&
        !ik__etcd_txn_del(t, 1, s->slot_key)) {
        ik__etcd_answer a = {0};
        e = ik__etcd_txn_run(b->gw, t, b->wait_ms * 3, &a, why, sizeof why);
        ik__etcd_answer_free(&a);
    }
    ik__etcd_txn_free(t);
    if (e)
        ik__logf("etcd: a slot take's answer was lost and its key %s could not be checked: it "
                 "stays held until this server's lease goes",
                 s->slot_key);
}

/* ES1: one take of worker w. 1 taken (s filled), 0 lost the race, or an error. */
static int take(ik__etcd_backend *b, const ik__slot_request *req, const slot_view *seen, uint32_t w,
                etcd_slot *s, int64_t *old_record, int64_t *new_record, char *why, size_t why_len)
{
    char sub[40], host[128] = "?", value[900], rec[400];
    snprintf(sub, sizeof sub, "slot/%" PRIu32, w);
    ik__etcd_key(b, req->app, sub, s->slot_key, sizeof s->slot_key);
    snprintf(sub, sizeof sub, "record/%" PRIu32, w);
    ik__etcd_key(b, req->app, sub, s->record_key, sizeof s->record_key);
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++)
        if (*c == ' ') *c = '_';
    s->since_ms = ik__wall_ms();
    snprintf(value, sizeof value, "%" PRId64 " %d %s %s", s->since_ms, (int)getpid(), host,
             req->identity);
    if (seen && seen->unreadable) /* never read as a floor of 0 (promise 11) */
        return ik__fail(IK_ESTORE, why, why_len, "the key %s holds no time record",
                        seen->record_key);
    int64_t old = seen && seen->have_record ? seen->record_ms : 0;
    int64_t r = req->new_record_ms > old ? req->new_record_ms : old;
    snprintf(rec, sizeof rec, "%" PRId64 " %" PRId64 " %s", r, s->since_ms, req->identity);
    ik__etcd_txn *t = ik__etcd_txn_new();
    int e = t ? IK_OK : IK_ENOMEM;
    if (!e) e = ik__etcd_txn_cmp(t, s->slot_key, "CREATE", "EQUAL", 0, NULL);
    if (!e && seen && seen->have_record)
        e = ik__etcd_txn_cmp(t, s->record_key, "MOD", "EQUAL", seen->record_mod, NULL);
    else if (!e)
        e = ik__etcd_txn_cmp(t, s->record_key, "CREATE", "EQUAL", 0, NULL);
    if (!e) e = ik__etcd_txn_put(t, 1, s->slot_key, value, s->lease);
    if (!e) e = ik__etcd_txn_put(t, 1, s->record_key, rec, 0);
    if (e) {
        ik__etcd_txn_free(t);
        return e;
    }
    ik__etcd_answer a = {0};
    e = ik__etcd_txn_run(b->gw, t, b->wait_ms * 3, &a, why, why_len);
    ik__etcd_txn_free(t);
    if (e == IK_EINDOUBT) { /* maybe taken: dropped if it was (our lease outlives it) */
        undo(b, s);
        return ik__fail(IK_ESTORE, why, why_len, "no answer to a slot take");
    }
    if (e) return e;
    int ok = a.succeeded;
    s->create_rev = a.revision; /* the txn's revision creates the key */
    ik__etcd_answer_free(&a);
    if (!ok) return 0;
    s->worker = w;
    s->record_ms = r;
    *old_record = old;
    *new_record = r;
    return 1;
}

int ik__etcd_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                          char *why, size_t why_len)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    int e = ik__etcd_write_gate(b, why, why_len);
    if (e) return e;
    etcd_slot *s = calloc(1, sizeof *s);
    if (!s) return IK_ENOMEM;
    snprintf(s->identity, sizeof s->identity, "%s", req->identity);
    ik__lease_proof proof;
    e = ik__etcd_lease_get(b, &s->lease, &proof, why, why_len);
    unsigned char rnd[8];
    uint64_t r64 = 0;
    if (!e && ik__random_bytes(rnd, sizeof rnd) == 0) memcpy(&r64, rnd, sizeof r64);
    for (int round = 0; !e && round < 5; round++) {
        slot_view *v = NULL;
        size_t n = 0;
        e = scan(b, req->app, &v, &n, why, why_len);
        if (e) break;
        uint32_t cand[64];
        size_t k = candidates(req, v, n, cand, 64, r64 + (uint64_t)round);
        if (k == 0) {
            describe_holders(req, v, n, why, why_len);
            free(v);
            free(s);
            return IK_ENOSLOT;
        }
        for (size_t i = 0; i < k && !e; i++) {
            const slot_view *seen = NULL;
            for (size_t j = 0; j < n; j++)
                if (v[j].worker == cand[i]) seen = &v[j];
            int64_t old = 0, rec = 0;
            int got = take(b, req, seen, cand[i], s, &old, &rec, why, why_len);
            if (got < 0) {
                e = got;
                break;
            }
            if (got == 1) {
                free(v);
                /* the proof: the lease's, refreshed if stale (ES3) */
                int pe = ik__etcd_lease_proof(b, s->lease, &proof);
                if (pe == IK_ELOST) { /* the lease went meanwhile: the key with it */
                    free(s);
                    return ik__fail(IK_ESTORE, why, why_len,
                                    "the etcd lease expired during the take");
                }
                memset(out, 0, sizeof *out);
                out->worker = s->worker;
                out->old_record_ms = old;
                out->record_ms = rec;
                out->since_ms = s->since_ms;
                out->proof = proof;
                out->handle = s;
                return IK_OK;
            }
            if (i >= 3) break; /* races lost on several: read again */
        }
        free(v);
    }
    free(s);
    if (!e) e = ik__fail(IK_ENOSLOT, why, why_len, "no free worker slot: lost every race for one");
    return e;
}

/* etcd's words for this persist's failure, "" for none (the backend's last_error) */
static void persist_said(ik__etcd_backend *b, const char *why)
{
    pthread_mutex_lock(&b->said_mu);
    snprintf(b->said, sizeof b->said, "%s", why);
    pthread_mutex_unlock(&b->said_mu);
}

int ik__etcd_slot_persist(ik__backend *be, void *handle, int64_t record_ms, ik__lease_proof *proof,
                          int64_t *written_ms)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    etcd_slot *s = handle;
    char why[400] = "";
    int e = ik__etcd_write_gate(b, why, sizeof why);
    persist_said(b, e ? why : "");
    if (e == IK_EUNSAFE) return e;
    if (e) return IK_EINDOUBT; /* not sent: unproven, maybe still ours */
    ik__lease_proof p;
    e = ik__etcd_lease_proof(b, s->lease, &p);
    if (e) return e; /* IK_ELOST (EL2), IK_EINDOUBT (EL3: no keepalive answered) or IK_EUNSAFE */
    if (record_ms < s->record_ms) record_ms = s->record_ms;
    char rec[400];
    snprintf(rec, sizeof rec, "%" PRId64 " %" PRId64 " %s", record_ms, s->since_ms, s->identity);
    ik__etcd_txn *t = ik__etcd_txn_new();
    if (!t || ik__etcd_txn_cmp(t, s->slot_key, "CREATE", "EQUAL", s->create_rev, NULL) ||
        ik__etcd_txn_put(t, 1, s->record_key, rec, 0)) {
        ik__etcd_txn_free(t);
        return IK_EINDOUBT;
    }
    ik__etcd_answer a = {0};
    e = ik__etcd_txn_run(b->gw, t, b->wait_ms, &a, why, sizeof why);
    ik__etcd_txn_free(t);
    if (e == IK_EUNSAFE) {
        ik__logf("etcd slot %" PRIu32 ": %s", s->worker, why);
        return e;
    }
    if (e) { /* unproven, maybe still ours: the lease says so; etcd's words here, once */
        if (strncmp(s->said, why, sizeof s->said - 1) != 0)
            ik__logf("etcd slot %" PRIu32 ": its record was not written, the lease unproven: %s",
                     s->worker, why);
        snprintf(s->said, sizeof s->said, "%s", why);
        persist_said(b, why);
        return IK_EINDOUBT;
    }
    s->said[0] = '\0';
    int ok = a.succeeded;
    ik__etcd_answer_free(&a);
    if (!ok) return IK_ELOST; /* ES2 */
    s->record_ms = record_ms;
    *written_ms = record_ms;
    *proof = p;
    return IK_OK;
}

int ik__etcd_slot_release(ik__backend *be, void *handle, int64_t record_ms)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    etcd_slot *s = handle;
    if (!s) return IK_OK;
    char why[400], rec[400];
    /* a release lowers our record and drops our key: the last verdicts decide; while
     * one is refused nothing is sent and the key goes with the lease */
    int e = ik__hazards_refused(&b->base.hz, why, sizeof why);
    if (!e) {
        snprintf(rec, sizeof rec, "%" PRId64 " %" PRId64 " %s", record_ms, s->since_ms,
                 s->identity);
        ik__etcd_txn *t = ik__etcd_txn_new();
        if (!t || ik__etcd_txn_cmp(t, s->slot_key, "CREATE", "EQUAL", s->create_rev, NULL) ||
            ik__etcd_txn_put(t, 1, s->record_key, rec, 0) || ik__etcd_txn_del(t, 1, s->slot_key)) {
            e = IK_ENOMEM;
        } else {
            ik__etcd_answer a = {0};
            e = ik__etcd_txn_run(b->gw, t, b->wait_ms, &a, why, sizeof why);
            if (!e && !a.succeeded) e = IK_ELOST;
            ik__etcd_answer_free(&a);
        }
        ik__etcd_txn_free(t);
    }
    free(s);
    return e;
}

void ik__etcd_slot_forget(ik__backend *be, void *handle)
{
    (void)be;
    free(handle);
}

int ik__etcd_slots_list(ik__backend *be, const char *app, ik_slot_info **out, size_t *n_out)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    slot_view *v = NULL;
    size_t n = 0;
    char why[300];
    int e = scan(b, app, &v, &n, why, sizeof why);
    if (e) return e;
    ik_slot_info *o = n ? calloc(n, sizeof *o) : NULL;
    if (n && !o) {
        free(v);
        return IK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        o[i].worker = v[i].worker;
        o[i].held = v[i].held;
        o[i].record_ms = v[i].record_ms;
        if (v[i].held) {
            int64_t since;
            split_value(v[i].value, &since, o[i].holder, sizeof o[i].holder, o[i].detail,
                        sizeof o[i].detail);
            o[i].since_ms = since;
        } else {
            snprintf(o[i].holder, sizeof o[i].holder, "%s", v[i].holder);
        }
        if (v[i].unreadable) snprintf(o[i].detail, sizeof o[i].detail, "unreadable record");
    }
    free(v);
    *out = o;
    *n_out = n;
    return IK_OK;
}
