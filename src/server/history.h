/* history.h: what the daemon remembers of its recent past, in fixed memory, for the
 * status page and GET /v1/history, /v1/events (docs/http.md, docs/operations.md):
 *
 * - the IDs it issued in each of the last IK_HIST_SECONDS seconds, per kind
 *   (snowflake, segment, sequence) and per tag (the first IK_HIST_TAGS tags seen);
 * - the last IK_EVENTS_MAX events: the slot taken or lost, the lease in doubt,
 *   sequence gaps, clock refusals, changes of a store hazard's verdict;
 * - when the lease was last proven (a new time record acknowledged by the store);
 * - how much of the worker range is held, listed from the store every
 *   IK_RANGE_LIST_MS in the thread pool (never on a loop).
 *
 * Everything lives in one ik__history, the server's (srv->hist), allocated once at
 * start (ik__history_init): no allocation after it, whatever the load or the number
 * of tags. The server holds it by pointer, so that the server's struct needs not
 * this header (worker.h is below this file). Its size is
 * sizeof(ik__history), about 95 KiB (GET /v1/history says it as memory_bytes).
 *
 * Threads: the sampler (ik__history_tick) runs on loop 0 only; the adders and the
 * readers run on any thread. All of it is under mu, held only for copies, never
 * across a call into the library that may wait for the store.
 */
#ifndef IK_HISTORY_H
#define IK_HISTORY_H

#include "buf.h"
#include "worker.h"

#include <idkeeper.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#define IK_HIST_SECONDS 600 /* ten minutes, one bucket a second */
#define IK_HIST_TAGS 32     /* tags with a series of their own; the rest only in their kind's */
#define IK_HIST_KINDS 3     /* series 0..2: all snowflake, segment, sequence IDs */
#define IK_HIST_SERIES (IK_HIST_KINDS + IK_HIST_TAGS)
#define IK_EVENTS_MAX 20
#define IK_RANGE_LIST_MS 30000 /* how often the range's use is listed from the store */

/* A series' kind: IK_TAG_SEGMENT, IK_TAG_SEQUENCE (idkeeper.h), or this. */
#define IK_HIST_SNOWFLAKE 0

typedef struct ik__series {
    int kind;
    char tag[IK_TAG_NAME_MAX + 1]; /* "": the kind's total */
    uint64_t seen;                 /* the cumulative count at the last sample */
    uint64_t added;                /* sequence tags: IDs answered so far (ik__history_add) */
    uint32_t ids[IK_HIST_SECONDS]; /* IDs issued in Unix second s at ids[s % IK_HIST_SECONDS] */
} ik__series;

typedef struct ik__event {
    int64_t ms;    /* Unix ms */
    char kind[12]; /* "slot", "lease", "gap", "clock", "hazard" */
    char text[240];
    /* a gap's fields (kind "gap"); first < 0: not known */
    char tag[IK_TAG_NAME_MAX + 1];
    int64_t first, count;
    char why[24];
} ik__event;

typedef struct ik__history {
    pthread_mutex_t mu;
    int64_t last_s; /* the Unix second of the newest bucket (0: not sampled yet) */
    ik__series series[IK_HIST_SERIES];
    int nseries;
    int tags_full;                   /* a tag found no room: it counts only in its kind's series */
    ik__event events[IK_EVENTS_MAX]; /* a ring: the newest at (next_event - 1) */
    int next_event, nevents;
    /* the lease, as the sampler last saw it */
    int64_t record_seen_ms;        /* the time record last seen */
    int64_t proof_ms;              /* Unix ms the sampler first saw it (0: never) */
    uint64_t refusals_seen;        /* the generator's backward refusals last seen */
    int lease_state, lease_worker; /* the last state change (on_lease_state) */
    /* the worker range's use (loop 0 and the thread pool) */
    uint32_t range_min, range_max;
    atomic_int range_held;       /* slots of the range held, as last listed; -1: not yet */
    _Atomic int64_t range_at_ms; /* when it was listed (Unix ms) */
    int listing;                 /* a listing is in the thread pool (loop 0 only) */
    int64_t list_due_ms;
    int64_t list_every_ms; /* IK_RANGE_LIST_MS, or IDKEEPER_TEST_RANGE_LIST_MS (tests only) */
    uv_work_t list_work;
    int list_rc;
    int list_held;
} ik__history;

/* ---- the calls (history.c) ---------------------------------------------------- */

/* Sets up srv->hist (before anything can add to it) and frees it. */
void ik__history_init(ik__server *srv);
void ik__history_destroy(ik__server *srv);
/* The worker range whose use is listed: the layout's [min, max]. Before the loops start. */
void ik__history_set_range(ik__server *srv, uint32_t min, uint32_t max);
/* The sampler: on loop 0 (a no-op on any other), at most once a Unix second; called
 * from the sweep timer. Never waits for the store (its listing goes to the thread pool). */
void ik__history_tick(ik__worker *w);
/* Counts n sequence IDs of tag answered (the per-tag series). Any thread. */
void ik__history_add(ik__server *srv, const char *tag, uint64_t n);
/* Adds an event (kind: "slot", "lease", "clock", "hazard") with a printf text. Any thread. */
void ik__event_add(ik__server *srv, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds a sequence gap as an event: count IDs of tag from first (first < 0: not known),
 * why as in ik_sequence_gap_ids_total's label. Any thread. */
void ik__event_gap(ik__server *srv, const char *tag, int64_t first, int64_t count, const char *why);
/* Adds the lease's state change as an event (the slot taken or lost, in doubt, ...).
 * Any thread (the lease's on_state). */
void ik__event_lease(ik__server *srv, ik_lease_state state, int worker, const char *why);
/* Copies the events, newest first, into out[IK_EVENTS_MAX]; returns how many. Any thread. */
int ik__events_get(ik__server *srv, ik__event *out);
/* The worker range's size, the slots of it held as last listed (-1: not yet) and when
 * (Unix ms). Any thread. */
void ik__range_use(ik__server *srv, uint32_t *slots, int *held, int64_t *at_ms);
/* Unix ms the lease was last proven (a new time record acknowledged), as the sampler
 * saw it (within a second); 0 if never. Any thread. */
int64_t ik__lease_proof_ms(ik__server *srv);
/* GET /v1/history's and GET /v1/events' JSON into b. Any thread. */
void ik__history_render(ik__server *srv, int seconds, ik__buf *b);
void ik__events_render(ik__server *srv, ik__buf *b);

#endif
