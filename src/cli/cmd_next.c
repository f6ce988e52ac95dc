/* cmd_next.c: `idkeeper next`, IDs from a running server onto stdout, one a line,
 * fetched in batches over one keep-alive connection. */
#include "cli.h"
#include "httpc.h"
#include "output.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEXT_TIMEOUT_MS 30000

/* Appends the URL-encoded s to buf; returns 0 or -1 if it does not fit. */
static int url_encode(char *buf, size_t len, const char *s)
{
    size_t o = strlen(buf);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~';
        if (o + (plain ? 1 : 3) >= len) return -1;
        if (plain)
            buf[o++] = (char)ch;
        else
            o += (size_t)snprintf(buf + o, len - o, "%%%02X", ch);
    }
    buf[o] = 0;
    return 0;
}

/* Checks that body is exactly `want` lines of decimal digits. Returns 0 or -1
 * with a reason. */
static int check_ids(const char *body, size_t len, int64_t want, char *why, size_t why_len)
{
    int64_t lines = 0;
    size_t line_start = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = body[i];
        if (ch == '\n') {
            if (i == line_start) {
                snprintf(why, why_len, "the server sent an empty line");
                return -1;
            }
            lines++;
            line_start = i + 1;
        } else if (ch < '0' || ch > '9') {
            snprintf(why, why_len, "the server's answer is not one decimal ID a line");
            return -1;
        }
    }
    if (line_start != len) {
        snprintf(why, why_len, "the server's answer does not end with a newline");
        return -1;
    }
    if (lines != want) {
        snprintf(why, why_len, "asked for %" PRId64 " IDs, the server sent %" PRId64, want, lines);
        return -1;
    }
    return 0;
}

