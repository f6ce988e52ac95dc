/* conn.h: the connection core both front doors sit on (HTTP: http_conn.c, RESP:
 * resp_conn.c): accepting on a listener, reading into the loop's buffer, the answer
 * queue that keeps answers in request order, writing, back-pressure, lingering after
 * a final answer, the read, write and idle timeouts, max-connections, the shutdown
 * deadline, and closing. A protocol brings an ik__proto: how to parse what was read,
 * how to render an answer that came back, and its words for a timeout, a refusal
 * and the shutdown deadline. The core calls the protocol only through those hooks.
 *
 * A connection's life (all on its loop's thread):
 *
 *   accept --> READING --request complete: answer into c->out--> ik__conn_flush
 *                 ^          (or queued: pending / held behind one)         |
 *                 |   write(2) wrote it all                                 |
 *                 +---------------------------------------------------------+
 *                 |                                                         | short write:
 *                 +---------- on_write (done) <--- WRITING <----------------+ uv_write,
 *                                                  (reads stopped)            reads stopped
 *   WAITING (a pending answer at the head of c->pend_head): reads go on, later
 *   requests queue behind it, nothing is written until the head's answer comes back
 *   (ik__pend_complete -> proto->answer -> ik__conn_answered).
 *   After a read, and after an answer comes back from the store, ik__conn_flush runs
 *   at the end of the loop's turn (ik__turn), once every connection that was ready has
 *   been read and every answer that came back has been rendered: the turn's answers
 *   leave together, one write a connection.
 *   final answer (error, close asked, draining) --> LINGERING: shutdown(WR), read and
 *   discard until EOF or IK_LINGER_MS --> closed
 *   EOF between requests: answer what was read, then close. EOF inside a request,
 *   EOF while an answer waits for the store (the client gave up, as nginx takes it),
 *   a read error, a timeout, max-connections --> closed (answers dropped)
 *
 * A closing connection drops its answers at once (drop): a sequence request still
 * queued in the library is withdrawn (never committed); any other out with the
 * library is detached and freed when it comes back, and a sequence range committed
 * for it is a gap; so is a sequence answer ready but not yet written whole (held,
 * or in c->out: c->unsent). Gaps are logged and counted (docs/guarantees.md promise 4).
 *
 * Invariants
 * - Reads land in the loop's one read buffer and are parsed at once: the protocol's
 *   parser copies what it needs, so nothing points into the read buffer after a
 *   read callback returns.
 * - c->out is never touched while a uv_write of it is pending (c->writing): reads
 *   are stopped then, and answers that come back wait in their ik__pend.
 * - Answers leave in request order. A ready answer goes straight into c->out when
 *   nothing is queued before it; else into a held ik__pend behind the pending ones
 *   (ik__conn_ready; RESP appends to the last held one, HTTP holds each answer in
 *   its own). Finished answers move from the head of the queue into c->out.
 * - Back-pressure: above IK_OUT_HIGH bytes of output (in c->out, held, or charged
 *   for the answers still pending) or IK_PIPE_MAX queued answers, or while a gate
 *   answer is out (ik__conn_full), the protocol stops parsing and the unparsed rest
 *   of the read waits in c->stash; reads stop.
 * - Charge: a pending answer is charged, from its queuing until it moves into
 *   c->out, the memory its answer may take (its ID array and rendered output:
 *   IK_ANSWER_BYTES + IK_ID_BYTES per ID, unless its protocol set a smaller one), so
 *   that a client that pipelines large requests and never reads holds at most
 *   IK_OUT_HIGH plus one answer's worth (docs/resp.md, docs/http.md).
 * - After an answer that closes the connection (c->close_after) nothing more is
 *   parsed.
 * - The hot path (one request answered at once) allocates nothing: c->out starts on
 *   storage inline in the connection.
 */
#ifndef IK_CONN_H
#define IK_CONN_H

#include "pend.h"

#include <uv.h>

#define IK_READ_BUF (64 * 1024)  /* one read buffer per loop */
#define IK_OUT_HIGH (256 * 1024) /* pause pipelined parsing above this much output */
#define IK_LINGER_MS 2000        /* drain input this long after a final answer */
#define IK_CONN_OUT_INLINE 512
#define IK_PIPE_MAX 64      /* answers queued on one connection; parsing pauses beyond */
#define IK_ANSWER_BYTES 256 /* charged for a pending answer, beside its IDs */
#define IK_ID_BYTES 32      /* charged per ID of a pending answer: 8 held, 24 rendered */

