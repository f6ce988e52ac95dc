/* backend_sql_slots.c: worker slots on SQL: one row of idk_slots per (app, worker),
 * holding its holder's identity, an owner token, an expiry on the database's clock,
 * the time record and since when it is held (docs/sql.md, "Slots").
 *
 * A slot is taken in one transaction: the row is locked (IK__SQL_SLOT_LOCK) and
 * taken only if it has expired (IK__SQL_SLOT_TAKE), or inserted if it never
 * existed (IK__SQL_SLOT_INSERT; a unique violation means someone else won). The
 * holder renews it with a conditional update on its token that also writes the
 * time record (IK__SQL_SLOT_RENEW), each on a connection of its own so that tag
 * traffic never delays a renewal.
 *
 * Invariants
 *   SSL1. Two holders never hold one row: a take needs the row expired by the
 *       database's clock, under the row's lock; a renewal needs the token and the
 *       row unexpired, so a holder whose row expired (even if nobody took it)
 *       learns IK_ELOST and takes a slot again, with the floor from the record.
 *   SSL2. A holder proves its lease only for 2/3 of the TTL (core/lease.c's window)
 *       after the *send* time of its last acknowledged renewal (or take), which is
 *       what it reports, by its own BOOTTIME clock: the row's
 *       expiry was set by the database after that send, ttl later, so with clocks
 *       that run at rates within a third of each other the holder stops before any
 *       other can take the row.
 *   SSL3. The record in the row only grows (GREATEST), except at a clean release.
 *
 *   slot_acquire: scan -> candidate -> BEGIN, LOCK, TAKE | INSERT (+ its proof),
 *                 COMMIT (+ the session's state): a refused proof rolls back, or
 *                 releases what was committed
 *   slot_persist: the hazard gate (backend_sql_hazards.c): refused -> IK_EUNSAFE,
 *                 nothing sent; then RENEW with its proof in one round trip: 1 row
 *                 -> ok, unless the proof is refused (IK_EUNSAFE, the window not
 *                 extended); 0 rows -> IK_ELOST; no answer -> IK_EINDOUBT
 *                 (the connection is opened again at the next persist)
 *   slot_release: RELEASE (token emptied, expired, holder kept), then close
 */
#include "backend_sql.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct sql_slot {
    ik__sql_conn *c; /* our own connection; NULL after it died */
    uint32_t worker;
    char app[IK__APP_NAME_MAX + 1];
    char token[33];
} sql_slot;

#define I64(buf, v) (snprintf((buf), sizeof(buf), "%" PRId64, (int64_t)(v)), (buf))

/* One row of a scan. */
typedef struct scan_row {
    uint32_t worker;
    int free;
    const char *holder;
} scan_row;

/* Runs the write call on c, inside our open transaction, with the driver's proof in
 * the same round trip where it has one (SP3 of backend_sql_proof.c), else alone:
 * the write's class (*affected its affected rows, if asked), and *unsafe 1 if the
 * write ran and the proof has a refused row (why names it): the caller rolls back. */
static int write_early(ik__sql_backend *b, ik__sql_conn *c, ik__sql_call call, int64_t *affected,
                       int *unsafe, char *why, size_t why_len)
{
    ik__sql_call calls[2] = {call, {IK__SQL_PROOF, NULL, 0}};
    ik__sql_res r[2];
    int ran = 0, proof = ik__sql_has_proof(b->d);
    *unsafe = 0;
    memset(r, 0, sizeof r);
    int rc = proof ? ik__sql_exec_pipeline(b->d, c, calls, 2, r, &ran, why, why_len)
                   : ik__sql_exec(b->d, c, call.id, call.params, call.nparams, &r[0], why, why_len);
    if (rc == 0 && affected) *affected = r[0].affected;
    if (rc == 0 && proof) *unsafe = ik__sql_proof_early(b, c, &r[1], why, why_len) == IK_EUNSAFE;
    ik__sql_res_clear(&r[0]);
    ik__sql_res_clear(&r[1]);
    return rc;
}

