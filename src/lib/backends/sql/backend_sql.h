/* backend_sql.h: the generic SQL backend's own parts, shared by its files
 * (backend_sql.c: open, close, the connection pool; backend_sql_slots.c;
 * backend_sql_tags.c; recipe_sql.c) and by nothing else. Drivers see only
 * sql_driver.h. Not a public API. */
#ifndef IK_BACKEND_SQL_H
#define IK_BACKEND_SQL_H

#include "sql_driver.h"

#include "internal.h"

#include <pthread.h>

#define IK__SQL_POOL 4      /* pooled connections for tags and slot scans */
#define IK__SQL_BIZ_MAX 128 /* leaf_alloc.biz_tag is varchar(128) */
#define IK__SQL_LIVE 128    /* connections whose sockets a cut shuts, at most */

typedef struct ik__sql_backend {
    ik__backend base;
    const ik__sql_driver *d;
    ik__sql_target t; /* points at uri, password, shown below */
    char *uri, *password, *shown;
    int64_t ttl_ms; /* --lease-ttl */
    /* IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS at open (tests only; 0: none): a tag
     * advance waits this long before its COMMIT, the row lock held (docs/sql.md,
     * "Test hooks") */
    int test_commit_pause_ms;
    /* IDKEEPER_TEST_SQL_BEFORE_TAKE_COMMIT and _BEFORE_ADVANCE_COMMIT at open (tests
     * only; NULL: none): an SQL statement run on the connection right before the
     * COMMIT of a slot take, and of a tag advance, to put the session in a state
     * its checks did not see (docs/sql.md, "Test hooks") */
    char *test_before_take_commit, *test_before_advance_commit;
    /* IDKEEPER_TEST_SQL_COMMIT_HOLD at open (tests only; NULL: none): the path of
     * ik__test_hold, before the commit round trip of a tag advance, a slot take and
     * a lock's fence (docs/sql.md, "Test hooks") */
    char *test_commit_hold;
    /* IDKEEPER_BENCH_CYCLE at open (benchmarks only; docs/sql.md, "Test hooks"):
     * 1 times the tag advances and logs their batch cycle at close; 2 ("serial")
     * also sends a pipeline's statements one by one, as for a driver without
     * exec_pipeline, to compare the two in one build */
    int cycle;
    /* the advances timed (under mu): count, IDs, and the ns of each part: BEGIN,
     * the locking read, the mark, the UPDATE (pipelined: [0] holds the four), COMMIT */
    int64_t cyc_n, cyc_ids, cyc_ns[5];

    pthread_mutex_t mu;
    pthread_cond_t cv;
    ik__sql_conn *pool[IK__SQL_POOL]; /* NULL: not connected (yet, or again) */
    int busy[IK__SQL_POOL];
    char session[64]; /* the last slot's session, for ik__sql_session */
    /* the database clock's last read, on whichever connection (backend_sql_hazards.c),
     * under mu: the database's clock (Unix ms; 0: none yet), our BOOTTIME when it was
     * read (the midpoint of the round trip) and that round trip */
    int64_t clock_db_ms, clock_at_ns, clock_rtt_ns;
    int opening; /* in ik__sql_open: its first connection is checked by open itself */

    /* the commit marks (backend_sql_marks.c, SM1-SM4), under mu: the first 30 hex
     * digits of the doubt engine's writer ids, this coord's own ("": no advance
     * yet), and the doubts the engine was left to keep and has not handed back
     * decided (above 0: the close keeps our marks) */
    char writer[31];
    int doubts_left;
    int opened; /* the open succeeded: the close cleans up */
    /* every connection made and not yet closed (ik__sql_conn_close), whose sockets
     * ik__sql_cut shuts; cut: no call waits on the database any more (under mu) */
    ik__sql_conn *live[IK__SQL_LIVE];
    int cut;
} ik__sql_backend;

static inline ik__sql_backend *ik__sql_of(ik__backend *be)
{
    return (ik__sql_backend *)be;
}

