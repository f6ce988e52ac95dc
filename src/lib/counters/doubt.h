/* doubt.h: the doubt engine (doubt.c): the table of counter writes whose answer was
 * lost, above the seam, for every backend whose writes can be in doubt (backend.h's
 * tag_settle). The coord owns one (coord.c); tags.c advances through it. */
#ifndef IK_DOUBT_H
#define IK_DOUBT_H

#include "backend.h"

typedef struct ik__doubts ik__doubts;

/* A fate, as the engine decides it and logs it. */
typedef struct ik__doubt_verdict {
    ik__doubt_fate fate;
    int64_t first;    /* LANDED: its first ID (-1: landed, but where is not known) */
    const char *code; /* LANDED: the gap's why= (NULL: answer_lost; store_unsafe, ...) */
    char why[480];    /* what decided it, with what the store showed */
} ik__doubt_verdict;

/* The one rule (doubt.c, D7): the fate of write x on evidence e, now_ns by our
 * clock; at_stop: a write still pending will not be fenced any more (UNKNOWN, not
 * OPEN). Pure; also what ik__tag_write's judge answers. For tests too. */
void ik__doubt_judge(const ik__doubt *x, const ik__doubt_evidence *e, int64_t now_ns, int at_stop,
                     ik__doubt_verdict *v);

/* A new, empty table with a random writer id of its own. IK_ENOMEM, or IK_ESTORE
 * when the kernel has no randomness. */
int ik__doubts_new(ik__doubts **out);
/* Logs what is still open ("first=?": never silently) and frees d. No advance may
 * run. */
void ik__doubts_free(ik__doubts *d);

/* One advance of (app, name) through be, on a lane of its own, carrying the lane's
 * doubts of the tag: backend.h's tag_advance, with the same answers. */
int ik__doubts_advance(ik__doubts *d, ik__backend *be, const char *app, const char *name,
                       ik_tag_kind kind, int64_t delta, int64_t *first);

/* The store's words of the last advance of (app, name) if it failed (backend.h's
 * ik__tag_write why), into why: 1, or 0 if there are none. */
int ik__doubts_last_error(ik__doubts *d, const char *app, const char *name, char *why,
                          size_t why_len);

/* Doubts kept, plus advances in flight (which may add one). */
int ik__doubts_open(ik__doubts *d);

/* The stop's settle (doubt.c, D6): waits for the advances in flight until
 * deadline_ns, then settles each tag's doubts with one tag_settle, or logs them
 * ("first=?") where refused is non-NULL, the store's checks refuse it or the
 * deadline has passed. */
void ik__doubts_settle(ik__doubts *d, ik__backend *be, int64_t deadline_ns, const char *refused);

#endif
