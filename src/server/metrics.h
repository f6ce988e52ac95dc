/* metrics.h: the daemon's metrics registry (metrics.c): the status codes it counts
 * by, the server-wide count of sequence gaps, and the Prometheus text of it all. The
 * loops' own counters are worker.h's (ik__metrics: each loop writes only its own). */
#ifndef IK_METRICS_H
#define IK_METRICS_H

#include "buf.h"
#include "worker.h"

/* The status codes counted by ik_http_requests_total, by index; anything else is
 * "other", index IK_N_CODES - 1. */
extern const int ik__metric_codes[IK_N_CODES - 1];
/* Index of status in the requests array. */
int ik__metric_code_index(int status);

/* Sequence IDs committed for nobody, by tag and IK_GONE_* (server-wide, under
 * srv->gaps_mu: rare, written by any loop, read by /metrics). */
typedef struct ik__gap_count {
    char tag[IK_TAG_NAME_MAX + 1];
    char why[24]; /* the metric's label: ik__gone_label[], or the library's cause */
    uint64_t ids;
} ik__gap_count;

/* Adds n gap IDs of tag for reason why (a metric label: ik__gone_label[IK_GONE_*]
 * for an answer nobody took, or the library's cause, ik_set_gap_hook) to the
 * server's counts. Any thread. */
void ik__gap_add(ik__server *srv, const char *tag, const char *why, uint64_t n);

/* Renders every metric in Prometheus text format into b; ready: whether a snowflake
 * ID can be issued now (ik__not_ready, for ik_ready). Any thread. */
void ik__metrics_render(ik__server *srv, int ready, ik__buf *b);

#endif
