/* lease.c: the worker-slot lease (docs/guarantees.md promises 6-13), generic over backends.
 *
 * A lease holds one slot and drives one generator. Its thread writes the slot's
 * time record every persist_interval/2 (start to start) as max(record, now + ahead), where ahead is
 * the persist interval or, if longer, the safe window of the backend's last answer
 * (L5), so that a lease in doubt can issue for its whole safe window, not only
 * until the record runs out; and, once the write is acknowledged, extends the
 * generator's grant: the ceiling to the new record, the deadline to the end of that
 * write's safe window.
 *
 * Invariants
 *   L1. The generator never issues a tick above ticks_at(record persisted in the
 *       store): the grant's ceiling only moves after an acknowledged write, to the
 *       record of that write (slot_persist says which: on a slow store, an earlier
 *       write than the one just asked for).
 *   L2. A slot's new holder issues only ticks above ticks_at(record it found), so
 *       with L1 no tick is issued twice under one worker number, whoever held it.
 *   L3. The generator issues only while the deadline clock (BOOTTIME) is before the
 *       deadline of the last acknowledged write; a lease in doubt therefore stops
 *       issuing by itself, without this thread having to run.
 *   L4. The record written at a clean release is never below the record found at
 *       acquisition, nor below the start of the last tick issued.
 *   L5. The safe window, for every backend alike (safe_until): a write the store
 *       acknowledged proves the slot ours for the lease's term (the TTL, or the
 *       ZooKeeper session timeout) from when it was sent; the lease issues for 2/3
 *       of the term from that send time, by its own BOOTTIME clock. The third left
 *       absorbs clock rates that differ by up to a third and the time a frozen
 *       holder needs to notice (docs/guarantees.md promise 10). A backend reports
 *       the send time and the term (ik__lease_proof), never a window.
 *
 * States and the functions that take each edge:
 *
 *   begin() (lease thread: first_acquire)
 *   ACQUIRING --slot_acquire ok--> HELD            (ik_slot_lease_wait_held: 0)
 *   ACQUIRING --slot_acquire: IK_ENOSLOT--> ACQUIRING, again every 500 ms until
 *             slot_wait_ms have passed, then the first acquisition fails (thread ends)
 *   HELD --persist: IK_EINDOUBT--> IN_DOUBT      (generator runs until its deadline)
 *   IN_DOUBT --persist ok--> HELD                 (same session: grant extended)
 *   HELD, IN_DOUBT --persist: IK_EUNSAFE--> IN_DOUBT, not issuing at once
 *             (suspend: the grant revoked, why names the store hazard)
 *   IN_DOUBT (suspended) --persist ok--> HELD     (resume: the same worker granted
 *             again, floor from the record found at acquisition, L2 and the
 *             generator's own order keeping every later ID above the earlier ones)
 *   HELD, IN_DOUBT --persist: IK_ELOST--> LOST     (revoke, slot_forget)
 *   IN_DOUBT --deadline passed--> stays IN_DOUBT, not issuing (reported in why)
 *   LOST --recover + slot_acquire--> ACQUIRING --> HELD   (reacquire(); new grant,
 *                                                      floor from the slot's record)
 *   any --ik_slot_lease_release()--> RELEASED     (revoke, slot_release)
 *
 * Fork (fork.c): a lease copied into a fork()'s child has no thread there, and its
 * slot is the parent's: every call on it refuses with IK_EFORKED (get_info says so)
 * without taking mu, which a thread the child does not have may have held at the
 * fork; release frees nothing and writes nothing (the parent still holds and
 * renews the slot). The child takes a slot of its own through a coord it opens.
 */