/* Takes worker w for req on c in one transaction. 0 (out filled but handle),
 * 1 (taken by someone else), IK_EUNSAFE (the take's evidence, read after its COMMIT,
 * refused or qualified it: released, not taken), or a driver class with why. */
static int take(ik__sql_backend *b, ik__sql_conn *c, const ik__slot_request *req, uint32_t w,
                const char *token, ik__slot_grant *out, char *why, size_t why_len)
{
    const ik__sql_driver *d = b->d;
    char sw[24], sttl[24], srec[24];
    I64(sw, w);
    I64(sttl, b->ttl_ms);
    I64(srec, req->new_record_ms);
    ik__sql_res r;
    int rc = ik__sql_exec(d, c, IK__SQL_BEGIN, NULL, 0, NULL, why, why_len);
    if (rc) return rc;
    const char *lp[] = {req->app, sw};
    int64_t sent = ik__mono_ns();
    rc = ik__sql_exec(d, c, IK__SQL_SLOT_LOCK, lp, 2, &r, why, why_len);
    if (rc) goto abort;
    int64_t old = 0;
    int unsafe = 0;
    if (r.nrows == 0) {
        const char *ip[] = {req->app, sw, req->identity, token, sttl, srec};
        rc = write_early(b, c, (ik__sql_call){IK__SQL_SLOT_INSERT, ip, 6}, NULL, &unsafe, why,
                         why_len);
        if (rc == IK__SQL_EDUPLICATE) rc = 1;
    } else if (!ik__sql_bool(&r, 0, 1)) {
        rc = 1; /* held */
    } else {
        old = ik__sql_int(&r, 0, 0);
        const char *tp[] = {req->identity, token, sttl, srec, req->app, sw};
        int64_t affected = 0;
        rc = write_early(b, c, (ik__sql_call){IK__SQL_SLOT_TAKE, tp, 6}, &affected, &unsafe, why,
                         why_len);
        if (rc == 0 && affected != 1) rc = 1;
    }
    ik__sql_res_clear(&r);
    if (rc == 0 && unsafe) rc = IK_EUNSAFE; /* SP3: nothing committed */
    if (rc) goto abort;
    if (b->test_before_take_commit) d->run(c, b->test_before_take_commit, NULL, 0); /* tests */
    ik__test_hold(b->test_commit_hold);
    ik__sql_commit cm; /* SP1: the evidence read after the COMMIT, in its round trip */
    rc = ik__sql_commit_proved(b, c, (ik__sql_call){IK__SQL_COMMIT, NULL, 0}, "idk_slots", NULL,
                               &cm);
    if (cm.state == IK__SQL_UNANSWERED || cm.state == IK__SQL_NOT_COMMITTED)
        return ik__fail(rc ? rc : IK__SQL_EDEFINITE, why, why_len, "%s", cm.why);
    int64_t record = old > req->new_record_ms ? old : req->new_record_ms;
    if (cm.state == IK__SQL_UNTRUSTED) {
        /* SP4: committed, but not to be trusted: released, never granted (the release
         * commits whatever mode the session is in); on a dead connection the row
         * expires by itself */
        const char *rp[] = {I64(srec, record), req->app, sw, token};
        if (ik__sql_exec(d, c, IK__SQL_ROLLBACK, NULL, 0, NULL, NULL, 0) == 0 &&
            ik__sql_exec(d, c, IK__SQL_SLOT_RELEASE, rp, 4, NULL, NULL, 0) == 0)
            ik__sql_exec(d, c, IK__SQL_COMMIT, NULL, 0, NULL, NULL, 0);
        ik__fail(0, why, why_len, "the take of worker %" PRIu32 " was not kept: %s", w, cm.why);
        return rc && !cm.refused ? rc : IK_EUNSAFE;
    }
    out->worker = w;
    out->old_record_ms = old;
    out->record_ms = record;
    out->since_ms = ik__wall_ms();
    out->proof = (ik__lease_proof){sent, b->ttl_ms};
    return 0;
abort:
    return ik__sql_abort(d, c, rc);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* "no free worker slot: all N slots of app A in LO-HI are held: 0 by a, ..." */
static int no_slot(const ik__slot_request *req, const scan_row *rows, size_t n, char *why,
                   size_t why_len)
{
    if (!why || why_len == 0) return IK_ENOSLOT;
    size_t len = (size_t)snprintf(why, why_len,
                                  "no free worker slot: all %" PRIu64 " slots of app %s in %" PRIu32
                                  "-%" PRIu32 " are held",
                                  (uint64_t)req->worker_max - req->worker_min + 1, req->app,
                                  req->worker_min, req->worker_max);
    size_t shown = 0;
    for (size_t i = 0; i < n && len < why_len; i++) {
        char item[320];
        snprintf(item, sizeof item, "%s%" PRIu32 " by %s", shown ? ", " : ": ", rows[i].worker,
                 rows[i].holder);
        size_t il = strlen(item);
        if (len + il + 16 >= why_len) {
            snprintf(why + len, why_len - len, " (+%zu more)", n - shown);
            break;
        }
        memcpy(why + len, item, il + 1);
        len += il;
        shown++;
    }
    return IK_ENOSLOT;
}

/* Scans the range and tries the candidates: the identity's last slot, then the
 * free ones by req->choice. 0, IK_ENOSLOT, or an error. */
static int scan_and_take(ik__sql_backend *b, ik__sql_conn *c, const ik__slot_request *req,
                         const char *token, ik__slot_grant *out, char *why, size_t why_len)
{
    char lo[24], hi[24];
    I64(lo, req->worker_min);
    I64(hi, req->worker_max);
    const char *sp[] = {req->app, lo, hi};
    ik__sql_res r;
    int rc = ik__sql_exec(b->d, c, IK__SQL_SLOTS_SCAN, sp, 3, &r, why, why_len);
    if (rc) return rc;
    uint64_t range = (uint64_t)req->worker_max - req->worker_min + 1;
    scan_row *rows = calloc(r.nrows + 1, sizeof *rows);
    uint32_t *taken = calloc(r.nrows + 1, sizeof *taken);
    if (!rows || !taken) {
        free(rows);
        free(taken);
        ik__sql_res_clear(&r);
        return IK_ENOMEM;
    }
    size_t nheld = 0;
    int64_t mine = -1;
    for (size_t i = 0; i < r.nrows; i++) {
        scan_row row = {(uint32_t)ik__sql_int(&r, i, 0), ik__sql_bool(&r, i, 2),
                        ik__sql_cell(&r, i, 1)};
        if (!row.free) {
            rows[nheld] = row;
            taken[nheld++] = row.worker;
        } else if (mine < 0 && strcmp(row.holder, req->identity) == 0) {
            mine = row.worker;
        }
    }
    qsort(taken, nheld, sizeof *taken, cmp_u32);
    rc = IK_ENOSLOT;
    if (nheld >= range) {
        no_slot(req, rows, nheld, why, why_len);
    } else {
        uint64_t nfree = range - nheld;
        uint64_t start = 0;
        if (req->choice == IK_SLOT_RANDOM) {
            unsigned char rb[8];
            uint64_t x = 0;
            if (ik__random_bytes(rb, sizeof rb) == 0) memcpy(&x, rb, sizeof x);
            start = x % nfree;
        }
        /* candidates: mine, then up to 8 free ones from start (k-th free worker) */
        for (int attempt = -1; attempt < 8 && (uint64_t)(attempt < 0 ? 0 : attempt) < nfree;
             attempt++) {
            uint32_t w;
            if (attempt < 0) {
                if (mine < 0) continue;
                w = (uint32_t)mine;
            } else {
                uint64_t k = (start + (uint64_t)attempt) % nfree;
                /* the k-th worker of the range not in taken */
                uint64_t cand = req->worker_min + k;
                for (size_t j = 0; j < nheld && taken[j] <= cand; j++)
                    cand++;
                w = (uint32_t)cand;
            }
            rc = take(b, c, req, w, token, out, why, why_len);
            if (rc != 1) break;
            rc = IK_ENOSLOT; /* lost a race for w: the next one */
        }
        if (rc == IK_ENOSLOT) no_slot(req, rows, nheld, why, why_len);
    }
    free(rows);
    free(taken);
    ik__sql_res_clear(&r);
    return rc;
}

int ik__sql_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                         char *why, size_t why_len)
{
    ik__sql_backend *b = ik__sql_of(be);
    sql_slot *s = calloc(1, sizeof *s);
    if (!s) return IK_ENOMEM;
    unsigned char rnd[16];
    int rc = ik__random_bytes(rnd, sizeof rnd);
    if (rc) {
        free(s);
        return ik__fail(rc, why, why_len, "no randomness for a slot token");
    }
    for (int i = 0; i < 16; i++)
        snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
    snprintf(s->app, sizeof s->app, "%s", req->app);
    rc = ik__sql_connect(b, &s->c, why, why_len);
    if (rc == 0) {
        int cls = 0;
        rc = ik__sql_hazards_gate(b, s->c, &cls, why, why_len); /* nothing sent while refused */
        if (rc) {
            ik__sql_conn_close(b, s->c);
            free(s);
            return rc;
        }
        char inner[256] = "";
        rc = scan_and_take(b, s->c, req, s->token, out, inner, sizeof inner);
        if (rc && rc != IK_ENOSLOT && rc != IK_ENOMEM)
            ik__fail(ik__sql_error(rc), why, why_len, "cannot take a slot on %s: %s", b->shown,
                     inner);
        else if (rc)
            snprintf(why, why_len, "%s", inner);
        ik__sql_hazards_foreign(b, s->c, rc);
        rc = rc > 0 ? IK_ENOSLOT : ik__sql_error(rc);
    } else {
        rc = ik__sql_error(rc);
    }
    if (rc) {
        ik__sql_conn_close(b, s->c);
        free(s);
        return rc;
    }
    s->worker = out->worker;
    out->handle = s;
    char sess[48];
    b->d->session(s->c, sess, sizeof sess);
    pthread_mutex_lock(&b->mu);
    snprintf(b->session, sizeof b->session, "%s", sess);
    pthread_mutex_unlock(&b->mu);
    return IK_OK;
}

