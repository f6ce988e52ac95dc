/* errors.c: the error enum's names and descriptions, and small shared helpers. */
#include "internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef IK_HAVE_ZK
#include <zookeeper/zookeeper.h>
#endif

typedef struct {
    int code;
    const char *name;
    const char *text;
} err_entry;

static const err_entry api_errors[] = {
    {IK_OK, "IK_OK", "success"},
    {IK_EINVAL, "IK_EINVAL", "invalid argument"},
    {IK_ENOMEM, "IK_ENOMEM", "out of memory"},
    {IK_ELAYOUT, "IK_ELAYOUT", "invalid ID layout"},
    {IK_ENOLEASE, "IK_ENOLEASE", "no valid worker lease: not issuing IDs"},
    {IK_ECLOCKBACK, "IK_ECLOCKBACK", "clock went back beyond the allowed limit"},
    {IK_ETIMEGUARD, "IK_ETIMEGUARD", "clock has not yet passed the slot's time record"},
    {IK_ENOSLOT, "IK_ENOSLOT", "no free worker slot"},
    {IK_ETIMEDOUT, "IK_ETIMEDOUT", "timed out"},
    {IK_EURI, "IK_EURI", "malformed or unsupported coordination URI"},
    {IK_ESTORE, "IK_ESTORE", "coordination store unreachable or failed"},
    {IK_EINDOUBT, "IK_EINDOUBT", "outcome unknown: connection to the store lost"},
    {IK_ELOST, "IK_ELOST", "slot or session lost"},
    {IK_ECLOSED, "IK_ECLOSED", "handle is closing"},
    {IK_ERANGE, "IK_ERANGE", "value out of range"},
    {IK_ENOTFOUND, "IK_ENOTFOUND", "not found"},
    {IK_EEXIST, "IK_EEXIST", "already exists"},
    {IK_EBUSY, "IK_EBUSY", "held by someone else"},
    {IK_EKIND, "IK_EKIND", "the tag is of the other kind"},
    {IK_EUNSAFE, "IK_EUNSAFE", "the store's settings can lose an acknowledged write now"},
};

static const err_entry *find_api(int err)
{
    for (size_t i = 0; i < sizeof api_errors / sizeof api_errors[0]; i++)
        if (api_errors[i].code == err) return &api_errors[i];
    return NULL;
}

const char *ik_strerror(int err)
{
    const err_entry *e = find_api(err);
    if (e) return e->text;
    if (err < 0 && err > -4096) return strerror(-err);
#ifdef IK_HAVE_ZK
    if (err <= IK_EZK_BASE - 1 && err > IK_EZK_BASE - 1000) return zerror(err - IK_EZK_BASE);
#endif
    return "unknown error";
}

const char *ik_errname(int err)
{
    const err_entry *e = find_api(err);
    if (e) return e->name;
    if (err < 0 && err > -4096) {
        const char *n = strerrorname_np(-err);
        return n ? n : "ESYS";
    }
    if (err <= IK_EZK_BASE - 1 && err > IK_EZK_BASE - 1000) return "IK_EZK";
    return "IK_EUNKNOWN";
}

void ik_free(void *p)
{
    free(p);
}

const char *ik_version(void)
{
    return IK_VERSION_STRING;
}

int ik__fail(int err, char *why, size_t why_len, const char *fmt, ...)
{
    if (why && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return err;
}

int ik__valid_name(const char *s, size_t max)
{
    size_t n = 0;
    if (!s) return 0;
    for (; s[n]; n++) {
        char c = s[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == ':' || c == '-';
        if (!ok || n >= max) return 0;
    }
    return n > 0;
}

int ik__grow(void **v, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap) return IK_OK;
    size_t nc = *cap ? *cap * 2 : first;
    void *nv = realloc(*v, nc * elem);
    if (!nv) return IK_ENOMEM;
    *v = nv;
    *cap = nc;
    return IK_OK;
}

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
    ik__logf("tag gap tag=%s first=%s count=%" PRId64 " why=%s (app %s, %s: %s; these IDs are "
             "never handed out)",
             tag, at, count, why, app, kind == IK_TAG_SEQUENCE ? "sequence" : "segment", detail);
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
