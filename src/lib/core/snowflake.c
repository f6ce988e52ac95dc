/* snowflake.c: the snowflake generator: lock-free, strictly increasing, fenced.
 *
 * State. `last` packs the last issued (tick, sequence) as tick << seq_bits | seq:
 * exactly the ID without its worker bits. Every issue is one compare-and-swap that
 * moves `last` forward over a run of sequence numbers, so two threads can never
 * claim the same (tick, sequence), and IDs of one generator strictly increase.
 *
 * The grant says under which worker number, and in which time window, the
 * generator may issue: ticks t with floor < t <= ceiling, while the clock's mono_ns
 * (CLOCK_BOOTTIME: it counts a suspend) is before valid_until. `grant_word` packs
 * (granted bit, generation, worker); every grant or revoke changes the generation.
 *
 * Invariants
 *   I1. `last` never decreases.
 *   I2. An ID is returned only if, after its run was claimed, the grant word was
 *       still the one read before the claim and the deadline clock was before
 *       valid_until. (A claim that fails this check is burned, never returned.)
 *   I3. Every issued tick t satisfies floor < t <= ceiling of the grant it was
 *       issued under.
 *   I4. A new grant seals the current tick (sets its sequence to the maximum), so
 *       the first ID under the new grant has a later tick than every ID before it:
 *       IDs keep increasing across a change of worker number.
 *
 * Fork. A generator copied into a fork()'s child issues nothing there (fork.c, FK1):
 * the parent goes on issuing from the same state, under the same grant. Each issue
 * checks the process's fork generation once, before its first claim.
 *
 * Clock. `last` is loaded before the clock is read, so a clock reading below the
 * last tick means the clock really went back (the tick was issued by a thread that
 * read a clock at least that high before we loaded it).
 */
#include "internal.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GRANTED (UINT64_C(1) << 63)
#define CEILING_WAIT_NS (50 * 1000000LL) /* how long to wait for a record to be persisted */

struct ik_snowflake {
    ik_layout layout;
    unsigned fork_gen; /* the process generation it was made in (fork.c) */
    const ik_clock *clock;
    int system_clock;
    int64_t max_backward_ms;
    unsigned seq_bits;
    uint64_t seq_mask;
    uint64_t max_tick;

    pthread_mutex_t grant_mu; /* serialises grant, extend, revoke */
    _Atomic uint64_t grant_word;
    _Atomic uint64_t floor_tick;
    _Atomic uint64_t ceiling_tick;
    _Atomic int64_t valid_until;

    alignas(64) _Atomic uint64_t last;

    alignas(64) _Atomic uint64_t issued;
    _Atomic uint64_t tick_waits;
    _Atomic uint64_t backward_waits;
    _Atomic uint64_t backward_refusals;
    _Atomic int64_t last_backward_ms;
};

/* The reading for the lease check: the clock's mono_ns, CLOCK_BOOTTIME for the
 * system clock. Not CLOCK_MONOTONIC(_COARSE): it stops while the host is suspended,
 * and a grant whose ZooKeeper session expired during a suspend would look valid on
 * resume. (Linux has no coarse BOOTTIME; the precise one is a vDSO call.) */
static int64_t lease_now(const ik_snowflake *g)
{
    return g->clock->mono_ns(g->clock->ctx);
}

/* First sequence of a fresh tick: 0, or random below the layout's bound. */
static uint64_t seq_start(const ik_snowflake *g)
{
    if (!g->layout.seq_random_bound) return 0;
    static _Thread_local uint64_t x;
    if (!x) x = (uint64_t)(uintptr_t)&x ^ (uint64_t)ik__mono_ns() ^ 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % g->layout.seq_random_bound;
}

int ik_snowflake_create(const ik_layout *layout, int64_t max_backward_ms, const ik_clock *clock,
                        ik_snowflake **out)
{
    if (!layout || !out || max_backward_ms < 0) return IK_EINVAL;
    if (layout->time_bits + layout->worker_bits + layout->seq_bits > 63 || layout->seq_bits < 1 ||
        layout->seq_bits > 30 || layout->unit_ms <= 0)
        return IK_ELAYOUT;
    ik_snowflake *g;
    if (posix_memalign((void **)&g, 64, sizeof *g)) return IK_ENOMEM;
    memset(g, 0, sizeof *g);
    g->layout = *layout;
    g->fork_gen = ik__fork_gen();
    g->clock = clock ? clock : ik_clock_system();
    g->system_clock = g->clock == ik_clock_system();
    g->max_backward_ms = max_backward_ms;
    g->seq_bits = layout->seq_bits;
    g->seq_mask = (UINT64_C(1) << layout->seq_bits) - 1;
    g->max_tick = (UINT64_C(1) << layout->time_bits) - 1;
    pthread_mutex_init(&g->grant_mu, NULL);
    atomic_init(&g->grant_word, 0);
    atomic_init(&g->floor_tick, 0);
    atomic_init(&g->ceiling_tick, 0);
    atomic_init(&g->valid_until, 0);
    atomic_init(&g->last, 0);
    *out = g;
    return IK_OK;
}