/* Prints the server's reason for a non-200 answer. */
static void report_http_error(const ik_cli_command *cmd, const ik_httpc_resp *r, const char *path)
{
    char msg[512], code[64];
    if (ik__cli_json_get_string(r->body, r->body_len, "message", msg, sizeof msg) != 0) {
        size_t n = strcspn(r->body, "\r\n");
        snprintf(msg, sizeof msg, "%.*s", (int)(n > 300 ? 300 : n), r->body);
    }
    if (ik__cli_json_get_string(r->body, r->body_len, "error", code, sizeof code) != 0) code[0] = 0;
    for (char *p = msg; *p; p++) /* one line, whatever the server sent */
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
    for (char *p = code; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    ik__cli_fail(cmd, "%s%s(HTTP %d%s%s from %s)", msg, msg[0] ? " " : "", r->status,
                 code[0] ? ", " : "", code, path);
}

static int is_bad_count(const ik_httpc_resp *r)
{
    char code[64];
    return ik__cli_json_get_string(r->body, r->body_len, "error", code, sizeof code) == 0 &&
           strcmp(code, "bad_count") == 0;
}

/* The server's --max-batch from its /v1/status, or -1 if it does not say. */
static int64_t server_max_batch(ik_httpc *c, const char *prefix)
{
    char path[512], why[256];
    ik_httpc_resp r;
    snprintf(path, sizeof path, "%s/v1/status", prefix);
    if (ik__httpc_get(c, path, 1 << 20, &r, why, sizeof why) != 0 || r.status != 200) return -1;
    return ik__cli_status_max_batch(r.body, r.body_len);
}

int ik__cmd_next(const ik_cli_command *cmd, ik_cli_opts *o)
{
    /* What to fetch: snowflake (default), segment TAG or sequence TAG. */
    const char *kind = o->nargs > 0 ? o->args[0] : "snowflake";
    const char *tag = NULL;
    int want_args = 1;
    if (strcmp(kind, "segment") == 0 || strcmp(kind, "sequence") == 0) {
        if (o->nargs < 2) {
            ik__cli_fail(cmd, "%s needs a TAG (usage: idkeeper %s)", kind, cmd->usage);
            return IK_EXIT_USAGE;
        }
        tag = o->args[1];
        want_args = 2;
        char why[256] = "";
        if (ik_tag_name_check(tag, why, sizeof why) != 0) {
            ik__cli_fail(cmd, "bad tag name: %s", why);
            return IK_EXIT_USAGE;
        }
    } else if (strcmp(kind, "snowflake") != 0) {
        ik__cli_fail(cmd, "unknown ID kind '%s' (snowflake, segment TAG or sequence TAG)", kind);
        return IK_EXIT_USAGE;
    }
    if (o->nargs > want_args) {
        ik__cli_fail(cmd, "unexpected argument '%s' (usage: idkeeper %s)", o->args[want_args],
                     cmd->usage);
        return IK_EXIT_USAGE;
    }

    char host[256], prefix[256], why[512];
    int port;
    if (ik__cli_parse_url(o->v[IK_OPT_SERVER].text, host, sizeof host, &port, prefix, sizeof prefix,
                          why, sizeof why) != 0) {
        ik__cli_fail(cmd, "--server: %s", why);
        return IK_EXIT_USAGE;
    }
    char base[1024];
    snprintf(base, sizeof base, "%s/v1/%s", prefix, kind);
    if (tag) {
        strcat(base, "/");
        if (url_encode(base, sizeof base, tag) != 0) {
            ik__cli_fail(cmd, "tag too long");
            return IK_EXIT_USAGE;
        }
    }

    char token[512] = "";
    if (o->v[IK_OPT_HTTP_TOKEN_FILE].text && *o->v[IK_OPT_HTTP_TOKEN_FILE].text &&
        ik__cli_read_secret(o->v[IK_OPT_HTTP_TOKEN_FILE].text, "token", token, sizeof token, why,
                            sizeof why) != 0) {
        ik__cli_fail(cmd, "--http-token-file: %s", why);
        return IK_EXIT_USAGE;
    }
    ik_httpc *c = ik__httpc_create(host, port, NEXT_TIMEOUT_MS);
    if (!c) {
        ik__cli_fail(cmd, "out of memory");
        return IK_EXIT_FAIL;
    }
    ik__httpc_set_token(c, token);
    /* stdout is untouched so far; a large buffer makes a million IDs cheap. */
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

    int64_t left = o->v[IK_OPT_COUNT].n, batch = o->v[IK_OPT_BATCH].n;
    int rc = IK_EXIT_OK, adapted = 0;
    while (left > 0) {
        int64_t k = left < batch ? left : batch;
        char path[1200];
        snprintf(path, sizeof path, "%s?count=%" PRId64 "&format=text", base, k);
        ik_httpc_resp r;
        /* 20 digits and a newline per ID, plus slack for an error body */
        if (ik__httpc_get(c, path, (size_t)k * 21 + 65536, &r, why, sizeof why) != 0) {
            ik__cli_fail(cmd, "%s", why);
            rc = IK_EXIT_FAIL;
            break;
        }
        if (r.status == 400 && !adapted && k > 1 && is_bad_count(&r)) {
            /* --batch above the server's --max-batch: ask it, then go on */
            adapted = 1;
            int64_t m = server_max_batch(c, prefix);
            if (m > 0 && m < k) {
                batch = m;
                continue;
            }
        }
        if (r.status != 200) {
            report_http_error(cmd, &r, path);
            rc = IK_EXIT_FAIL;
            break;
        }
        if (check_ids(r.body, r.body_len, k, why, sizeof why) != 0) {
            ik__cli_fail(cmd, "%s (from %s)", why, path);
            rc = IK_EXIT_FAIL;
            break;
        }
        if (fwrite(r.body, 1, r.body_len, stdout) != r.body_len) {
            ik__cli_fail(cmd, "cannot write to stdout");
            rc = IK_EXIT_FAIL;
            break;
        }
        left -= k;
    }
    ik__httpc_destroy(c);
    if (fflush(stdout) != 0 && rc == IK_EXIT_OK) {
        ik__cli_fail(cmd, "cannot write to stdout");
        rc = IK_EXIT_FAIL;
    }
    return rc;
}