#include "backend.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ik_slot_lease {
    unsigned fork_gen; /* the process generation it was made in (fork.c) */
    ik__backend *be;
    ik_snowflake *g;
    char *app, *identity;
    ik_slot_choice choice;
    int64_t interval_ms;
    int64_t ahead_ms;      /* record written this far ahead of now (lease thread) */
    int64_t test_stall_ms; /* IDKEEPER_TEST_PERSIST_STALL_MS (tests only; 0: none) */
    void (*on_state)(void *ctx, ik_lease_state state, int worker, const char *why);
    void *ctx;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;

    /* guarded by mu */
    ik_lease_state state;
    int worker;
    void *handle;
    int64_t since_ms;
    int64_t found_record_ms; /* record found at acquisition (L4) */
    int64_t record_ms;       /* record last acknowledged */
    int64_t valid_until;     /* deadline of the last acknowledged write */
    int suspended;           /* a store hazard revoked the grant (lease thread only) */
    uint64_t acquisitions;
    char why[160];

    /* the first acquisition (ik_slot_lease_wait_held), guarded by mu */
    int64_t slot_wait_ms; /* how long a full range is waited on; resolved */
    int started;          /* 1 once the first acquisition is over */
    int start_rc;         /* its outcome */
    char start_why[512];  /* why it failed */
    char wait_why[512];   /* while it waits: for what, uncut (why above is 160) */
};

void ik_lease_options_init(ik_lease_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->app = "default";
    o->choice = IK_SLOT_RANDOM;
    o->persist_interval_ms = 1000;
    o->slot_wait_ms = IK_SLOT_WAIT_DEFAULT;
}

const char *ik_lease_state_name(ik_lease_state s)
{
    switch (s) {
    case IK_LEASE_ACQUIRING:
        return "acquiring";
    case IK_LEASE_HELD:
        return "held";
    case IK_LEASE_IN_DOUBT:
        return "in_doubt";
    case IK_LEASE_LOST:
        return "lost";
    case IK_LEASE_RELEASED:
        return "released";
    }
    return "unknown";
}

static uint64_t floor_tick_of(const ik_snowflake *g, int64_t record_ms)
{
    if (record_ms <= 0) return 0;
    int64_t t = ik_layout_ticks_at(ik_snowflake_layout(g), record_ms);
    return t < 0 ? 0 : (uint64_t)t;
}

/* Changes state under mu and tells the callback (outside mu). */
static void set_state(ik_slot_lease *l, ik_lease_state s, const char *why)
{
    pthread_mutex_lock(&l->mu);
    int changed = l->state != s;
    l->state = s;
    snprintf(l->why, sizeof l->why, "%s", why ? why : "");
    int worker = l->worker;
    pthread_mutex_unlock(&l->mu);
    if (changed && l->on_state) l->on_state(l->ctx, s, worker, why ? why : "");
}

/* L5: until when (mono ns) the write p describes lets the lease issue: 2/3 of the
 * lease's term after its send time; IK_FOREVER for a term without end. */
static int64_t safe_until(const ik__lease_proof *p)
{
    return ik__proof_until_ns(p);
}

/* How far ahead of now to write the record: the persist interval, or the safe
 * window (L5) of the write p describes, if longer. A new holder takes the slot only
 * after the session or TTL expired (longer than that window), so the record ahead
 * costs it no wait; at a clean release the record comes down again. */
static int64_t ahead_of(const ik_slot_lease *l, const ik__lease_proof *p)
{
    int64_t until = safe_until(p);
    if (until == IK_FOREVER || until <= p->sent_mono_ns) return l->interval_ms;
    int64_t w = (until - p->sent_mono_ns) / 1000000;
    return w > l->interval_ms ? w : l->interval_ms;
}

/* Takes a slot and grants it to the generator. 0, or the backend's error. */
static int acquire(ik_slot_lease *l, char *why, size_t why_len)
{
    ik__slot_request req = {
        .app = l->app,
        .identity = l->identity,
        .worker_min = ik_snowflake_layout(l->g)->worker_min,
        .worker_max = ik_snowflake_layout(l->g)->worker_max,
        .choice = l->choice,
        .new_record_ms = ik__wall_ms() + l->interval_ms,
    };
    ik__slot_grant gr;
    memset(&gr, 0, sizeof gr);
    int rc = l->be->ops->slot_acquire(l->be, &req, &gr, why, why_len);
    if (rc) return rc;
    int64_t until = safe_until(&gr.proof);
    rc = ik_snowflake_grant(l->g, gr.worker, floor_tick_of(l->g, gr.old_record_ms),
                            floor_tick_of(l->g, gr.record_ms), until);
    if (rc) {
        l->be->ops->slot_release(l->be, gr.handle, gr.record_ms);
        return ik__fail(rc, why, why_len, "slot %u is outside the layout's worker range",
                        gr.worker);
    }
    pthread_mutex_lock(&l->mu);
    l->worker = (int)gr.worker;
    l->handle = gr.handle;
    l->since_ms = gr.since_ms;
    l->found_record_ms = gr.old_record_ms;
    l->record_ms = gr.record_ms;
    l->valid_until = until;
    l->ahead_ms = ahead_of(l, &gr.proof);
    l->acquisitions++;
    pthread_mutex_unlock(&l->mu);
    return IK_OK;
}

