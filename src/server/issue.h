/* issue.h: what both front doors share below them (issue.c): issuing IDs now or
 * later, and the words for the library's refusals. */
#ifndef IK_ISSUE_H
#define IK_ISSUE_H

#include "pend.h"
#include "worker.h"

/* Room for n IDs: small (64 entries) or the loop's batch scratch; NULL if it cannot
 * grow. Loop thread. */
int64_t *ik__ids_scratch(ik__worker *w, uint32_t n, int64_t *small);
/* Keeps an idle daemon small after a huge batch. */
void ik__ids_scratch_trim(ik__worker *w);
/* Issues n IDs of tag from the allocator of op (IK_OP_SEGMENT or IK_OP_SEQUENCE).
 * Returns IK_OK with ids[0..n-1] filled (segment IDs from a block in memory; ids
 * unused for sequence), IK_PENDING with *pend handed to the library and counted in
 * flight (the caller sets how to render it and queues it on its connection; its
 * answer comes back through ik__pend_complete), or the library's error
 * (IK_ECLOSED once the loop has closed its use of the allocators). Loop thread. */
int ik__issue(ik__worker *w, ik__op op, const char *tag, uint32_t n, int64_t *ids, ik__pend **pend);
/* Counts the IDs of a segment or sequence answer that came back from the library
 * (p->op, p->nids; a sequence's also in p->tag's series of the recent past), as
 * both front doors do for each such answer they render: the one place for it. (An
 * answer at once is counted by ik__issue itself.) Loop thread. */
void ik__issue_count(ik__worker *w, const ik__pend *p);
/* Asks again with an ik__pend that came back (p->tag, p->n kept), for op: as
 * ik__issue, except that on IK_PENDING the caller counts it in flight
 * (ik__pend_submitted) and on any other result p stays the caller's. */
int ik__issue_into(ik__worker *w, ik__pend *p, ik__op op, int64_t *ids);
/* Issues n snowflake IDs: IK_OK with ids[0..n-1] filled, IK_PENDING with *pend in
 * w's retry queue (the generator asked to wait, or earlier requests of this loop
 * wait: the generator never sleeps on a loop, and none overtakes an earlier one);
 * it comes back through ik__pend_complete with p->rc and p->ids[0..p->nids-1]. Or
 * the generator's refusal. The caller sets how to render *pend. Loop thread. */
int ik__sf_issue(ik__worker *w, uint32_t n, int64_t *ids, ik__pend **pend);
/* Names the generator's refusal rc: returns the HTTP status (503 for the
 * refusals of docs/guarantees.md promises 10-12 and a layout whose time field ran out, else 500),
 * sets *code and writes a message into msg. Loop thread. */
int ik__gen_error(ik__worker *w, int rc, const char **code, char *msg, size_t len);
/* Names a segment, sequence or tag error of the library (and counts store errors):
 * returns the HTTP status (404 unknown tag, 409 wrong kind, 503 retry, 400, 500),
 * sets *code and writes a message into msg. Loop thread. */
int ik__store_error(ik__worker *w, int op, int rc, const char *tag, const char **code, char *msg,
                    size_t len);

#endif