/* 1 for the classes after which a connection is dead (EDOUBT, EGONE, EFOREIGN). */
static inline int ik__sql_dead(int rc)
{
    return rc == IK__SQL_EDOUBT || rc == IK__SQL_EGONE || rc == IK__SQL_EFOREIGN;
}

/* A connection of the pool, connected if need be (and again if the server ended
 * it while it was idle, or may end it now: ik__sql_reusable): waits for a free one.
 * 0 and *idx, *c; or a driver class with why. */
int ik__sql_get(ik__sql_backend *b, int *idx, ik__sql_conn **c, char *why, size_t why_len);
/* Gives connection idx back; rc is the class of its last call: a dead one is
 * closed, and the next ik__sql_get connects again. */
void ik__sql_put(ik__sql_backend *b, int idx, int rc);
/* A new connection of its own (slots, locks). 0 or a driver class with why. */
int ik__sql_connect(ik__sql_backend *b, ik__sql_conn **c, char *why, size_t why_len);
/* Closes a connection made by ik__sql_connect or the pool (every close goes here,
 * so that a cut never shuts a socket number used again since). */
void ik__sql_conn_close(ik__sql_backend *b, ik__sql_conn *c);
/* 1 if the idle connection c may be used again (backend_sql.c): 0 if the database
 * ended it while it was idle, or may end it any moment (the driver's stale). */
int ik__sql_reusable(const ik__sql_driver *d, ik__sql_conn *c);

/* backend_sql_hazards.c (docs/hazards.md). Runs the driver's hazard check on c now
 * and installs its rows: 0, IK_EUNSAFE (a row refused; why names it), or the
 * driver's class if c did not answer (c is then dead). */
int ik__sql_hazards_run(ik__sql_backend *b, ik__sql_conn *c, char *why, size_t why_len);
/* The same check's rows (at most IK__SQL_HAZARDS_MAX + 1), not installed: 0 or the
 * driver's class. */
int ik__sql_hazards_read(ik__sql_backend *b, ik__sql_conn *c, ik_hazard *rows, size_t *n, char *why,
                         size_t why_len);
/* Before a slot write or a tag advance on c: runs the check if c is due, then 0 if
 * nothing is refused, IK_EUNSAFE (nothing may be sent), or IK_ESTORE with *cls the
 * class c's failed check left (c dead: give it back with it). */
int ik__sql_hazards_gate(ik__sql_backend *b, ik__sql_conn *c, int *cls, char *why, size_t why_len);
/* After a driver call on c answered rc: if rc is IK__SQL_EFOREIGN (the proof that
 * rode with a write or a grant shows another server session), installs the refused
 * row the driver described in c's hz state (docs/hazards.md, "Proof with every
 * write"), which logs it and stops every write until a check finds a connection of
 * our own again. Call before c is closed. rc unchanged. */
int ik__sql_hazards_foreign(ik__sql_backend *b, ik__sql_conn *c, int rc);
/* What became of a write's commit point (ik__sql_commit_proved). */
typedef enum ik__sql_commit_state {
    IK__SQL_COMMITTED = 0, /* committed, and the evidence read after it in its round trip
                            * is safe: the write may be trusted */
    IK__SQL_UNTRUSTED,     /* committed, but never to be trusted: its evidence refused
                            * (refused), lost with the connection, or the store's answer
                            * qualified the commit (a warning: why has its words) */
    IK__SQL_UNANSWERED,    /* no answer: it may have committed; the connection is dead */
    IK__SQL_NOT_COMMITTED, /* a definite failure: nothing of it committed */
} ik__sql_commit_state;

typedef struct ik__sql_commit {
    ik__sql_commit_state state;
    int refused;      /* UNTRUSTED by a refused hazard row (installed and logged) */
    const char *code; /* UNTRUSTED: the gap's why= (store_unsafe, answer_lost) */
    char why[400];    /* what the store showed, in its words */
} ik__sql_commit;

