/* log.h: the daemon's log (log.c): one line on stderr per event, and the library's
 * lines through it. Below every other file of the daemon. */
#ifndef IK_LOG_H
#define IK_LOG_H

#include <stdint.h>

/* One line on stderr: "2026-11-22T02:45:48.123Z idkeeper[pid]: message". Any thread. */
void ik__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The library's log lines (ik_set_log's sink), in the daemon's format. Any thread. */
void ik__log_library(void *ctx, const char *line);
/* Unix ms now (CLOCK_REALTIME). */
int64_t ik__now_ms(void);

#endif
