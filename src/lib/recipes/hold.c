/* hold.c: the hold monitor: HELD, IN_DOUBT or LOST for every grant of every backend,
 * from the evidence its lock protocol reports (hold.h has the diagram and HM1-HM3;
 * docs/recipes.md, "The hold monitor").
 *
 * Two threads per lock whose protocol has a probe, from its first grant to its
 * destroy. The monitor decides: it wakes at the window's end, when a probe is due,
 * and on any evidence, takes the one edge that applies (one function each below),
 * and calls the owner back outside the mutex. The prober runs the protocol's probe
 * when the monitor asks, with the window's end as its deadline, and between probes
 * the protocol's watch where it has one; it never decides anything.
 *
 * Timing, the same for every backend (term: the session timeout or lease TTL the
 * grant's proof carries):
 *   - LOST at the last proof's send + 2/3 term (backend.h's ik__proof_until_ns),
 *     the store frees the grant no sooner than the send + the term: the owner has
 *     the last third to stop what the grant guards;
 *   - a probe every term/4 from the last proof's send while the grant stands, so
 *     that two go unanswered before LOST; after one that got no answer, the next
 *     RETRY_MS later (at once when the store says it answers again);
 *   - each probe may wait until the window's end, never past it.
 */
#include "hold.h"
#include "internal.h"
#include "recipe.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define RETRY_MS 200 /* the next probe after one that learned nothing */

static int64_t window_end(const ik__hold *h)
{
    return ik__proof_until_ns(&h->proof);
}

/* A decision made under mu, told to the owner after it (HM3). */
typedef struct verdict {
    int changed; /* state became to, for why */
    ik_hold_state to;
    char why[200];
    int proved; /* the window's end moved to until */
    int64_t until;
} verdict;

static void move(ik__hold *h, verdict *v, ik_hold_state to, const char *why)
{
    if (h->state == to) return;
    h->state = to;
    snprintf(h->why, sizeof h->why, "%s", why);
    v->changed = 1;
    v->to = to;
    snprintf(v->why, sizeof v->why, "%s", why);
}

/* HELD, IN_DOUBT --the prober's evidence--> HELD (a proof sent after the doubt
 * began), IN_DOUBT (nothing learned), LOST (gone). */
static void take_probe(ik__hold *h, int64_t now, verdict *v)
{
    if (!h->probe_done) return;
    h->probe_done = 0;
    const ik__hold_evidence *ev = &h->probe_ev;
    if (ev->fact == IK__HOLD_GONE) {
        move(h, v, IK_HOLD_LOST, ev->why);
        return;
    }
    if (ev->fact == IK__HOLD_STANDS) {
        if (ev->proof.sent_mono_ns > h->proof.sent_mono_ns) {
            h->proof = ev->proof;
            v->proved = 1;
            v->until = window_end(h);
        }
        h->next_probe_ns = h->proof.sent_mono_ns + h->proof.term_ms / 4 * INT64_C(1000000);
        if (h->state == IK_HOLD_IN_DOUBT && ev->proof.sent_mono_ns >= h->doubt_ns)
            move(h, v, IK_HOLD_HELD,
                 "the store proves the grant again (the same session or lease)");
        return;
    }
    h->next_probe_ns = now + RETRY_MS * INT64_C(1000000);
    snprintf(h->doubt_why, sizeof h->doubt_why, "%s", ev->why[0] ? ev->why : "no answer");
    if (h->state == IK_HOLD_HELD) {
        h->doubt_ns = h->probe_sent;
        char why[200];
        /* the verdict first: the store's words may be cut to the public why's size */
        snprintf(why, sizeof why, "no proof of the grant, it may have been lost: %s", h->doubt_why);
        move(h, v, IK_HOLD_IN_DOUBT, why);
    }
}

/* HELD, IN_DOUBT --the store said unasked--> LOST (gone), IN_DOUBT (the connection
 * dropped); a probe at once when it answers again. */
