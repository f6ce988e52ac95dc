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
    _Atomic int64_t checked_ns; /* mono ns of the last hazard check (ik__local_hazards) */
} local_backend;

/* The hazard checks of local: (docs/hazards.md) on DIR, now: its filesystem must
 * keep what is written across a reboot and honour flock(2) and fsync. Installs
 * the verdicts in b->base.hz; 0 or IK_EUNSAFE (why names it), or IK_ESTORE. */
int ik__local_hazards(local_backend *b, char *why, size_t why_len);
/* Before a write: re-checks if due (hazard.h), then 0 or IK_EUNSAFE. */
int ik__local_hazards_gate(local_backend *b);

int ik__local_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                         size_t why_len);
int ik__local_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out,
                      char *why, size_t why_len);
int ik__local_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n);
int ik__local_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                          ik__tag_write *w, int64_t *first);
void ik__local_tags_close(local_backend *b);

/* backend_local.c: the ops table, named by the registry (coord.c); recipe_local.c:
 * the lock protocol, named by that table. */
extern const ik__backend_ops ik__backend_local_ops;
extern const ik__recipe_ops ik__recipe_local_ops;

#endif
