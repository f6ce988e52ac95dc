/* resp_cmds.h: the RESP command table (docs/resp.md) as resp_conn.c calls it.
 *
 * Calls go one way: resp_conn.c (RESP on the connection core) calls
 * ik__resp_dispatch for each complete command and ik__resp_render for each answer
 * that came back from the store; the commands below issue IDs through issue.c, as
 * the HTTP routes do. Everything here runs on the connection's loop thread.
 */
#ifndef IK_RESP_CMDS_H
#define IK_RESP_CMDS_H

#include "pend.h"
#include "resp.h"
#include "worker.h"

/* What one RESP connection is, as its commands see and change it. */
typedef struct ik__rsess {
    uint64_t id;      /* CLIENT ID: unique within the process */
    uint8_t proto;    /* 2, or 3 after HELLO 3 */
    uint8_t authed;   /* AUTH passed, or no token configured */
    uint8_t quit;     /* QUIT, or a cross-protocol line: close after this answer */
    char name[64];    /* CLIENT SETNAME ("" none) */
    char lib[64];     /* CLIENT SETINFO lib-name lib-ver */
    char peer[64];    /* "ip:port" */
    char local[64];   /* "ip:port" */
    int64_t since_ms; /* accepted, Unix ms */
} ik__rsess;

/* Tag -> kind, learnt from answers, per loop (no lock): INCR asks the right
 * allocator first. Open addressing; emptied when full. */
#define IK_RKINDS 512
typedef struct ik__rkinds {
    uint32_t n;
    struct {
        uint8_t kind; /* 0 empty, IK_OP_SEGMENT, IK_OP_SEQUENCE */
        char tag[IK_TAG_NAME_MAX + 1];
    } e[IK_RKINDS];
} ik__rkinds;

/* ik__pend.rflip of INCR: the kind it asked was learnt before (may still be wrong
 * if the tag was re-created), or guessed (segment first) because it is not known. */
enum { IK_RFLIP_KNOWN = 1, IK_RFLIP_GUESS = 2 };

/* One command being run. */
typedef struct ik__rcall {
    ik__worker *w;
    ik__rsess *s;
    ik__rkinds *kinds;
    const ik__respp *rp; /* the complete command */
    ik__buf *out;        /* the answer goes here when it is ready now */
    ik__pend *pend;      /* set instead when the answer comes later */
} ik__rcall;

/* Runs the command in c->rp: appends its answer to c->out, or leaves it pending in
 * c->pend (counted in flight; the caller queues it on its connection, in order).
 * Counts the command in the metrics (pending ones when rendered). */
void ik__resp_dispatch(ik__rcall *c);

/* Renders the answer p that came back into p->out (and counts it). Returns 0, or
 * IK_PENDING when INCR found the tag of the other kind and asked again: p is in
 * flight again and comes back once more. */
int ik__resp_render(ik__worker *w, ik__rkinds *kinds, ik__pend *p);

/* The name of row i of the RESP command table (lower case), NULL past its end;
 * row ik__resp_ncmds is "unknown" (resp_cmds.c). */
const char *ik__resp_cmd_name(size_t i);
extern const size_t ik__resp_ncmds;

#endif