static void take_told(ik__hold *h, int64_t now, verdict *v)
{
    if (h->told_gone) {
        move(h, v, IK_HOLD_LOST, h->told_why);
        return;
    }
    if (h->told_doubt) {
        h->told_doubt = 0;
        snprintf(h->doubt_why, sizeof h->doubt_why, "%s", h->told_why);
        if (h->state == IK_HOLD_HELD) {
            h->doubt_ns = h->told_doubt_ns;
            char why[200];
            snprintf(why, sizeof why, "the grant may have been lost: %s", h->told_why);
            move(h, v, IK_HOLD_IN_DOUBT, why);
        }
    }
    if (h->told_poke) {
        h->told_poke = 0;
        h->next_probe_ns = now;
    }
}

/* HELD, IN_DOUBT --the window's end passed (HM1)--> LOST. */
static void take_window(ik__hold *h, int64_t now, verdict *v)
{
    if (now < window_end(h)) return;
    char why[200];
    snprintf(why, sizeof why,
             "no proof of the grant for 2/3 of its %lld ms term: the store may hand it on "
             "%lld ms from now (last: %s)",
             (long long)h->proof.term_ms,
             (long long)(h->proof.term_ms - ik__proof_window_ms(h->proof.term_ms)),
             h->doubt_why[0] ? h->doubt_why : "no answer");
    move(h, v, IK_HOLD_LOST, why);
}

/* Asks the prober for a probe when one is due and none is asked or running (a watch
 * in progress is asked to yield first). */
static void ask_probe(ik__hold *h, int64_t now)
{
    if (h->state == IK_HOLD_LOST || h->probe_asked || h->probe_running) return;
    if (now < h->next_probe_ns) return;
    if (h->watching) {
        __atomic_store_n(&h->probe_stop, 1, __ATOMIC_RELEASE);
        return;
    }
    h->probe_asked = 1;
    h->probe_grant = h->grant;
    h->probe_deadline = window_end(h);
    h->probe_sent = now;
    pthread_cond_broadcast(&h->pcv);
}

/* Calls the owner back for grant g, outside mu (HM3): the state change first, then a
 * moved window (HM2), unless a LOST came with it. */
static void tell(ik_lock *lk, uint64_t g, const verdict *v)
{
    ik__hold *h = &lk->hold;
    if (h->grant != g || !h->active) return;
    h->cb_busy = 1;
    pthread_mutex_unlock(&h->mu);
    if (v->proved && v->to != IK_HOLD_LOST && lk->on_proof)
        lk->on_proof(lk->ctx, ik__hold_public_ns(v->until));
    if (v->changed && lk->on_change) lk->on_change(lk->ctx, v->to, v->why);
    pthread_mutex_lock(&h->mu);
    h->cb_busy = 0;
    pthread_cond_broadcast(&h->cv);
}

/* Waits under mu until ns (ik__mono_ns) or a signal; a chunk on CLOCK_MONOTONIC,
 * the deadline checked again by the caller (clock.c). */
static void wait_until(ik__hold *h, int64_t ns)
{
    int64_t left = ns - ik__mono_ns();
    if (left <= 0) return;
    struct timespec ts;
    ik__deadline_ts(&ts, (left + 999999) / 1000000);
    pthread_cond_timedwait(&h->cv, &h->mu, &ts);
}