int ik__sql_slot_persist(ik__backend *be, void *handle, int64_t record_ms, ik__lease_proof *proof,
                         int64_t *written_ms)
{
    ik__sql_backend *b = ik__sql_of(be);
    sql_slot *s = handle;
    if (s->c && !ik__sql_reusable(b->d, s->c)) { /* ended while idle, or about to be */
        ik__sql_conn_close(b, s->c);
        s->c = NULL;
    }
    if (!s->c && ik__sql_connect(b, &s->c, NULL, 0) != 0) {
        s->c = NULL;
        return IK_EINDOUBT;
    }
    /* the connection's hazards when due; while one is refused, nothing is sent */
    int cls = 0;
    int rc = ik__sql_hazards_gate(b, s->c, &cls, NULL, 0);
    if (ik__sql_dead(cls)) {
        ik__sql_conn_close(b, s->c);
        s->c = NULL;
    }
    if (rc == IK_EUNSAFE) return rc;
    if (rc) return IK_EINDOUBT;
    int64_t sent = ik__mono_ns(); /* the check's round trip is not the renewal's */
    char sttl[24], srec[24], sw[24];
    I64(sttl, b->ttl_ms);
    I64(srec, record_ms);
    I64(sw, s->worker);
    const char *p[] = {sttl, srec, s->app, sw, s->token};
    ik__sql_res r;
    ik__sql_commit cm; /* SP1: autocommitted, the evidence read after it */
    rc = ik__sql_commit_proved(b, s->c, (ik__sql_call){IK__SQL_SLOT_RENEW, p, 5}, "idk_slots", &r,
                               &cm);
    int64_t affected = r.affected;
    ik__sql_res_clear(&r);
    if (ik__sql_dead(rc)) {
        ik__sql_conn_close(b, s->c);
        s->c = NULL;
    }
    if (cm.state == IK__SQL_UNANSWERED || cm.state == IK__SQL_NOT_COMMITTED) return IK_EINDOUBT;
    if (affected != 1 && cm.state == IK__SQL_COMMITTED) return IK_ELOST;
    if (cm.state == IK__SQL_UNTRUSTED) { /* SP4: the safe window is not extended */
        ik__logf("worker %" PRIu32 ": a renewal was not trusted: %s", s->worker, cm.why);
        /* a refused proof, or another server session (a pooler): in doubt at once */
        return cm.refused || rc == IK__SQL_EFOREIGN ? IK_EUNSAFE : IK_EINDOUBT;
    }
    *proof = (ik__lease_proof){sent, b->ttl_ms};
    *written_ms = record_ms;
    return IK_OK;
}

