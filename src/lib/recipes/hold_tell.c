/* hold_tell.c: how a lock protocol tells the hold monitor (hold.c) what its store
 * said unasked: our node or key deleted, the session expired (GONE), the connection
 * dropped (NO_ANSWER), connected again (STANDS: probe now); and the clock the public
 * trust window is told on. Below both the protocols and the dispatch (recipe.c,
 * hold.c), so that a protocol never calls up: it only sets the hold's flags and
 * wakes its threads, which decide (hold.h). */
#include "internal.h"
#include "recipe.h"

#include <time.h>

void ik__hold_tell(ik_lock *lk, ik__hold_fact fact, const char *why)
{
    ik__hold *h = &lk->hold;
    pthread_mutex_lock(&h->mu);
    if (h->active && h->state != IK_HOLD_LOST) {
        if (fact == IK__HOLD_GONE && !h->told_gone) {
            h->told_gone = 1;
            snprintf(h->told_why, sizeof h->told_why, "%s", why ? why : "");
        } else if (fact == IK__HOLD_NO_ANSWER && !h->told_gone) {
            h->told_doubt = 1;
            h->told_doubt_ns = ik__mono_ns();
            snprintf(h->told_why, sizeof h->told_why, "%s", why ? why : "");
        } else if (fact == IK__HOLD_STANDS) {
            h->told_poke = 1;
        }
        pthread_cond_broadcast(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
}

void ik__hold_poke(ik_lock *lk)
{
    ik__hold *h = &lk->hold;
    pthread_mutex_lock(&h->mu);
    h->tend_asked = 1;
    pthread_cond_broadcast(&h->pcv);
    pthread_mutex_unlock(&h->mu);
}

int64_t ik__hold_public_ns(int64_t mono_ns)
{
    if (mono_ns <= 0 || mono_ns == INT64_MAX) return mono_ns;
    /* CLOCK_MONOTONIC first: the offset read is then never too small, and the
     * answer never later than the instant meant */
    struct timespec m;
    clock_gettime(CLOCK_MONOTONIC, &m);
    int64_t mono = (int64_t)m.tv_sec * 1000000000 + m.tv_nsec;
    int64_t v = mono_ns - (ik__mono_ns() - mono);
    return v > 0 ? v : 1;
}