void ik_snowflake_destroy(ik_snowflake *g)
{
    if (!g) return;
    pthread_mutex_destroy(&g->grant_mu);
    free(g);
}

const ik_layout *ik_snowflake_layout(const ik_snowflake *g)
{
    return g ? &g->layout : NULL;
}

/* The issuing loop of next_n and try_next_n: issues ids[st->done..n-1], never
 * sleeping. IK_OK when all are issued; IK_AGAIN where it would have to wait (the
 * tick's sequence used up, the clock a little behind, the ceiling not yet extended
 * and st->ceiling_since_ns less than CEILING_WAIT_NS ago), with st->wait_ns set; an
 * error otherwise. */
static int issue(ik_snowflake *g, size_t n, int64_t *ids, ik_snowflake_try *st)
{
    const ik_layout *l = &g->layout;
    const int64_t unit_ns = l->unit_ms * 1000000;
    const int64_t epoch_ns = l->epoch_ms * 1000000;
    st->wait_ns = 0;
    if (ik__forked(g->fork_gen)) return IK_EFORKED;

    while (st->done < n) {
        uint64_t gw = atomic_load_explicit(&g->grant_word, memory_order_acquire);
        if (!(gw & GRANTED)) return IK_ENOLEASE;
        uint64_t last = atomic_load_explicit(&g->last, memory_order_acquire);
        int64_t wall = g->clock->wall_ns(g->clock->ctx);
        if (wall < epoch_ns) return IK_ECLOCKBACK;
        uint64_t now = (uint64_t)((wall - epoch_ns) / unit_ns);
        if (now > g->max_tick) return IK_ERANGE;

        if (now <= atomic_load_explicit(&g->floor_tick, memory_order_acquire)) return IK_ETIMEGUARD;
        if (now > atomic_load_explicit(&g->ceiling_tick, memory_order_acquire)) {
            /* the time record covering `now` is not persisted yet: wait for the lease
             * to extend it, unless the lease has lapsed anyway (then refuse at once) */
            int64_t until = atomic_load_explicit(&g->valid_until, memory_order_acquire);
            int64_t t = lease_now(g);
            if (until != IK_FOREVER && t >= until) return IK_ENOLEASE;
            if (!st->ceiling_since_ns) st->ceiling_since_ns = t;
            if (t - st->ceiling_since_ns >= CEILING_WAIT_NS) return IK_ENOLEASE;
            st->wait_ns = 1000000;
            return IK_AGAIN;
        }

        uint64_t lt = last >> g->seq_bits, ls = last & g->seq_mask, tick, first;
        if (now > lt || last == 0) {
            tick = now;
            first = seq_start(g);
        } else if (now == lt) {
            if (ls == g->seq_mask) { /* this tick is used up: wait for the next */
                atomic_fetch_add_explicit(&g->tick_waits, 1, memory_order_relaxed);
                st->wait_ns = epoch_ns + (int64_t)(lt + 1) * unit_ns - wall;
                return IK_AGAIN;
            }
            tick = lt;
            first = ls + 1;
        } else {
            /* The clock is behind a tick already issued. */
            int64_t behind_ns = epoch_ns + (int64_t)lt * unit_ns - wall;
            int64_t behind_ms = (behind_ns + 999999) / 1000000;
            atomic_store_explicit(&g->last_backward_ms, behind_ms, memory_order_relaxed);
            if (behind_ms > g->max_backward_ms) {
                atomic_fetch_add_explicit(&g->backward_refusals, 1, memory_order_relaxed);
                return IK_ECLOCKBACK;
            }
            atomic_fetch_add_explicit(&g->backward_waits, 1, memory_order_relaxed);
            st->wait_ns = behind_ns;
            return IK_AGAIN;
        }

        uint64_t room = g->seq_mask - first + 1;
        uint64_t take = (uint64_t)(n - st->done) < room ? (uint64_t)(n - st->done) : room;
        uint64_t next = (tick << g->seq_bits) | (first + take - 1);
        /* seq_cst on the claim and on the grant re-check, pairing with revoke(): a
         * revoker that reads `last` after withdrawing sees every claim that passed
         * its re-check (no store-buffer reordering between the two). */
        if (!atomic_compare_exchange_weak_explicit(&g->last, &last, next, memory_order_seq_cst,
                                                   memory_order_relaxed))
            continue;

        /* I2: the run is ours; return it only if the grant still stands. */
        if (atomic_load_explicit(&g->grant_word, memory_order_seq_cst) != gw) return IK_ENOLEASE;
        int64_t until = atomic_load_explicit(&g->valid_until, memory_order_acquire);
        if (until != IK_FOREVER && lease_now(g) >= until) return IK_ENOLEASE;

        uint64_t hi =
            (tick << (l->worker_bits + g->seq_bits)) | ((gw & 0xffffffffu) << g->seq_bits);
        for (uint64_t i = 0; i < take; i++)
            ids[st->done + i] = (int64_t)(hi | (first + i));
        st->done += take;
    }
    atomic_fetch_add_explicit(&g->issued, n, memory_order_relaxed);
    return IK_OK;
}