/* Waits up to ms on the lease's condition; returns 1 if asked to stop. */
static int nap(ik_slot_lease *l, int64_t ms)
{
    struct timespec ts;
    ik__deadline_ts(&ts, ms);
    pthread_mutex_lock(&l->mu);
    while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &ts) != ETIMEDOUT) {
    }
    int stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

/* LOST -> ACQUIRING -> HELD: a new session if the backend needs one, then a slot.
 * Retries until it holds one or is asked to stop. */
static void reacquire(ik_slot_lease *l)
{
    char why[256];
    int64_t backoff = 100;
    set_state(l, IK_LEASE_ACQUIRING, "taking a slot again");
    for (;;) {
        int rc = l->be->ops->recover ? l->be->ops->recover(l->be, why, sizeof why) : 0;
        if (rc == 0) rc = acquire(l, why, sizeof why);
        if (rc == 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "took slot %d again", l->worker);
            set_state(l, IK_LEASE_HELD, msg);
            return;
        }
        pthread_mutex_lock(&l->mu);
        snprintf(l->why, sizeof l->why, "taking a slot again: %s", why);
        pthread_mutex_unlock(&l->mu);
        if (nap(l, backoff)) return;
        if (backoff < 1000) backoff *= 2;
    }
}

/* The first slot (docs/guarantees.md promise 9): while the range is full, tries again every
 * 500 ms for slot_wait_ms, ACQUIRING meanwhile with why saying so; once it waits,
 * a store that does not answer is waited on too, and a session that ends during
 * the wait is replaced (recover, as reacquire does) and the wait goes on. 0 once
 * held, else the last error with why (IK_ECLOSED if asked to stop). */
static int first_acquire(ik_slot_lease *l, char *why, size_t why_len)
{
    int64_t start = ik__mono_ns();
    int waited = 0, lost = 0;
    for (;;) {
        why[0] = '\0';
        int rc = lost && l->be->ops->recover ? l->be->ops->recover(l->be, why, why_len) : 0;
        if (rc == 0) {
            lost = 0;
            rc = acquire(l, why, why_len);
        }
        if (rc == 0) return 0;
        if (rc == IK_ELOST) lost = 1;
        int again = rc == IK_ENOSLOT || (waited && (rc == IK_ESTORE || rc == IK_EINDOUBT || lost));
        int64_t spent = (ik__mono_ns() - start) / 1000000;
        int64_t left = l->slot_wait_ms - spent;
        if (!again || left <= 0) {
            if (waited) {
                char inner[512];
                snprintf(inner, sizeof inner, "%s", why);
                ik__fail(rc, why, why_len, "none freed in %lld ms: %s", (long long)spent, inner);
            }
            return rc;
        }
        waited = 1;
        pthread_mutex_lock(&l->mu);
        snprintf(l->why, sizeof l->why, "waiting %lld ms more for a free slot: %s", (long long)left,
                 why);
        snprintf(l->wait_why, sizeof l->wait_why, "waiting %lld ms more for a free slot: %s",
                 (long long)left, why);
        pthread_mutex_unlock(&l->mu);
        if (nap(l, left < 500 ? left : 500)) return ik__fail(IK_ECLOSED, why, why_len, "stopped");
    }
}

/* Ends the first acquisition: records its outcome and wakes
 * ik_slot_lease_wait_held. */
