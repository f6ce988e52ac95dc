/* server.h: the idkeeper daemon (`idkeeper serve`: HTTP/1.1, and the Redis protocol
 * with --resp, over libidkeeper) as the CLI sees it, and all it sees: the CLI fills
 * an ik_server_config from flags, environment and the config file, and calls
 * ik_server_run(). The daemon's own files share server_internal.h. */
#ifndef IK_SERVER_H
#define IK_SERVER_H

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
} ik_server_config;

/* Fills the defaults above. */
void ik_server_config_init(ik_server_config *c);

/* Runs the daemon until SIGTERM, SIGINT or SIGHUP. Returns the process exit code: 0 after a
 * clean shutdown, non-zero (with a one-line reason on stderr) if it cannot start. */
int ik_server_run(const ik_server_config *c);

#endif
