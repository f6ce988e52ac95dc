/* fake_clock.h: a controllable ik_clock for unit tests. Time moves only when a test
 * sets it, or when the generator sleeps (sleeping advances the fake clock by the
 * requested amount plus `sleep_extra_ns`, as a real sleep would). Thread-safe. */
#ifndef IK_FAKE_CLOCK_H
#define IK_FAKE_CLOCK_H

#include "idkeeper.h"

#include <stdatomic.h>

typedef struct fake_clock {
    ik_clock clock;
    _Atomic int64_t wall_ns;
    _Atomic int64_t mono_ns;
    _Atomic int64_t slept_ns; /* total requested sleep */
    _Atomic int64_t sleeps;   /* number of sleeps */
    int64_t sleep_extra_ns;
} fake_clock;

static int64_t fc_wall(void *c)
{
    return atomic_load(&((fake_clock *)c)->wall_ns);
}
static int64_t fc_mono(void *c)
{
    return atomic_load(&((fake_clock *)c)->mono_ns);
}
static void fc_sleep(void *c, int64_t ns)
{
    fake_clock *f = c;
    atomic_fetch_add(&f->slept_ns, ns);
    atomic_fetch_add(&f->sleeps, 1);
    atomic_fetch_add(&f->wall_ns, ns + f->sleep_extra_ns);
    atomic_fetch_add(&f->mono_ns, ns + f->sleep_extra_ns);
}

static inline void fake_clock_init(fake_clock *f, int64_t wall_ms)
{
    f->clock.wall_ns = fc_wall;
    f->clock.mono_ns = fc_mono;
    f->clock.sleep_ns = fc_sleep;
    f->clock.ctx = f;
    atomic_init(&f->wall_ns, wall_ms * 1000000);
    atomic_init(&f->mono_ns, INT64_C(1000000000000));
    atomic_init(&f->slept_ns, 0);
    atomic_init(&f->sleeps, 0);
    f->sleep_extra_ns = 0;
}

/* Steps the wall clock by delta_ms (negative: backwards); mono moves forward only. */
static inline void fake_clock_step(fake_clock *f, int64_t delta_ms)
{
    atomic_fetch_add(&f->wall_ns, delta_ms * 1000000);
    if (delta_ms > 0) atomic_fetch_add(&f->mono_ns, delta_ms * 1000000);
}

#endif