static void first_done(ik_slot_lease *l, int rc, const char *why)
{
    if (rc == 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "took slot %d", l->worker);
        set_state(l, IK_LEASE_HELD, msg);
    }
    pthread_mutex_lock(&l->mu);
    l->started = 1;
    l->start_rc = rc;
    snprintf(l->start_why, sizeof l->start_why, "%s", rc ? why : "");
    if (rc) snprintf(l->why, sizeof l->why, "%s", why);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* HELD, IN_DOUBT --persist: IK_EUNSAFE--> IN_DOUBT, not issuing: a store hazard is
 * refused (docs/hazards.md), so the store may lose this slot's key or time record
 * at any moment; the generator stops now rather than at the end of its window. */
static void suspend(ik_slot_lease *l)
{
    char hz[300] = "", msg[160];
    if (ik__hazards_refused(&l->be->hz, hz, sizeof hz) == 0)
        snprintf(hz, sizeof hz, "a store hazard (docs/hazards.md)");
    ik_snowflake_revoke(l->g);
    l->suspended = 1;
    pthread_mutex_lock(&l->mu);
    l->valid_until = 0;
    pthread_mutex_unlock(&l->mu);
    snprintf(msg, sizeof msg, "store unsafe: %s", hz);
    set_state(l, IK_LEASE_IN_DOUBT, msg);
}

/* IN_DOUBT (suspended) --persist ok--> HELD: the hazard cleared and the slot is
 * still ours; the same worker is granted again (the generator's last tick keeps
 * every new ID above those issued before the suspension). */
static void resume(ik_slot_lease *l, int64_t written, int64_t until)
{
    pthread_mutex_lock(&l->mu);
    int worker = l->worker;
    int64_t found = l->found_record_ms;
    pthread_mutex_unlock(&l->mu);
    if (ik_snowflake_grant(l->g, (uint32_t)worker, floor_tick_of(l->g, found),
                           floor_tick_of(l->g, written), until) == 0)
        l->suspended = 0;
}

static void *lease_thread(void *arg)
{
    ik_slot_lease *l = arg;
    char why[512];
    int frc = first_acquire(l, why, sizeof why);
    first_done(l, frc, why[0] ? why : ik_strerror(frc));
    if (frc) return NULL;
    int64_t took_ms = 0; /* how long the last persist took */
    for (;;) {
        /* One persist every interval/2, start to start: a store that answers
         * slowly gets the next write as soon as the last one is answered. */
        int64_t pause = l->interval_ms / 2 - took_ms;
        if (nap(l, pause > 0 ? pause : 0)) break;
        /* test-only: hold every persist back, so that the clock passes the ceiling
         * (docs/snowflake.md, "Test hooks") */
        if (l->test_stall_ms > 0 && nap(l, l->test_stall_ms)) break;

        pthread_mutex_lock(&l->mu);
        void *h = l->handle;
        int64_t rec = l->record_ms;
        pthread_mutex_unlock(&l->mu);
        int64_t want = ik__wall_ms() + l->ahead_ms;
        if (want > rec) rec = want;

        ik__lease_proof proof = {0, 0};
        int64_t written = 0, sent = ik__mono_ns();
        int rc = l->be->ops->slot_persist(l->be, h, rec, &proof, &written);
        took_ms = (ik__mono_ns() - sent) / 1000000;
        if (rc == 0) {
            int64_t until = safe_until(&proof);
            /* written may be an earlier write's record, answered late (L1: the
             * ceiling is what the store acknowledged, not what we asked for) */
            if (written == rec) l->ahead_ms = ahead_of(l, &proof);
            pthread_mutex_lock(&l->mu);
            if (written > l->record_ms) l->record_ms = written;
            if (until > l->valid_until) l->valid_until = until;
            ik_lease_state was = l->state;
            pthread_mutex_unlock(&l->mu);
            if (l->suspended)
                resume(l, written, until);
            else
                ik_snowflake_extend(l->g, floor_tick_of(l->g, written), until);
            if (was != IK_LEASE_HELD) set_state(l, IK_LEASE_HELD, "store answers again");
        } else if (rc == IK_ECLOSED) {
            /* a stop has begun: the release settles this write (backend.h) */
        } else if (rc == IK_EUNSAFE) {
            suspend(l);
        } else if (rc == IK_ELOST) {
            ik_snowflake_revoke(l->g);
            l->suspended = 0;
            set_state(l, IK_LEASE_LOST, "slot lost: session expired or slot taken over");
            pthread_mutex_lock(&l->mu);
            l->handle = NULL;
            l->worker = -1;
            pthread_mutex_unlock(&l->mu);
            if (l->be->ops->slot_forget)
                l->be->ops->slot_forget(l->be, h);
            else
                l->be->ops->slot_release(l->be, h, rec);
            reacquire(l);
        } else {
            pthread_mutex_lock(&l->mu);
            int lapsed = ik__mono_ns() >= l->valid_until;
            pthread_mutex_unlock(&l->mu);
            /* a store that answered, and refused, is named in its own words */
            char words[300] = "", doubt[400];
            if (l->be->ops->last_error) l->be->ops->last_error(l->be, words, sizeof words);
            snprintf(doubt, sizeof doubt, "%s%s%s%s",
                     words[0] ? "the store did not take the record (" : "store unreachable", words,
                     words[0] ? ")" : "",
                     lapsed ? " past the safe window: not issuing"
                            : ": issuing within the safe window");
            set_state(l, IK_LEASE_IN_DOUBT, doubt);
        }
    }
    return NULL;
}