/* The commit point of a write on c (SP1, SP2 of backend_sql_proof.c): runs `commit`
 * (a COMMIT, or a write in autocommit) with the driver's proof after it in the same
 * round trip, and the table proof of `table` (the one the write's value lives in:
 * leaf_alloc, idk_slots, idk_fence), so that the evidence is read at or after the
 * commit; judges it as a check's rows (installed, and a change logged) together
 * with what the store said of the commit itself (the driver's qualified). *out says
 * what became of it; *res (if not NULL) the commit call's result, freed by the
 * caller. Returns the round trip's driver class, for the pool (0 when all
 * answered). */
int ik__sql_commit_proved(ik__sql_backend *b, ik__sql_conn *c, ik__sql_call commit,
                          const char *table, ik__sql_res *res, ik__sql_commit *out);
/* The proof r read inside a write's transaction, before its COMMIT (SP3 of
 * backend_sql_proof.c), judged and installed as a check's rows: 0, or IK_EUNSAFE
 * (a row refused, why names it): the caller rolls the write back. Not its evidence:
 * that is read after the COMMIT (ik__sql_commit_proved). */
int ik__sql_proof_early(ik__sql_backend *b, ik__sql_conn *c, const ik__sql_res *r, char *why,
                        size_t why_len);
/* 1 if the driver sends a proof with each write (IK__SQL_PROOF and proof). */
int ik__sql_has_proof(const ik__sql_driver *d);
/* A new connection that will hold a session lock (recipe_sql.c): connected with
 * the session limits of a holder (docs/sql.md, "Session settings"). */
int ik__sql_connect_holder(ik__sql_backend *b, ik__sql_conn **c, char *why, size_t why_len);

/* The ik_error of a driver class: EDOUBT -> IK_EINDOUBT, EDUPLICATE -> IK_EEXIST,
 * EFOREIGN -> IK_EUNSAFE, the others IK_ESTORE. */
int ik__sql_error(int rc);

/* Rolls back c's transaction after a failure rc (unless rc left c dead, which
 * ended it): rc, or the rollback's class if that left c dead. */
int ik__sql_abort(const ik__sql_driver *d, ik__sql_conn *c, int rc);

/* Runs a statement with up to 8 int64/text parameters given as strings. */
int ik__sql_exec(const ik__sql_driver *d, ik__sql_conn *c, ik__sql_stmt id,
                 const char *const *params, int n, ik__sql_res *res, char *why, size_t why_len);

/* Runs calls[0..n-1] in one round trip where the driver can (its exec_pipeline),
 * else one by one with exec; res[0..n-1] zeroed first, then as exec_pipeline says
 * (sql_driver.h). Never given a COMMIT. */
int ik__sql_exec_pipeline(const ik__sql_driver *d, ik__sql_conn *c, const ik__sql_call *calls,
                          int n, ik__sql_res *res, int *ran, char *why, size_t why_len);
/* The same, one by one whatever the driver (IDKEEPER_BENCH_CYCLE=serial), the ns
 * each call took into ns[0..n-1]. */
int ik__sql_exec_serial(const ik__sql_driver *d, ik__sql_conn *c, const ik__sql_call *calls, int n,
                        ik__sql_res *res, int *ran, int64_t *ns, char *why, size_t why_len);

/* backend_sql_marks.c: the commit marks (its SM1-SM6), for backend_sql_tags.c.
 *
 * Reports what the store holds of each doubt w carries (its ev[i]) by one read of w's
 * writer's mark of biz on c, under the tag's row lock, and notes w's writer for the
 * close: 0, or the driver's class (nothing read: the advance sends nothing). */
int ik__sql_marks_settle(ik__sql_backend *b, ik__sql_conn *c, const char *biz, ik__tag_write *w);
/* After w's COMMIT answer was lost: reads its mark again for up to IK__SQL_IO_MS, into
 * w->own_ev (SM5, SM6), and answers IK_EINDOUBT: the doubt engine decides (hands it
 * out, fails the call, or keeps it where nothing was read). */
int ik__sql_marks_reread(ik__sql_backend *b, const char *biz, ik__tag_write *w);
/* At close: deletes this backend's own marks, unless a doubt it left may still need
 * one, or the backend was cut. */
void ik__sql_marks_drop(ik__sql_backend *b);

#endif
