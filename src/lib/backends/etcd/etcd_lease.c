/* etcd_lease.c: the one etcd lease of an etcd:// handle, on which its slot keys and
 * lock keys live, and the thread that keeps it alive at a third of its TTL, one
 * keepalive a POST (etcd_handle.h states EL1-EL3).
 *
 * States:
 *   NONE --ik__etcd_lease_get: grant answered--> LIVE (proof: the grant's send)
 *   LIVE --keepalive answered with a TTL--> LIVE (proof: that keepalive's send)
 *   LIVE --keepalive answered without a TTL--> GONE (EL2)
 *   LIVE --keepalive unanswered--> LIVE, the proof ageing (EL3)
 *   GONE --ik__etcd_lease_get--> LIVE with a new id
 *   any --ik__etcd_lease_stop--> NONE (revoked where asked)
 *
 * Threads: every call takes mu; the thread is started by the first grant and
 * stopped by ik__etcd_lease_stop (close).
 */
#include "etcd_handle.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One keepalive of id: 0 and the proof, IK_ELOST (gone: EL2) or IK_EINDOUBT. */
static int keepalive(ik__etcd_backend *b, int64_t id, ik__lease_proof *p)
{
    ik__etcd_answer a = {0};
    char why[300];
    int64_t sent = ik__mono_ns();
    int e = ik__etcd_lease_keepalive(b->gw, id, b->wait_ms, &a, why, sizeof why);
    if (e == IK_EUNSAFE) ik__logf("etcd lease %" PRIx64 ": %s", (uint64_t)id, why);
    if (e) return e == IK_EUNSAFE ? e : IK_EINDOUBT;
    int64_t ttl = a.ttl;
    ik__etcd_answer_free(&a);
    if (ttl <= 0) return IK_ELOST;
    *p = (ik__lease_proof){sent, ttl * 1000};
    return IK_OK;
}

/* Records the outcome of a keepalive of id (under mu). */
static void note(ik__etcd_lease *l, int64_t id, int e, const ik__lease_proof *p)
{
    if (l->id != id) return;
    if (e == IK_OK && p->sent_mono_ns > l->proof.sent_mono_ns) l->proof = *p;
    if (e == IK_ELOST && !l->gone) {
        l->gone = 1;
        ik__logf("etcd lease %" PRIx64 " expired (its keepalive was answered without a TTL): "
                 "every slot and lock on it is lost",
                 (uint64_t)id);
    }
    pthread_cond_broadcast(&l->cv);
}

static void *run(void *arg)
{
    ik__etcd_backend *b = arg;
    ik__etcd_lease *l = &b->lease;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        int64_t id = l->id, period = ik__proof_slack_ms(l->ttl_s * 1000);
        if (id && !l->gone) {
            pthread_mutex_unlock(&l->mu);
            ik__lease_proof p;
            int e = keepalive(b, id, &p);
            pthread_mutex_lock(&l->mu);
            note(l, id, e, &p);
            if (e == IK_EINDOUBT && period > 500) period = 500; /* try again soon */
        }
        if (l->stop) break;
        struct timespec ts;
        ik__deadline_ts(&ts, period > 100 ? period : 100);
        pthread_cond_timedwait(&l->cv, &l->mu, &ts);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int ik__etcd_lease_start(ik__etcd_backend *b)
{
    ik__etcd_lease *l = &b->lease;
    pthread_mutex_init(&l->mu, NULL);
    ik__cond_init_mono(&l->cv);
    return IK_OK;
}

int ik__etcd_lease_get(ik__etcd_backend *b, int64_t *id, ik__lease_proof *proof, char *why,
                       size_t why_len)
{
    ik__etcd_lease *l = &b->lease;
    pthread_mutex_lock(&l->mu);
    if (l->id && !l->gone) {
        *id = l->id;
        *proof = l->proof;
        pthread_mutex_unlock(&l->mu);
        return IK_OK;
    }
    pthread_mutex_unlock(&l->mu);
    ik__etcd_answer a = {0};
    int64_t sent = ik__mono_ns();
    int e = ik__etcd_lease_grant(b->gw, b->ttl_ms / 1000, b->wait_ms * 3, &a, why, why_len);
    if (e) return e == IK_EINDOUBT ? IK_ESTORE : e; /* an unanswered grant lapses by itself */
    int64_t got = a.id, ttl = a.ttl;
    ik__etcd_answer_free(&a);
    if (!got || ttl <= 0)
        return ik__fail(IK_ESTORE, why, why_len,
                        "etcd granted no lease (ID %" PRId64 ", TTL %" PRId64 ")", got, ttl);
    pthread_mutex_lock(&l->mu);
    if (l->id && !l->gone) { /* another thread granted one meanwhile: use it, drop ours */
        *id = l->id;
        *proof = l->proof;
        pthread_mutex_unlock(&l->mu);
        ik__etcd_answer r = {0};
        char w[200];
        if (ik__etcd_lease_revoke(b->gw, got, b->wait_ms, &r, w, sizeof w) == IK_OK)
            ik__etcd_answer_free(&r);
        return IK_OK;
    }
    l->id = got;
    l->ttl_s = ttl;
    l->gone = 0;
    l->proof = (ik__lease_proof){sent, ttl * 1000};
    *id = got;
    *proof = l->proof;
    int e2 = IK_OK;
    if (!l->thread_on) {
        if (pthread_create(&l->thread, NULL, run, b) == 0)
            l->thread_on = 1;
        else
            e2 = ik__fail(IK_ENOMEM, why, why_len, "cannot start the etcd lease's thread");
    }
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return e2;
}

int ik__etcd_lease_proof(ik__etcd_backend *b, int64_t id, ik__lease_proof *proof)
{
    ik__etcd_lease *l = &b->lease;
    pthread_mutex_lock(&l->mu);
    if (l->id != id || l->gone) {
        pthread_mutex_unlock(&l->mu);
        return IK_ELOST;
    }
    ik__lease_proof p = l->proof;
    int64_t third_ns = ik__proof_slack_ms(l->ttl_s * 1000) * INT64_C(1000000);
    pthread_mutex_unlock(&l->mu);
    if (ik__mono_ns() - p.sent_mono_ns >= third_ns) { /* stale: a keepalive of our own */
        ik__lease_proof q;
        int e = keepalive(b, id, &q);
        pthread_mutex_lock(&l->mu);
        note(l, id, e, &q);
        pthread_mutex_unlock(&l->mu);
        if (e) return e;
        p = q;
    }
    *proof = p;
    return IK_OK;
}

int ik__etcd_lease_gone(ik__etcd_backend *b, int64_t id)
{
    ik__etcd_lease *l = &b->lease;
    pthread_mutex_lock(&l->mu);
    int g = l->id != id || l->gone;
    pthread_mutex_unlock(&l->mu);
    return g;
}

void ik__etcd_lease_stop(ik__etcd_backend *b, int revoke)
{
    ik__etcd_lease *l = &b->lease;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->cv);
    int on = l->thread_on;
    int64_t id = l->gone ? 0 : l->id;
    l->thread_on = 0;
    pthread_mutex_unlock(&l->mu);
    if (on) pthread_join(l->thread, NULL);
    if (revoke && id) { /* every key on it goes at once, not at the TTL */
        ik__etcd_answer a = {0};
        char why[200];
        if (ik__etcd_lease_revoke(b->gw, id, b->wait_ms, &a, why, sizeof why) == IK_OK)
            ik__etcd_answer_free(&a);
    }
    pthread_mutex_lock(&l->mu);
    l->id = 0;
    pthread_mutex_unlock(&l->mu);
}