/* A protocol on the connection core. Every hook runs on the connection's loop. */
typedef struct ik__proto {
    size_t size;   /* the protocol's connection struct, which begins with an ik__conn */
    int hold_each; /* 1: each ready answer behind a pending one is held on its own
                      (counts against IK_PIPE_MAX); 0: they share the last held entry */
    /* Sets up the protocol's part of a new connection (before accept; freed by
     * free_conn even if the accept fails). */
    void (*init)(ik__conn *c);
    /* Frees what init allocated. */
    void (*free_conn)(ik__conn *c);
    /* After accept, within max-connections: returns 0 to admit c, or 1 to refuse it
     * (a protocol's own share of the limit; refused is then called). NULL: admitted. */
    int (*admit)(ik__conn *c);
    /* Refused (max-connections, or the server drains): may write its last words
     * before the close. NULL: closed in silence. */
    void (*refused)(ik__conn *c, int draining);
    /* Parses data[0..len-1], answering each complete request (ik__conn_ready,
     * ik__conn_push); returns the bytes used: less than len only when it paused
     * (set c->paused: ik__conn_full) or the connection is to close (c->close_after). */
    size_t (*feed)(ik__conn *c, const char *data, size_t len);
    /* Before the kept input is parsed again after a pause. NULL: nothing to do. */
    void (*resume)(ik__conn *c);
    /* Loop ms at which the request being read began (at least 1); 0 between
     * requests. Drives the read timeout, and EOF or draining inside a request. */
    uint64_t (*started)(const ik__conn *c);
    /* Loop ms by which the client must have done what the protocol asks first
     * (RESP with a token: authenticate); 0 if nothing is due. Past it the sweep
     * closes c as it closes an idle one (counted as a timeout; a request being
     * read or an answer being written has its own timeouts). NULL: never. */
    uint64_t (*deadline)(const ik__conn *c);
    /* Answer p (c's, come back from the store, p->rc set) is to be rendered into
     * p->out; then ik__conn_answered(c, p), unless it was asked again (in flight). */
    void (*answer)(ik__conn *c, ik__pend *p);
    /* The request being read did not complete within rto ms: answer the final
     * error (ik__conn_ready; set c->close_after). */
    void (*timeout)(ik__conn *c, uint64_t rto);
    /* The shutdown deadline came while p waits: its answer in its place into out
     * (and counted). */
    void (*shutdown_answer)(ik__conn *c, const ik__pend *p, ik__buf *out);
} ik__proto;

struct ik__conn {
    uv_tcp_t tcp; /* first: the handle's data is the connection */
    ik__worker *w;
    const ik__proto *proto;
    ik__conn *prev, *next; /* w->conns */
    ik__conn *wnext;       /* w->turn.head: to be flushed at the end of the loop's turn */
    int fd;                /* the socket's descriptor (tcp's; written to directly) */
    unsigned queued : 1;   /* on w->turn.head */
    uint64_t last_active;  /* loop ms of the last read, accept or answer */
    uint64_t write_start;  /* loop ms the pending uv_write began */
    uint64_t linger_until; /* loop ms */
    unsigned reading : 1, writing : 1, close_after : 1, paused : 1, lingering : 1, closing : 1,
        eof : 1;
    ik__pend *pend_head, *pend_tail; /* answers not yet in c->out, in request order */
    int npend;
    size_t held;      /* bytes in held (ready) answers of the queue */
    size_t charged;   /* bytes charged for the queue's pending answers (p->charge) */
    ik__pend *gate;   /* an answer out that parsing waits for (RESP: INCR finding its
                         tag's kind), or NULL */
    ik__pend *unsent; /* sequence answers in c->out not yet written whole (see drop) */
    ik__buf out;      /* answers not yet written */
    ik__buf stash;    /* unparsed input kept while parsing is paused */
    size_t stash_off;
    uv_write_t wr;
    uv_shutdown_t sd;
    char out_inline[IK_CONN_OUT_INLINE];
};

/* Starts w's end-of-turn flush (loop.c, at the loop's start). Returns 0 or a libuv
 * error. */
int ik__turn_init(ik__worker *w);

/* Listens on fd (taken over, even on failure) with proto, on w's loop. Returns 0
 * or a libuv error. */
int ik__listener_open(ik__worker *w, ik__listener *l, int fd, const ik__proto *proto);
/* Stops accepting (draining). */
void ik__listener_close(ik__listener *l);

/* Where a ready answer goes now: c->out when nothing is queued, else a held entry
 * at the end of the queue. Write to it, then call ik__conn_ready_done with the
 * length it had before. */
ik__buf *ik__conn_ready(ik__conn *c);
void ik__conn_ready_done(ik__conn *c, const ik__buf *dst, size_t before);
/* Queues p, a pending answer (its protocol renders it when it comes back), charged
 * p->charge, or if that is 0 IK_ANSWER_BYTES + IK_ID_BYTES * p->n (see "Charge"). */
void ik__conn_push(ik__conn *c, ik__pend *p);
/* 1 if the protocol must stop parsing now (see "Back-pressure"). */
int ik__conn_full(const ik__conn *c);
/* p is rendered (p->out): moves the connection on. */
void ik__conn_answered(ik__conn *c, ik__pend *p);
/* Moves the connection on after new output, a finished write or an answer that
 * came back: finished answers into c->out, c->out to the socket, then waits, closes,
 * parses kept input, or reads again. Before output that holds a sequence range is
 * written, a peer that has hung up (an EOF, hang-up or reset waiting unread) closes
 * c as a client gone: the ranges are gaps, logged and counted (docs/sequence.md,
 * "Clients that give up"). */
void ik__conn_flush(ik__conn *c);
/* Stops reading from c (the protocol's final answer is coming). */
void ik__conn_read_stop(ik__conn *c);
/* The sweep over w's connections: read, write and idle timeouts, lingering, and
 * at the drain deadline the shutdown answers and the close. */
void ik__conn_sweep(ik__worker *w, uint64_t now);
/* The close callback of a connection's handle (for the loop's teardown walk). */
void ik__conn_closed(uv_handle_t *h);

#endif
