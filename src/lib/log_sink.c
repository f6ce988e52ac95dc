/* log_sink.c: where every line the library writes goes: the log sink (ik_set_log;
 * by default "idkeeper: LINE" on stderr) that ik__logf writes through, and the gap
 * hook (ik_set_gap_hook) that ik__tag_gap calls after logging a tag's gap. The
 * daemon points both at its own log and metrics. Any thread: the sink and the hook
 * are atomics (docs/architecture.md, "Log lines"). */
#include "internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* ---- the log sink ------------------------------------------------------------ */

static _Atomic(ik_log_fn) log_fn;
static void *_Atomic log_ctx;

void ik_set_log(ik_log_fn fn, void *ctx)
{
    atomic_store(&log_ctx, ctx);
    atomic_store(&log_fn, fn);
}

/* ---- the gap hook (ik_set_gap_hook) -------------------------------------------- */

static _Atomic(ik_gap_fn) gap_fn;
static void *_Atomic gap_ctx;

void ik_set_gap_hook(ik_gap_fn fn, void *ctx)
{
    atomic_store(&gap_ctx, ctx);
    atomic_store(&gap_fn, fn);
}

void ik__tag_gap(const char *app, const char *tag, ik_tag_kind kind, int64_t first, int64_t count,
                 const char *why, const char *fmt, ...)
{
    char detail[512], at[24];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    if (first >= 0)
        snprintf(at, sizeof at, "%" PRId64, first);
    else
        snprintf(at, sizeof at, "?");
    /* a possible gap at a place the write fixed (zk://, SQL) may not have landed: then a
     * later write hands those IDs out, and the line must not say otherwise */
    int maybe = first >= 0 && !strcmp(why, "maybe_recorded");
    ik__logf("tag gap tag=%s first=%s count=%" PRId64 " why=%s (app %s, %s: %s; %s)", tag, at,
             count, why, app, kind == IK_TAG_SEQUENCE ? "sequence" : "segment", detail,
             maybe ? "if it was recorded, these IDs are never handed out; if not, a later write "
                     "hands them out"
                   : "these IDs are never handed out");
    ik_gap_fn fn = atomic_load(&gap_fn);
    if (fn) fn(atomic_load(&gap_ctx), app, tag, kind, first, count, why);
}

void ik__logf(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ik_log_fn fn = atomic_load(&log_fn);
    if (fn)
        fn(atomic_load(&log_ctx), line);
    else
        fprintf(stderr, "idkeeper: %s\n", line);
}
