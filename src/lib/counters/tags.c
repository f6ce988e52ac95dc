/* tags.c: the public tag API: validation here, storage behind the backend seam.
 * The name and kind rules live below it, in tag_names.c, where the backends' tag
 * stores use them too without calling up into this file. */
#include "backend.h"
#include "doubt.h"
#include "internal.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

static int check_app(const char **app)
{
    if (!*app) *app = "default";
    return ik__app_name_check(*app, NULL, 0);
}

static int no_tags(ik__backend *be, char *why, size_t why_len)
{
    return ik__fail(IK_ESTORE, why, why_len, "the %s backend does not keep tags yet",
                    be->ops->scheme);
}

int ik_tag_create(ik_coord *c, const char *app, const char *name, ik_tag_kind kind, int64_t start,
                  int64_t step, const char *description, char *why, size_t why_len)
{
    if (!c) return ik__fail(IK_EINVAL, why, why_len, "no coord");
    if (ik__coord_forked(c))
        return ik__fail(IK_EFORKED, why, why_len, "%s", ik_strerror(IK_EFORKED));
    if (check_app(&app)) return ik__fail(IK_EINVAL, why, why_len, "bad app name");
    int rc = ik_tag_name_check(name, why, why_len);
    if (rc) return rc;
    if (kind != IK_TAG_SEGMENT && kind != IK_TAG_SEQUENCE)
        return ik__fail(IK_EINVAL, why, why_len, "kind must be segment or sequence");
    if (start < 0)
        return ik__fail(IK_EINVAL, why, why_len, "start must be 0 or more, not %" PRId64, start);
    if (kind == IK_TAG_SEQUENCE && step == 0) step = 1;
    if (step < 1 || step > 1000000)
        return ik__fail(IK_EINVAL, why, why_len, "step must be 1 to 1000000, not %" PRId64, step);
    if (kind == IK_TAG_SEQUENCE && step != 1)
        return ik__fail(IK_EINVAL, why, why_len, "a sequence tag takes no step (or 1)");
    if (description && strlen(description) > 255)
        return ik__fail(IK_EINVAL, why, why_len, "description is over 255 bytes");
    ik__backend *be = ik__coord_backend(c);
    if (!be->ops->tag_create) return no_tags(be, why, why_len);
    ik_tag_info t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.kind = kind;
    t.start = start;
    t.step = step;
    t.max_id = start;
    t.update_time_ms = ik__wall_ms();
    snprintf(t.description, sizeof t.description, "%s", description ? description : "");
    return be->ops->tag_create(be, app, &t, why, why_len);
}

int ik_tag_read(ik_coord *c, const char *app, const char *name, ik_tag_info *out, char *why,
                size_t why_len)
{
    if (why && why_len) why[0] = '\0';
    if (!c || !out || check_app(&app) || ik_tag_name_check(name, NULL, 0)) return IK_EINVAL;
    if (ik__coord_forked(c))
        return ik__fail(IK_EFORKED, why, why_len, "%s", ik_strerror(IK_EFORKED));
    ik__backend *be = ik__coord_backend(c);
    if (!be->ops->tag_get) return no_tags(be, why, why_len);
    return be->ops->tag_get(be, app, name, out, why, why_len);
}

int ik_tag_get(ik_coord *c, const char *app, const char *name, ik_tag_info *out)
{
    return ik_tag_read(c, app, name, out, NULL, 0);
}

int ik_tag_last_error(ik_coord *c, const char *app, const char *name, char *why, size_t why_len)
{
    if (why && why_len) why[0] = '\0';
    if (!c || !why || !name) return IK_EINVAL;
    if (!why_len || check_app(&app) || ik_tag_name_check(name, NULL, 0)) return 0;
    ik__doubts *d = ik__coord_doubts(c);
    return d ? ik__doubts_last_error(d, app, name, why, why_len) : 0;
}

int ik_tags_list(ik_coord *c, const char *app, ik_tag_info **out, size_t *n)
{
    if (!c || !out || !n || check_app(&app)) return IK_EINVAL;
    if (ik__coord_forked(c)) return IK_EFORKED;
    ik__backend *be = ik__coord_backend(c);
    if (!be->ops->tag_list) return no_tags(be, NULL, 0);
    return be->ops->tag_list(be, app, out, n);
}

int ik__tag_advance(ik_coord *c, const char *app, const char *name, ik_tag_kind kind, int64_t delta,
                    int64_t *first)
{
    ik__backend *be = ik__coord_backend(c);
    if (!be->ops->tag_advance) return IK_ESTORE;
    if (delta <= 0) return IK_EINVAL;
    int delay = ik__coord_test_write_delay_ms(c); /* tests only */
    if (delay > 0) {
        struct timespec ts = {delay / 1000, (long)(delay % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    ik__doubts *d = ik__coord_doubts(c);
    if (d) return ik__doubts_advance(d, be, app, name, kind, delta, first);
    ik__tag_write w; /* a backend whose writes are never in doubt (backend.h) */
    memset(&w, 0, sizeof w);
    w.own.delta = delta;
    w.own.kind = kind;
    w.own.first = -1;
    int rc = be->ops->tag_advance(be, app, name, kind, &w, first);
    /* Such a backend leaves no doubt to settle later, but its own write may still have
     * failed in a way that leaves it recorded or not (local:: an I/O error in SQLite's
     * commit): never handed out, and logged as the gap it may be */
    if (rc == IK_EINDOUBT)
        ik__tag_gap(app, name, kind, -1, delta, "maybe_recorded",
                    "the store's write failed, perhaps after it was recorded");
    return rc;
}
