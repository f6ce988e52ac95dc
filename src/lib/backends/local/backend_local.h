/* backend_local.h: the local backend's handle, shared by its slot half
 * (backend_local.c) and its tag half (backend_local_tags.c). */
#ifndef IK_BACKEND_LOCAL_H
#define IK_BACKEND_LOCAL_H

#include "backend.h"

#include <pthread.h>
#include <sqlite3.h>

typedef struct local_backend {
    ik__backend base;
    char *dir; /* absolute */
    char *uri;
    pthread_mutex_t db_mu;      /* guards db and its statements */
    sqlite3 *db;                /* DIR/idkeeper.db, opened on first use */
    sqlite3_stmt *advance;      /* the advance's UPDATE, prepared once (backend_local_tags.c) */
    _Atomic int64_t checked_ns; /* mono ns of the last hazard check (ik__local_hazards) */
    pthread_mutex_t said_mu;    /* guards the three below (ik__local_say) */
    char said[700];             /* the latest failure's reason (ik_coord_last_error) */
    char logged[700];           /* the latest one logged, and when: the same line is */
    int64_t logged_ns;          /* logged again after 10 s at most */
} local_backend;

/* The hazard checks of local: (docs/hazards.md) on DIR, now: its filesystem must
 * keep what is written across a reboot and honour flock(2) and fsync. Installs
 * the verdicts in b->base.hz; 0 or IK_EUNSAFE (why names it), or IK_ESTORE. */
int ik__local_hazards(local_backend *b, char *why, size_t why_len);
/* Before a write: re-checks if due (hazard.h), then 0 or IK_EUNSAFE. */
int ik__local_hazards_gate(local_backend *b);
/* What an operator must read when a call on path failed with errno err: "PATH:
 * TEXT (ENAME)", and for a cause DIR itself has (not writable by this user, a
 * read-only or a full filesystem) what to change, into buf. */
void ik__local_cause(const local_backend *b, int err, const char *path, char *buf, size_t len);
/* Records line as b's latest failure (ik_coord_last_error) and, where log, writes it
 * to the library's log too, the same line at most every 10 s. Any thread. */
void ik__local_say(local_backend *b, int log, const char *line);
/* Writes, fsyncs and removes a small file in DIR, as a slot or a counter write
 * would: 0, or IK_ESTORE with why saying why DIR cannot be written
 * (ik__local_cause). For `idkeeper check`. */
int ik__local_dir_probe(const local_backend *b, char *why, size_t why_len);

int ik__local_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                         size_t why_len);
int ik__local_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out,
                      char *why, size_t why_len);
int ik__local_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n);
int ik__local_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                          ik__tag_write *w, int64_t *first);
void ik__local_tags_close(local_backend *b);
/* SQLite's own check of DIR/idkeeper.db (PRAGMA quick_check), on a connection of its
 * own, read-only: 0 if the file is absent or sound. IK_ESTORE with why naming the
 * file and SQLite's words: a damaged file always; where strict, also one that cannot
 * be read for another reason (`idkeeper check`), which open leaves to the first use
 * to report. */
int ik__local_db_check(local_backend *b, int strict, char *why, size_t why_len);

/* backend_local.c: the ops table, named by the registry (coord.c); recipe_local.c:
 * the lock protocol, named by that table. */
extern const ik__backend_ops ik__backend_local_ops;
extern const ik__recipe_ops ik__recipe_local_ops;

#endif
