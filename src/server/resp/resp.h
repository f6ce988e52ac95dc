/* resp.h: the Redis protocol (RESP) without sockets: a command parser for RESP2
 * multibulk and inline commands, and the reply writers for RESP2 and RESP3.
 *
 * resp_conn.c embeds one ik__respp per RESP connection and feeds it what the socket
 * reads; tests/fuzz/fuzz_resp.c feeds it arbitrary bytes. Nothing here touches a
 * socket, a loop or a global. One ik__respp is used by one thread at a time.
 *
 * Input, as Redis's networking.c reads it (docs/resp.md):
 * - multibulk: "*<n>\r\n" then n times "$<len>\r\n<len bytes>\r\n". "*0" and "*-1"
 *   are empty commands (skipped, as Redis does); any other count below 1 is a
 *   protocol error, as is a count above max_args, a bulk length below 0 or above
 *   max_bytes, a header line that is not a number, or bytes other than "\r\n" after
 *   a bulk.
 * - inline: any other first byte starts a line ended by "\n" (a "\r" before it is
 *   dropped), split into arguments at blanks, with "double quotes" (C escapes,
 *   \xHH) and 'single quotes' as redis-cli and Redis split them. An empty line is
 *   skipped. A line longer than max_bytes or with unbalanced quotes is a protocol
 *   error.
 * - limits: at most max_args arguments and max_bytes bytes of arguments in total per
 *   command, so a connection's parser never holds more than max_bytes + a small
 *   constant, whatever the input.
 * A protocol error is final: the parser reports it on every later call; the caller
 * answers it and closes the connection (Redis does the same).
 *
 * What it does not do: RESP3 input types beyond arrays of bulk strings (no client
 * sends them), or attributes and pushes in replies.
 */
#ifndef IK_RESP_H
#define IK_RESP_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

#define IK_RESP_INLINE_ARGS 8 /* argument slots inline in the parser */

typedef struct ik__respp {
    uint32_t max_args;  /* arguments per command */
    uint32_t max_bytes; /* argument bytes per command (and inline line length) */
    uint8_t state;      /* what the next bytes are (resp.c) */
    uint8_t failed;     /* a protocol error happened: err holds it */
    uint32_t want;      /* multibulk: arguments announced */
    uint32_t argc;      /* arguments complete */
    int64_t bulk_left;  /* bytes of the current bulk (+2 for its CRLF) still to come */
    char line[48];      /* a multibulk header line being read */
    uint8_t line_len;
    ik__buf args;  /* every argument, each followed by a NUL */
    uint32_t *off; /* offsets of the arguments in args: inline or heap */
    uint32_t *len;
    uint32_t cap;
    uint32_t off_inline[IK_RESP_INLINE_ARGS], len_inline[IK_RESP_INLINE_ARGS];
    char err[96]; /* the protocol error, without "ERR " and CRLF */
} ik__respp;

/* Starts p with storage[0..cap-1] for argument bytes (inline storage; larger
 * commands move to the heap and back). max_args >= 1, max_bytes >= 64. */
void ik__respp_init(ik__respp *p, char *storage, size_t cap, uint32_t max_args, uint32_t max_bytes);
/* Frees heap storage. */
void ik__respp_free(ik__respp *p);

enum {
    IK_RESPP_MORE = 0,  /* all consumed; no complete command yet */
    IK_RESPP_CMD = 1,   /* a command is complete: view it with ik__respp_argv */
    IK_RESPP_ERROR = 2, /* protocol error (p->err); the connection must close */
};

/* Parses data[0..len-1] up to the end of the next complete command. Sets *used to
 * the bytes consumed and returns IK_RESPP_*. After IK_RESPP_CMD the command stays
 * viewable until the next call of ik__respp_feed (which starts the next one). */
int ik__respp_feed(ik__respp *p, const char *data, size_t len, size_t *used);

/* 1 while a command has begun but is not complete (for the read timeout). */
int ik__respp_busy(const ik__respp *p);

#define IK__RESPP_DONE 6 /* p->state after IK_RESPP_CMD (resp.c's S_DONE) */

/* Argument i (below argc) of the complete command into *arg (NUL-terminated; it may
 * also hold NULs) and *alen. Returns argc (the number of arguments). Valid until the
 * next feed. (Inline: the command handlers ask it for every argument.) */
static inline uint32_t ik__respp_arg(const ik__respp *p, uint32_t i, const char **arg, size_t *alen)
{
    if (p->state == IK__RESPP_DONE && i < p->argc) {
        *arg = p->args.p + p->off[i];
        *alen = p->len[i];
    } else {
        *arg = "";
        *alen = 0;
    }
    return p->state == IK__RESPP_DONE ? p->argc : 0;
}

/* ---- replies (RESP2; RESP3 where proto == 3) --------------------------------------- */

void ik__resp_simple(ik__buf *b, const char *s);      /* +s */
void ik__resp_error(ik__buf *b, const char *fmt, ...) /* -..., CR/LF made blanks */
    __attribute__((format(printf, 2, 3)));
void ik__resp_int(ik__buf *b, int64_t v);                /* :v */
void ik__resp_bulk(ik__buf *b, const char *s, size_t n); /* $n s */
void ik__resp_bulk_str(ik__buf *b, const char *s);       /* $strlen(s) s */
void ik__resp_null(ik__buf *b, int proto);               /* $-1 or _ */
void ik__resp_array(ik__buf *b, size_t n);               /* *n */
void ik__resp_map(ik__buf *b, size_t n, int proto);      /* %n, or *2n in RESP2 */

/* 1 if a command named name[0..n-1] is a line of an HTTP request, not RESP: the
 * request line of a POST ("POST / HTTP/1.1" read inline) or a Host: header, as
 * redis-server takes them (a browser made to post a form to this port); 0 if not.
 * The connection is then closed, nothing more in it run (docs/resp.md, "Errors"). */
int ik__resp_cross_protocol(const char *name, size_t n);

/* Quotes s[0..n-1] for an error message the way Redis does ('...', at most 128
 * bytes, CR and LF as blanks) into out (at least 140 bytes). */
void ik__resp_quote(char *out, const char *s, size_t n);

#endif
