/* ready.c: whether this server can issue a snowflake ID now, and the words for why
 * not. /readyz, /v1/status, the status page and the READY=1 sent to a service
 * manager (server.c) all ask ik__not_ready; the generator's refusal of a layout
 * whose time field ran out (issue.c) uses the same words (ik__layout_end_why).
 *
 * Reads the lease's and the generator's state (thread-safe library calls) and the
 * clocks; changes nothing. Any thread.
 */
#include "ready.h"
#include "log.h"
#include "../lib/rules.h" /* ik__fmt_iso8601 */

#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t ik__boot_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ik__layout_end_why(const ik__server *srv, char *why, size_t len)
{
    char end[40];
    ik__fmt_iso8601(end, ik_layout_end_ms(srv->layout));
    snprintf(why, len,
             "the layout's time field ran out on %s: no snowflake ID can be issued under "
             "this layout any more (start the fleet on a layout with a later end; "
             "idkeeper decode --expiry prints it)",
             end);
}

void ik__lease_info(ik__server *srv, ik_lease_info *li)
{
    pthread_mutex_lock(&srv->lease_mu);
    if (srv->lease) {
        ik_slot_lease_get_info(srv->lease, li);
    } else {
        memset(li, 0, sizeof *li);
        li->state = IK_LEASE_RELEASED;
        li->worker = -1;
    }
    pthread_mutex_unlock(&srv->lease_mu);
}

/* Why no snowflake ID can be issued now, into why; 0 if one can. Lease held (or in
 * doubt within its safe window), a live grant, the clock past the slot's time
 * record found at acquisition (the floor) and not past the record persisted since
 * (the ceiling), and not behind the last issued ID by more than max_backward. */
int ik__not_ready(ik__server *srv, char *why, size_t len)
{
    ik_lease_info li;
    ik_snowflake_info gi;
    ik__lease_info(srv, &li);
    ik_snowflake_get_info(srv->gen, &gi);
    const ik_layout *l = srv->layout;
    if (li.state == IK_LEASE_IN_DOUBT && li.valid_for_ms == 0) {
        /* The lease's line was written when the doubt began, maybe within the window,
         * and changes only at its next attempt: the words follow the state now. */
        static const char within[] = ": issuing within the safe window";
        size_t n = strlen(li.why), k = sizeof within - 1;
        if (n >= k && !strcmp(li.why + n - k, within))
            snprintf(why, len, "worker lease is in_doubt: %.*s past the safe window: not issuing",
                     (int)(n - k), li.why);
        else
            snprintf(why, len, "worker lease is in_doubt%s%s", li.why[0] ? ": " : "", li.why);
        return 1;
    }
    if (li.state != IK_LEASE_HELD && li.state != IK_LEASE_IN_DOUBT) {
        snprintf(why, len, "worker lease is %s%s%s", ik_lease_state_name(li.state),
                 li.why[0] ? ": " : "", li.why);
        return 1;
    }
    if (!gi.granted) {
        snprintf(why, len, "the generator holds no grant yet");
        return 1;
    }
    if (gi.valid_until_mono_ns != IK_FOREVER && gi.valid_until_mono_ns <= ik__boot_ns()) {
        snprintf(why, len, "the lease has not been proven recently (backend unreachable?)");
        return 1;
    }
    int64_t now = ik__now_ms();
    if (now >= ik_layout_end_ms(l)) {
        ik__layout_end_why(srv, why, len);
        return 1;
    }
    int64_t tick = ik_layout_ticks_at(l, now);
    if (tick <= (int64_t)gi.floor_tick) {
        int64_t wait = ((int64_t)gi.floor_tick + 1) * l->unit_ms + l->epoch_ms - now;
        snprintf(why, len,
                 "time guard: the clock must pass this slot's time record first (%lld ms to go)",
                 (long long)wait);
        return 1;
    }
    if (gi.ceiling_tick != IK_NO_CEILING && tick > (int64_t)gi.ceiling_tick) {
        snprintf(why, len,
                 "the slot's time record has not been persisted past now (backend store failing?)");
        return 1;
    }
    if ((int64_t)gi.last_tick > tick) {
        int64_t behind = ((int64_t)gi.last_tick - tick) * l->unit_ms;
        if (behind > srv->cfg->max_backward_ms) {
            snprintf(why, len,
                     "the clock is %lld ms behind the last issued ID (max-backward %lld ms)",
                     (long long)behind, (long long)srv->cfg->max_backward_ms);
            return 1;
        }
    }
    return 0;
}