int ik_snowflake_next_n(ik_snowflake *g, size_t n, int64_t *ids)
{
    if (!g || !ids || n == 0) return IK_EINVAL;
    ik_snowflake_try st = {0, 0, 0};
    int rc;
    while ((rc = issue(g, n, ids, &st)) == IK_AGAIN)
        g->clock->sleep_ns(g->clock->ctx, st.wait_ns);
    return rc;
}

int ik_snowflake_try_next_n(ik_snowflake *g, size_t n, int64_t *ids, ik_snowflake_try *st)
{
    if (!g || !ids || !st || n == 0 || st->done > n) return IK_EINVAL;
    return issue(g, n, ids, st);
}

int ik_snowflake_next(ik_snowflake *g, int64_t *id)
{
    return ik_snowflake_next_n(g, 1, id);
}

int ik_snowflake_grant(ik_snowflake *g, uint32_t worker, uint64_t floor_tick, uint64_t ceiling_tick,
                       int64_t valid_until_mono_ns)
{
    if (!g) return IK_EINVAL;
    if (ik__forked(g->fork_gen)) return IK_EFORKED;
    if (worker < g->layout.worker_min || worker > g->layout.worker_max) return IK_ERANGE;
    pthread_mutex_lock(&g->grant_mu);
    uint64_t gen = ((atomic_load(&g->grant_word) >> 32) + 1) & 0x7fffffffu;
    /* withdraw first, so a claim racing with us fails its check (I2) */
    atomic_store_explicit(&g->grant_word, gen << 32, memory_order_release);
    atomic_store_explicit(&g->floor_tick, floor_tick, memory_order_release);
    atomic_store_explicit(&g->ceiling_tick, ceiling_tick, memory_order_release);
    atomic_store_explicit(&g->valid_until, valid_until_mono_ns, memory_order_release);
    /* I4: seal the current tick */
    uint64_t last = atomic_load(&g->last);
    while (last != 0 && !atomic_compare_exchange_weak(&g->last, &last, last | g->seq_mask)) {
    }
    atomic_store_explicit(&g->grant_word, GRANTED | (gen << 32) | worker, memory_order_release);
    pthread_mutex_unlock(&g->grant_mu);
    return IK_OK;
}

int ik_snowflake_extend(ik_snowflake *g, uint64_t ceiling_tick, int64_t valid_until_mono_ns)
{
    if (!g) return IK_EINVAL;
    if (ik__forked(g->fork_gen)) return IK_EFORKED;
    int rc = IK_OK;
    pthread_mutex_lock(&g->grant_mu);
    if (!(atomic_load(&g->grant_word) & GRANTED)) {
        rc = IK_ENOLEASE;
    } else {
        if (ceiling_tick > atomic_load(&g->ceiling_tick))
            atomic_store_explicit(&g->ceiling_tick, ceiling_tick, memory_order_release);
        if (valid_until_mono_ns > atomic_load(&g->valid_until))
            atomic_store_explicit(&g->valid_until, valid_until_mono_ns, memory_order_release);
    }
    pthread_mutex_unlock(&g->grant_mu);
    return rc;
}

void ik_snowflake_revoke(ik_snowflake *g)
{
    /* in a fork's child the copy issues nothing anyway, and grant_mu may be held
     * by a thread the child does not have */
    if (!g || ik__forked(g->fork_gen)) return;
    pthread_mutex_lock(&g->grant_mu);
    uint64_t gen = ((atomic_load(&g->grant_word) >> 32) + 1) & 0x7fffffffu;
    atomic_store_explicit(&g->grant_word, gen << 32, memory_order_seq_cst);
    atomic_store_explicit(&g->valid_until, 0, memory_order_seq_cst);
    pthread_mutex_unlock(&g->grant_mu);
}

void ik_snowflake_get_info(const ik_snowflake *g, ik_snowflake_info *o)
{
    ik_snowflake *m = (ik_snowflake *)g; /* atomics are read-only here */
    if (!o) return;
    memset(o, 0, sizeof *o);
    if (!g) return;
    uint64_t gw = atomic_load(&m->grant_word);
    o->granted = (gw & GRANTED) != 0;
    o->worker = (uint32_t)(gw & 0xffffffffu);
    o->floor_tick = atomic_load(&m->floor_tick);
    o->ceiling_tick = atomic_load(&m->ceiling_tick);
    o->valid_until_mono_ns = atomic_load(&m->valid_until);
    o->last_tick = atomic_load(&m->last) >> g->seq_bits;
    o->issued = atomic_load(&m->issued);
    o->tick_waits = atomic_load(&m->tick_waits);
    o->backward_waits = atomic_load(&m->backward_waits);
    o->backward_refusals = atomic_load(&m->backward_refusals);
    o->last_backward_ms = atomic_load(&m->last_backward_ms);
}
