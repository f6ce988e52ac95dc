/* http_reply.c: HTTP answers: the error body, extra headers and the serialized
 * response (http_reply.h). */
#include "http_reply.h"

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

/* The status line and the start of the Content-Type line of status: "HTTP/1.1 200
 * OK\r\nContent-Type: ", written whole (*len bytes), or NULL for a status not listed
 * here (then written piece by piece, with "Unknown"). */
static const char *status_head(int status, size_t *len)
{
#define HEAD(code, text)                                                                           \
    case code:                                                                                     \
        *len = sizeof("HTTP/1.1 " #code " " text "\r\nContent-Type: ") - 1;                        \
        return "HTTP/1.1 " #code " " text "\r\nContent-Type: ";
    switch (status) {
        HEAD(200, "OK")
        HEAD(201, "Created")
        HEAD(400, "Bad Request")
        HEAD(401, "Unauthorized")
        HEAD(404, "Not Found")
        HEAD(405, "Method Not Allowed")
        HEAD(408, "Request Timeout")
        HEAD(409, "Conflict")
        HEAD(413, "Content Too Large")
        HEAD(414, "URI Too Long")
        HEAD(431, "Request Header Fields Too Large")
        HEAD(500, "Internal Server Error")
        HEAD(503, "Service Unavailable")
        HEAD(505, "HTTP Version Not Supported")
    default:
        return NULL;
    }
#undef HEAD
}

#define PUT_LIT(d, lit) (memcpy((d), (lit), sizeof(lit) - 1), (d) += sizeof(lit) - 1)
#define PUT_MEM(d, p, n) (memcpy((d), (p), (n)), (d) += (n))

/* Writes n in decimal at d; returns the bytes written. Bodies are short: up to 9,999
 * bytes without a call. */
static size_t put_len(char *d, size_t n)
{
    if (n < 10) {
        d[0] = (char)('0' + n);
        return 1;
    }
    if (n < 100) {
        d[0] = (char)('0' + n / 10);
        d[1] = (char)('0' + n % 10);
        return 2;
    }
    if (n < 10000) {
        size_t k = n < 1000 ? 3 : 4;
        for (size_t i = k; i-- > 0; n /= 10)
            d[i] = (char)('0' + n % 10);
        return k;
    }
    return ik__fmt_u64(d, n);
}

void ik__reply_serialize(ik__buf *dst, const ik__http_reply *rs, const char *date, size_t date_len,
                         int keep, int http10)
{
    const ik__buf *b = rs->body;
    size_t hl, ctl = strlen(rs->ctype);
    const char *head = status_head(rs->status, &hl);
    char *start = ik__buf_reserve(dst, 200 + ctl + date_len + rs->extra_len + b->len);
    char *d = start;
    if (head) {
        PUT_MEM(d, head, hl);
    } else {
        PUT_LIT(d, "HTTP/1.1 ");
        d += ik__fmt_u64(d, (uint64_t)rs->status);
        PUT_LIT(d, " Unknown\r\nContent-Type: ");
    }
    PUT_MEM(d, rs->ctype, ctl);
    PUT_LIT(d, "\r\nContent-Length: ");
    d += put_len(d, b->len);
    PUT_LIT(d, "\r\n");
    PUT_MEM(d, date, date_len);
    if (rs->extra_len) PUT_MEM(d, rs->extra, rs->extra_len);
    if (!keep) {
        PUT_LIT(d, "Connection: close\r\n");
    } else if (http10) {
        PUT_LIT(d, "Connection: keep-alive\r\n");
    }
    PUT_LIT(d, "\r\n");
    if (b->len) PUT_MEM(d, b->p, b->len);
    dst->len += (size_t)(d - start);
}
