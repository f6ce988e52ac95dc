/* errors.c: the error enum's names and descriptions (ik_strerror, ik_errname), and
 * ik__fail, the library's one way to return an error with its reason. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
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
    {IK_EINDOUBT, "IK_EINDOUBT", "outcome unknown: the store's answer was lost"},
    {IK_ELOST, "IK_ELOST", "slot or session lost"},
    {IK_ECLOSED, "IK_ECLOSED", "handle is closing"},
    {IK_ERANGE, "IK_ERANGE", "value out of range"},
    {IK_ENOTFOUND, "IK_ENOTFOUND", "not found"},
    {IK_EEXIST, "IK_EEXIST", "already exists"},
    {IK_EBUSY, "IK_EBUSY", "held by someone else"},
    {IK_EKIND, "IK_EKIND", "the tag is of the other kind"},
    {IK_EUNSAFE, "IK_EUNSAFE", "the store's settings can lose an acknowledged write now"},
    {IK_EDENIED, "IK_EDENIED", "the store refused this client (credentials or permissions)"},
    {IK_EFORKED, "IK_EFORKED",
     "the handle belongs to the parent of this fork(): open a new one in this process"},
    {IK_ECONFLICT, "IK_ECONFLICT", "it exists with other settings (a semaphore's max)"},
    /* not errors, but answers of the API all the same (idkeeper.h) */
    {IK_PENDING, "IK_PENDING", "pending: the answer comes through the callback"},
    {IK_AGAIN, "IK_AGAIN", "not yet: call again later"},
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
