/* tag_names.c: the rules for tag names and kinds, below both the public tag API
 * (tags.c) and the backends' tag stores (backend_*_tags.c), which all apply them.
 * Pure: no backend, no coord. */
#include "internal.h"

#include <string.h>

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

int ik_tag_name_check(const char *name, char *why, size_t why_len)
{
    if (!name || !*name) return ik__fail(IK_EINVAL, why, why_len, "tag name is empty");
    size_t n = strlen(name);
    if (n > IK_TAG_NAME_MAX)
        return ik__fail(IK_EINVAL, why, why_len, "tag name is %zu bytes, over %d", n,
                        IK_TAG_NAME_MAX);
    if (!ik__valid_name(name, IK_TAG_NAME_MAX))
        return ik__fail(IK_EINVAL, why, why_len,
                        "tag name may hold only letters, digits and . _ : -");
    if (!strcmp(name, ".") || !strcmp(name, ".."))
        return ik__fail(IK_EINVAL, why, why_len, "tag name cannot be . or ..");
    return IK_OK;
}

const char *ik_tag_kind_name(ik_tag_kind k)
{
    return k == IK_TAG_SEGMENT ? "segment" : k == IK_TAG_SEQUENCE ? "sequence" : "unknown";
}

int ik_tag_kind_parse(const char *text, ik_tag_kind *out)
{
    if (!out) return IK_EINVAL;
    if (text && !strcmp(text, "segment"))
        *out = IK_TAG_SEGMENT;
    else if (text && !strcmp(text, "sequence"))
        *out = IK_TAG_SEQUENCE;
    else
        return IK_EINVAL;
    return IK_OK;
}

uint32_t ik__tag_hash(const char *app, const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a over "APP/NAME" */
    for (const char *s = app; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    h = (h ^ '/') * 16777619u;
    for (const char *s = name; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}
