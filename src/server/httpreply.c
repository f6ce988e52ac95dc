/* httpreply.c: HTTP answers: the error body, extra headers and the serialized
 * response (httpreply.h). */
#include "httpreply.h"

#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ik__reply_header(ik__http_reply *rs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = sizeof rs->extra - rs->extra_len;
    int n = vsnprintf(rs->extra + rs->extra_len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n + 2 >= room) { /* does not fit: drop it whole */
        rs->extra[rs->extra_len] = 0;
        return;
    }
    rs->extra_len += (size_t)n;
    memcpy(rs->extra + rs->extra_len, "\r\n", 2);
    rs->extra_len += 2;
}

void ik__reply_error(ik__http_reply *rs, int status, const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    size_t n = ik__vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rs->status = status;
    rs->ctype = "application/json";
    rs->body->len = 0;
    ik__buf_puts(rs->body, "{\"error\":");
    ik__buf_append_json_str(rs->body, code, strlen(code));
    ik__buf_puts(rs->body, ",\"message\":");
    ik__buf_append_json_str(rs->body, msg, n);
    ik__buf_puts(rs->body, "}\n");
    if (status == 503) ik__reply_header(rs, "Retry-After: 1");
}

static const char *status_text(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Unknown";
    }
}

#define PUT_LIT(d, lit) (memcpy((d), (lit), sizeof(lit) - 1), (d) += sizeof(lit) - 1)
#define PUT_MEM(d, p, n) (memcpy((d), (p), (n)), (d) += (n))

void ik__reply_serialize(ik__buf *dst, const ik__http_reply *rs, const char *date, size_t date_len,
                         int keep, int http10)
{
    const ik__buf *b = rs->body;
    const char *st = status_text(rs->status);
    size_t stl = strlen(st), ctl = strlen(rs->ctype);
    char *start = ik__buf_reserve(dst, 160 + stl + ctl + date_len + rs->extra_len + b->len);
    char *d = start;
    PUT_LIT(d, "HTTP/1.1 ");
    d += ik__fmt_u64(d, (uint64_t)rs->status);
    *d++ = ' ';
    PUT_MEM(d, st, stl);
    PUT_LIT(d, "\r\nContent-Type: ");
    PUT_MEM(d, rs->ctype, ctl);
    PUT_LIT(d, "\r\nContent-Length: ");
    d += ik__fmt_u64(d, b->len);
    PUT_LIT(d, "\r\n");
    PUT_MEM(d, date, date_len);
    PUT_MEM(d, rs->extra, rs->extra_len);
    if (!keep) {
        PUT_LIT(d, "Connection: close\r\n");
    } else if (http10) {
        PUT_LIT(d, "Connection: keep-alive\r\n");
    }
    PUT_LIT(d, "\r\n");
    PUT_MEM(d, b->p, b->len);
    dst->len += (size_t)(d - start);
}
