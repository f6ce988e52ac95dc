/* hazard.c: the store hazards' verdicts, their log lines and the refusal they imply
 * (hazard.h; docs/hazards.md). */
#include "hazard.h"
#include "internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *ik_verdict_name(ik_verdict v)
{
    switch (v) {
    case IK_VERDICT_OK:
        return "ok";
    case IK_VERDICT_RISK:
        return "risk";
    case IK_VERDICT_REFUSED:
        return "refused";
    }
    return "unknown";
}

void ik__hazards_init(ik__hazards *h, const ik_coord_options *o, int64_t ttl_ms, const char *where)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    h->ready = 1;
    h->allow_unsafe = o && o->allow_unsafe_store;
    int64_t iv = ttl_ms / 3;
    h->interval_ms = iv > 10000 ? 10000 : iv < 100 ? 100 : iv;
    snprintf(h->where, sizeof h->where, "%s", where ? where : "the store");
}

void ik__hazards_free(ik__hazards *h)
{
    if (!h || !h->ready) return;
    pthread_mutex_destroy(&h->mu);
    h->ready = 0;
}

void ik__hazard_row(const ik__hazards *h, ik_hazard *r, const char *check, const char *value,
                    int unsafe, const char *fix, ...)
{
    memset(r, 0, sizeof *r);
    snprintf(r->check, sizeof r->check, "%s", check);
    snprintf(r->value, sizeof r->value, "%s", value && value[0] ? value : "?");
    r->verdict = !unsafe ? IK_VERDICT_OK : h->allow_unsafe ? IK_VERDICT_RISK : IK_VERDICT_REFUSED;
    if (unsafe && fix) {
        va_list ap;
        va_start(ap, fix);
        vsnprintf(r->fix, sizeof r->fix, fix, ap);
        va_end(ap);
    }
}

/* The log line of one row whose verdict changed from was (-1: first seen). */
static void log_change(const ik__hazards *h, const ik_hazard *r, int was)
{
    if (r->verdict == IK_VERDICT_REFUSED)
        ik__logf("store hazard: %s: %s is %s: refusing to write until it is fixed: %s "
                 "(docs/hazards.md)",
                 h->where, r->check, r->value, r->fix);
    else if (r->verdict == IK_VERDICT_RISK && h->allow_unsafe)
        ik__logf("store hazard accepted by --allow-unsafe-store: %s: %s is %s: %s "
                 "(docs/hazards.md)",
                 h->where, r->check, r->value, r->fix);
    else if (r->verdict == IK_VERDICT_RISK && was >= 0) /* a backend's risk row that
            appeared while serving; one found at open is left to the caller (serve logs
            it, check prints it), so that one-shot commands stay quiet */
        ik__logf("store hazard, a risk (serving on without this guarantee): %s: %s is %s: %s "
                 "(docs/hazards.md)",
                 h->where, r->check, r->value, r->fix);
    else if (was > IK_VERDICT_OK)
        ik__logf("store hazard cleared: %s: %s is %s now", h->where, r->check, r->value);
}

/* IK_EUNSAFE with why naming the first refused row of rows[n], or 0 if none is. */
static int first_refused(const ik__hazards *h, const ik_hazard *rows, size_t n, char *why,
                         size_t why_len)
{
    for (size_t i = 0; i < n; i++) {
        const ik_hazard *r = &rows[i];
        if (r->verdict == IK_VERDICT_REFUSED)
            return ik__fail(IK_EUNSAFE, why, why_len, "%s is %s (%s): %s", r->check, r->value,
                            h->where, r->fix);
    }
    return IK_OK;
}

static int refused_locked(const ik__hazards *h, char *why, size_t why_len)
{
    if (!h->refused) return IK_OK;
    int rc = first_refused(h, h->rows, h->n, why, why_len);
    return rc ? rc : IK_EUNSAFE; /* refused counts refused rows: never 0 here */
}

int ik__hazards_proof(ik__hazards *h, const ik_hazard *rows, size_t n, char *why, size_t why_len)
{
    if (!h->ready) return IK_OK;
    return first_refused(h, rows, n, why, why_len);
}

int ik__hazards_update(ik__hazards *h, const ik_hazard *rows, size_t n, char *why, size_t why_len)
{
    if (!h->ready) return IK_OK;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < h->n && strcmp(h->rows[j].check, rows[i].check) != 0)
            j++;
        int was = j < h->n ? (int)h->rows[j].verdict : -1;
        if (j == h->n && h->n == IK__HAZARDS_MAX) continue; /* a backend's bug: dropped */
        if (j == h->n) h->n++;
        h->rows[j] = rows[i];
        if (was != (int)rows[i].verdict) log_change(h, &rows[i], was);
    }
    h->refused = 0;
    for (size_t j = 0; j < h->n; j++)
        h->refused += h->rows[j].verdict == IK_VERDICT_REFUSED;
    h->checked_ns = ik__mono_ns();
    int rc = refused_locked(h, why, why_len);
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int ik__hazards_refused(ik__hazards *h, char *why, size_t why_len)
{
    if (!h->ready) return IK_OK;
    pthread_mutex_lock(&h->mu);
    int rc = refused_locked(h, why, why_len);
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int ik__hazards_due(ik__hazards *h, int64_t last_ns)
{
    if (!h->ready) return 0;
    pthread_mutex_lock(&h->mu);
    int due =
        last_ns == 0 || h->refused || ik__mono_ns() - last_ns >= h->interval_ms * INT64_C(1000000);
    pthread_mutex_unlock(&h->mu);
    return due;
}

int ik__hazards_copy(ik__hazards *h, ik_hazard **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!h->ready) return IK_OK;
    pthread_mutex_lock(&h->mu);
    int rc = IK_OK;
    if (h->n) {
        *out = malloc(h->n * sizeof **out);
        if (*out) {
            memcpy(*out, h->rows, h->n * sizeof **out);
            *n = h->n;
        } else {
            rc = IK_ENOMEM;
        }
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}