int ik__sql_slot_release(ik__backend *be, void *handle, int64_t record_ms)
{
    ik__sql_backend *b = ik__sql_of(be);
    sql_slot *s = handle;
    if (!s) return IK_OK;
    int rc = IK_OK;
    if (s->c && !ik__sql_reusable(b->d, s->c)) {
        ik__sql_conn_close(b, s->c);
        s->c = NULL;
    }
    if (!s->c && ik__sql_connect(b, &s->c, NULL, 0) != 0) s->c = NULL;
    if (s->c) {
        char srec[24], sw[24];
        I64(srec, record_ms);
        I64(sw, s->worker);
        const char *p[] = {srec, s->app, sw, s->token};
        rc = ik__sql_error(ik__sql_exec(b->d, s->c, IK__SQL_SLOT_RELEASE, p, 4, NULL, NULL, 0));
    } else {
        rc = IK_ESTORE; /* the row expires by itself */
    }
    ik__sql_conn_close(b, s->c);
    free(s);
    return rc;
}

void ik__sql_slot_forget(ik__backend *be, void *handle)
{
    ik__sql_backend *b = ik__sql_of(be);
    sql_slot *s = handle;
    if (!s) return;
    ik__sql_conn_close(b, s->c);
    free(s);
}

int ik__sql_slots_list(ik__backend *be, const char *app, ik_slot_info **out, size_t *n)
{
    ik__sql_backend *b = ik__sql_of(be);
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, NULL, 0);
    if (rc) return ik__sql_error(rc);
    const char *p[] = {app};
    ik__sql_res r;
    rc = ik__sql_exec(b->d, c, IK__SQL_SLOTS_LIST, p, 1, &r, NULL, 0);
    ik__sql_put(b, idx, rc);
    if (rc) return ik__sql_error(rc);
    ik_slot_info *v = calloc(r.nrows ? r.nrows : 1, sizeof *v);
    if (!v) {
        ik__sql_res_clear(&r);
        return IK_ENOMEM;
    }
    for (size_t i = 0; i < r.nrows; i++) {
        v[i].worker = (uint32_t)ik__sql_int(&r, i, 0);
        v[i].held = !ik__sql_bool(&r, i, 2);
        snprintf(v[i].holder, sizeof v[i].holder, "%s", ik__sql_cell(&r, i, 1));
        v[i].record_ms = ik__sql_int(&r, i, 3);
        v[i].since_ms = v[i].held ? ik__sql_int(&r, i, 4) : 0;
        if (v[i].held)
            snprintf(v[i].detail, sizeof v[i].detail, "expires in %" PRId64 " ms",
                     ik__sql_int(&r, i, 5));
    }
    *out = v;
    *n = r.nrows;
    ik__sql_res_clear(&r);
    return IK_OK;
}