int ik_slot_lease_begin(ik_coord *c, ik_snowflake *g, const ik_lease_options *o,
                        ik_slot_lease **out, char *why, size_t why_len)
{
    if (!c || !g || !out) return IK_EINVAL;
    if (ik__coord_forked(c))
        return ik__fail(IK_EFORKED, why, why_len, "%s", ik_strerror(IK_EFORKED));
    ik_lease_options opts; /* the caller's, as far as its size goes; defaults beyond */
    ik_lease_options_init(&opts);
    if (o) {
        int rc = ik__options_copy(&opts, sizeof opts, o, "ik_lease_options", why, why_len);
        if (rc) return rc;
    }
    o = &opts;
    const char *app = o->app ? o->app : "default";
    if (ik__app_name_check(app, why, why_len) != 0) return IK_EINVAL;
    if (!o->identity || !*o->identity || strlen(o->identity) > 200)
        return ik__fail(IK_EINVAL, why, why_len, "identity must be 1-200 bytes");
    for (const char *p = o->identity; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return ik__fail(IK_EINVAL, why, why_len, "identity has a control character");
    if (o->persist_interval_ms < 20 || o->persist_interval_ms > 60000)
        return ik__fail(IK_EINVAL, why, why_len, "persist interval must be 20 to 60000 ms");
    if (o->slot_wait_ms > IK_SLOT_WAIT_MAX)
        return ik__fail(IK_EINVAL, why, why_len, "slot wait must be at most %lld ms",
                        (long long)IK_SLOT_WAIT_MAX);

    ik_slot_lease *l = calloc(1, sizeof *l);
    if (!l) return IK_ENOMEM;
    l->fork_gen = ik__fork_gen();
    l->be = ik__coord_backend(c);
    l->g = g;
    l->app = strdup(app);
    l->identity = strdup(o->identity);
    l->choice = o->choice;
    l->interval_ms = o->persist_interval_ms;
    const char *stall = getenv("IDKEEPER_TEST_PERSIST_STALL_MS");
    l->test_stall_ms = stall ? strtoll(stall, NULL, 10) : 0;
    l->on_state = o->on_state;
    l->ctx = o->ctx;
    l->worker = -1;
    l->state = IK_LEASE_ACQUIRING;
    snprintf(l->why, sizeof l->why, "taking a slot");
    l->slot_wait_ms = o->slot_wait_ms;
    if (l->slot_wait_ms < 0) { /* the backend's: the time a dead holder's slot takes
                                  to free, plus 2 s; 0 where it frees at once */
        int64_t f = l->be->ops->slot_free_ms ? l->be->ops->slot_free_ms(l->be) : 0;
        l->slot_wait_ms = f > 0 ? f + 2000 : 0;
    }
    pthread_mutex_init(&l->mu, NULL);
    ik__cond_init_mono(&l->cv);
    int rc = (!l->app || !l->identity) ? IK_ENOMEM : IK_OK;
    if (rc == IK_OK && pthread_create(&l->thread, NULL, lease_thread, l)) rc = IK_ESYS(EAGAIN);
    if (rc) {
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
        free(l->app);
        free(l->identity);
        free(l);
        return rc;
    }
    *out = l;
    return IK_OK;
}

int ik_slot_lease_wait_held(ik_slot_lease *l, int64_t timeout_ms, char *why, size_t why_len)
{
    if (!l) return IK_EINVAL;
    if (ik__forked(l->fork_gen))
        return ik__fail(IK_EFORKED, why, why_len, "%s", ik_strerror(IK_EFORKED));
    struct timespec ts;
    if (timeout_ms >= 0) ik__deadline_ts(&ts, timeout_ms);
    pthread_mutex_lock(&l->mu);
    while (!l->started) {
        if (timeout_ms < 0)
            pthread_cond_wait(&l->cv, &l->mu);
        else if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT)
            break;
    }
    int rc = l->started ? l->start_rc : IK_ETIMEDOUT;
    if (rc && why && why_len) snprintf(why, why_len, "%s", l->started ? l->start_why : l->wait_why);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int ik_slot_lease_start(ik_coord *c, ik_snowflake *g, const ik_lease_options *o,
                        ik_slot_lease **out, char *why, size_t why_len)
{
    ik_slot_lease *l = NULL;
    if (!out) return IK_EINVAL;
    int rc = ik_slot_lease_begin(c, g, o, &l, why, why_len);
    if (rc) return rc;
    rc = ik_slot_lease_wait_held(l, -1, why, why_len);
    if (rc) {
        ik_slot_lease_release(l);
        return rc;
    }
    *out = l;
    return IK_OK;
}

void ik_slot_lease_get_info(ik_slot_lease *l, ik_lease_info *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->worker = -1;
    if (!l) return;
    if (ik__forked(l->fork_gen)) {
        o->state = IK_LEASE_LOST;
        snprintf(o->why, sizeof o->why, "%s", ik_strerror(IK_EFORKED));
        return;
    }
    pthread_mutex_lock(&l->mu);
    o->state = l->state;
    o->worker = l->worker;
    o->since_ms = l->since_ms;
    o->record_ms = l->record_ms;
    o->acquisitions = l->acquisitions;
    if (l->state != IK_LEASE_HELD && l->state != IK_LEASE_IN_DOUBT)
        o->valid_for_ms = 0;
    else if (l->valid_until == IK_FOREVER)
        o->valid_for_ms = -1;
    else {
        int64_t left = (l->valid_until - ik__mono_ns()) / 1000000;
        o->valid_for_ms = left > 0 ? left : 0;
    }
    snprintf(o->why, sizeof o->why, "%s", l->why);
    pthread_mutex_unlock(&l->mu);
    if (l->be->ops->session) l->be->ops->session(l->be, o->session, sizeof o->session);
}

int ik_slot_lease_release(ik_slot_lease *l)
{
    if (!l) return IK_OK;
    if (ik__forked(l->fork_gen)) { /* the parent's slot and thread: only our copy goes */
        free(l->app);
        free(l->identity);
        free(l);
        return IK_EFORKED;
    }
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);

    /* From here nothing is issued under the slot (the revoke pairs with the
     * generator's seq_cst claim), so the record may come down to the last tick
     * really issued (L4). */
    ik_snowflake_revoke(l->g);
    int rc = IK_OK;
    if (l->handle) {
        ik_snowflake_info si;
        ik_snowflake_get_info(l->g, &si);
        const ik_layout *lay = ik_snowflake_layout(l->g);
        int64_t rec = si.last_tick ? lay->epoch_ms + (int64_t)si.last_tick * lay->unit_ms : 0;
        if (rec < l->found_record_ms) rec = l->found_record_ms;
        if (rec > l->record_ms) rec = l->record_ms; /* never above what L1 allowed */
        rc = l->be->ops->slot_release(l->be, l->handle, rec);
        l->handle = NULL;
    }
    /* the line says what became of the slot, as the release answered (backend.h) */
    set_state(l, IK_LEASE_RELEASED,
              rc == IK_OK         ? "released"
              : rc == IK_EINDOUBT ? "release in doubt: the store did not confirm it"
              : rc == IK_ELOST    ? "lost before its release"
                                  : "release not sent");
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l->app);
    free(l->identity);
    free(l);
    return rc;
}