static void *monitor_main(void *arg)
{
    ik_lock *lk = arg;
    ik__hold *h = &lk->hold;
    pthread_mutex_lock(&h->mu);
    while (!h->quit) {
        if (!h->active || h->state == IK_HOLD_LOST) {
            pthread_cond_wait(&h->cv, &h->mu);
            continue;
        }
        uint64_t g = h->grant;
        int64_t now = ik__mono_ns();
        verdict v;
        memset(&v, 0, sizeof v);
        if (h->first_proof) { /* the grant's own proof (HM2), told from here */
            h->first_proof = 0;
            v.proved = 1;
            v.until = window_end(h);
        }
        take_told(h, now, &v);
        if (h->state != IK_HOLD_LOST) take_probe(h, now, &v);
        if (h->state != IK_HOLD_LOST) take_window(h, now, &v);
        ask_probe(h, now);
        if (v.changed || v.proved) {
            tell(lk, g, &v);
            continue;
        }
        int64_t wake = window_end(h);
        if (!h->probe_asked && !h->probe_running &&
            !(h->watching && __atomic_load_n(&h->probe_stop, __ATOMIC_ACQUIRE)) &&
            h->next_probe_ns < wake)
            wake = h->next_probe_ns;
        wait_until(h, wake);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* The prober: a probe when asked, the protocol's watch between probes, its tend
 * between grants when poked. Decides nothing. */
static void *prober_main(void *arg)
{
    ik_lock *lk = arg;
    ik__hold *h = &lk->hold;
    const ik__recipe_ops *ops = lk->ops;
    pthread_mutex_lock(&h->mu);
    while (!h->quit) {
        if (h->tend_asked && ops->tend) {
            h->tend_asked = 0;
            pthread_mutex_unlock(&h->mu);
            ops->tend(lk);
            pthread_mutex_lock(&h->mu);
            continue;
        }
        h->tend_asked = 0;
        ik__hold_evidence ev;
        memset(&ev, 0, sizeof ev);
        if (h->probe_asked) {
            uint64_t g = h->probe_grant;
            int64_t deadline = h->probe_deadline;
            h->probe_asked = 0;
            h->probe_running = 1;
            __atomic_store_n(&h->probe_stop, g != h->grant || !h->active, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&h->mu);
            ops->probe(lk, deadline, &h->probe_stop, &ev);
            pthread_mutex_lock(&h->mu);
            h->probe_running = 0;
            if (g == h->grant && h->active) {
                h->probe_ev = ev;
                h->probe_done = 1;
            }
            pthread_cond_broadcast(&h->cv);
            continue;
        }
        if (ops->watch && h->active && h->state != IK_HOLD_LOST && !h->probe_done &&
            ik__mono_ns() < h->next_probe_ns) {
            uint64_t g = h->grant;
            int64_t until = h->next_probe_ns;
            h->watching = 1; /* ask_probe stops it when a probe is due */
            __atomic_store_n(&h->probe_stop, 0, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&h->mu);
            ops->watch(lk, until, &h->probe_stop, &ev);
            pthread_mutex_lock(&h->mu);
            h->watching = 0;
            if (ev.fact != IK__HOLD_NO_ANSWER && g == h->grant && h->active) {
                h->probe_ev = ev; /* said unasked: the end, or a proof after all */
                h->probe_done = 1;
            }
            pthread_cond_broadcast(&h->cv);
            continue;
        }
        pthread_cond_wait(&h->pcv, &h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

int ik__hold_init(ik_lock *lk)
{
    ik__hold *h = &lk->hold;
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    ik__cond_init_mono(&h->cv);
    ik__cond_init_mono(&h->pcv);
    return IK_OK;
}

void ik__hold_quit(ik_lock *lk)
{
    ik__hold *h = &lk->hold;
    pthread_mutex_lock(&h->mu);
    h->quit = 1;
    __atomic_store_n(&h->probe_stop, 1, __ATOMIC_RELEASE);
    int on = h->threads;
    h->threads = 0;
    pthread_cond_broadcast(&h->cv);
    pthread_cond_broadcast(&h->pcv);
    pthread_mutex_unlock(&h->mu);
    if (on) {
        pthread_join(h->monitor, NULL);
        pthread_join(h->prober, NULL);
    }
}

void ik__hold_fini(ik_lock *lk)
{
    ik__hold *h = &lk->hold;
    pthread_cond_destroy(&h->pcv);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
}

/* The two threads, at the first grant of a lock with a probe: 0 or IK_ESYS(EAGAIN).
 * Under mu. */
static int start_threads(ik_lock *lk)
{
    ik__hold *h = &lk->hold;
    if (h->threads || !lk->ops->probe || h->quit) return h->quit ? IK_ECLOSED : IK_OK;
    if (pthread_create(&h->monitor, NULL, monitor_main, lk) != 0) return IK_ESYS(EAGAIN);
    if (pthread_create(&h->prober, NULL, prober_main, lk) != 0) {
        h->quit = 1;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->monitor, NULL);
        pthread_mutex_lock(&h->mu);
        h->quit = 0;
        return IK_ESYS(EAGAIN);
    }
    h->threads = 1;
    return IK_OK;
}

int ik__hold_begin(ik_lock *lk, const ik__hold_evidence *ev)
{
    const ik__lease_proof *proof = &ev->proof;
    ik__hold *h = &lk->hold;
    pthread_mutex_lock(&h->mu);
    int rc = start_threads(lk);
    if (rc == IK_OK) {
        h->grant++;
        h->active = 1;
        h->state = IK_HOLD_HELD;
        snprintf(h->why, sizeof h->why, "granted");
        h->proof = *proof;
        if (!lk->ops->probe) h->proof.term_ms = IK_FOREVER;
        h->doubt_ns = 0;
        h->told_gone = ev->fact == IK__HOLD_GONE; /* known gone before it was watched */
        h->told_doubt = h->told_poke = 0;
        snprintf(h->told_why, sizeof h->told_why, "%s", h->told_gone ? ev->why : "");
        h->doubt_why[0] = '\0';
        h->first_proof = lk->ops->probe != NULL;
        h->probe_done = 0;
        h->probe_asked = 0;
        h->next_probe_ns = h->proof.term_ms == IK_FOREVER
                               ? INT64_MAX
                               : h->proof.sent_mono_ns + h->proof.term_ms / 4 * INT64_C(1000000);
        pthread_cond_broadcast(&h->cv);
        pthread_cond_broadcast(&h->pcv);
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

ik_hold_state ik__hold_end(ik_lock *lk)
{
    ik__hold *h = &lk->hold;
    pthread_mutex_lock(&h->mu);
    ik_hold_state st = h->active ? h->state : IK_HOLD_IDLE;
    h->active = 0;
    h->grant++;
    h->probe_asked = 0;
    h->probe_done = 0;
    __atomic_store_n(&h->probe_stop, 1,
                     __ATOMIC_RELEASE); /* the probe in flight, if any, is of this grant */
    pthread_cond_broadcast(&h->pcv);
    while (h->cb_busy)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    return st;
}

ik_hold_state ik__hold_state(ik_lock *lk, char *why, size_t why_len)
{
    ik__hold *h = &lk->hold;
    pthread_mutex_lock(&h->mu);
    ik_hold_state st = h->active ? h->state : IK_HOLD_IDLE;
    const char *w = h->why;
    /* what the store said and the monitor has not taken yet counts already */
    if (st != IK_HOLD_IDLE && st != IK_HOLD_LOST && h->told_gone) {
        st = IK_HOLD_LOST;
        w = h->told_why;
    } else if (st == IK_HOLD_HELD && h->told_doubt) {
        st = IK_HOLD_IN_DOUBT;
        w = h->told_why;
    } else if (st != IK_HOLD_IDLE && st != IK_HOLD_LOST && ik__mono_ns() >= window_end(h)) {
        st = IK_HOLD_LOST; /* HM1, before the monitor has woken */
        w = "no proof of the grant for 2/3 of its term";
    }
    if (why && why_len) snprintf(why, why_len, "%s", w);
    pthread_mutex_unlock(&h->mu);
    return st;
}

int64_t ik__hold_trusted_until(ik_lock *lk)
{
    ik__hold *h = &lk->hold;
    pthread_mutex_lock(&h->mu);
    int on = h->active && h->state != IK_HOLD_LOST && !h->told_gone;
    int64_t until = on ? window_end(h) : 0;
    pthread_mutex_unlock(&h->mu);
    return ik__hold_public_ns(until);
}
