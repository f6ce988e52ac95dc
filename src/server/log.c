/* log.c: the daemon's log: one line per event on stderr, with a UTC timestamp and
 * the pid ("2026-11-22T02:45:48.123Z idkeeper[pid]: message"), one write(2) each, so
 * that lines of different threads never interleave. The library's own lines
 * (ik_set_log) come through here too (ik__log_library).
 *
 * Below every other file of the daemon: it calls nothing of theirs.
 */
#include "log.h"
#include "../lib/rules.h" /* ik__fmt_iso8601 */

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int64_t ik__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ik__log(const char *fmt, ...)
{
    char line[1024];
    size_t n = ik__fmt_iso8601(line, ik__now_ms());
    int k = snprintf(line + n, sizeof line - n, " idkeeper[%d]: ", (int)getpid());
    if (k > 0) n += (size_t)k;
    va_list ap;
    va_start(ap, fmt);
    k = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (k > 0) n += (size_t)k < sizeof line - n - 1 ? (size_t)k : sizeof line - n - 2;
    line[n++] = '\n';
    /* One write(2) per line, so lines of different threads never interleave. */
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}

void ik__log_library(void *ctx, const char *line)
{
    (void)ctx;
    ik__log("%s", line);
}
