/* config.h: the daemon's configuration, ik_server_config: what `idkeeper serve`'s
 * options become (src/cli/cmd_serve.c fills it), and what every file of the daemon
 * reads of them (through srv->cfg, worker.h). Below every file of the daemon: a
 * struct and its defaults, no code. server.h, all the CLI sees, includes it. */
#ifndef IK_CONFIG_H
#define IK_CONFIG_H

#include "idkeeper.h"

typedef struct ik_server_config {
    const char *coord_uri;      /* "local:./idkeeper-data" */
    const char *app;            /* "default" */
    const char *http_addr;      /* "127.0.0.1:8080" ([v6]:port allowed) */
    const char *resp_addr;      /* NULL: no Redis-protocol listener (docs/resp.md) */
    const char *identity;       /* NULL: HOSTNAME:HTTP_PORT */
    ik_layout layout;           /* already checked */
    int64_t max_backward_ms;    /* 5 */
    uint32_t max_batch;         /* 10000 */
    ik_slot_choice slot_choice; /* random */
    int64_t slot_wait_ms;       /* range full at start: wait this long for a slot, not
                                   ready meanwhile; IK_SLOT_WAIT_DEFAULT (the backend's:
                                   zk:// session timeout + 2 s, local: 0) */
    ik_coord_options coord;     /* zk session timeout, auth */
    int threads;                /* event-loop threads; 0: one per core */
    uint32_t max_header_bytes;  /* request line + headers; 8192 */
    int idle_timeout_ms;        /* keep-alive idle connection dropped after; 60000 */
    int read_timeout_ms;        /* a started request must complete within; 10000 */
    int max_connections;        /* 10000 */
    const char *http_token;     /* NULL: every route open; else every route that issues
                                   IDs or shows state needs it (the CLI reads it from
                                   --http-token-file) */
    int open_leaf_routes;       /* with a token: the Leaf routes stay open; 0 */
    int open_metrics;           /* with a token: /metrics stays open; 0 */
    int quiet;                  /* no start-up banner */
    int shutdown_timeout_ms;    /* SIGTERM: in-flight requests get this long; 5000 */
    int log_sequence_commits;   /* log "sequence tag=T first=A count=K" on stderr for each
                                   sequence range before it is answered; 0 (the CLI's
                                   --log-sequence-commits, IDKEEPER_LOG_SEQUENCE_COMMITS) */
    /* The semaphores whose leases GET /v1/semaphores and the status page show (the
     * CLI's --semaphores): paths (checked: ik__recipe_path) and their layouts, at most
     * IK_SERVER_SEMAPHORES_MAX; 0 for none */
    const char *const *semaphores;
    const ik_semaphore_layout *semaphore_layouts;
    int nsemaphores;
} ik_server_config;

#define IK_SERVER_SEMAPHORES_MAX 16

/* Fills the defaults above. */
void ik_server_config_init(ik_server_config *c);

#endif
