/* store.c: how every command that opens the store reads its options: the store
 * options of --coord's backend (store_flags.c), the password of the SQL and Redis
 * stores (from --password-file, else --password / IDKEEPER_PASSWORD), the lease TTL
 * and --allow-unsafe-store, and
 * the one open of --coord with its failure message (for lock and elect, tried again
 * while the store cannot be reached). The first line of a file as a
 * secret (the password, the HTTP bearer token) is read here too.
 *
 * No message here shows a secret: the URI is shown with its password removed
 * (ik__uri_redact), and a secret file's errors name the file, never its text. */
#include "cli.h"

#include "../lib/rules.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int ik__cli_read_secret(const char *path, const char *what, char *out, size_t cap, char *why,
                        size_t why_len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        ik__cli_why(why, why_len, "cannot read the %s file %s: %s", what, path, strerror(errno));
        return -1;
    }
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *s = buf;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t len = strcspn(s, "\r\n");
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (!len) {
        ik__cli_why(why, why_len, "the %s file %s is empty: put the %s on its first line", what,
                    path, what);
        memset(buf, 0, sizeof buf);
        return -1;
    }
    if (len >= cap) {
        ik__cli_why(why, why_len, "the %s in %s is longer than %zu bytes", what, path, cap - 1);
        memset(buf, 0, sizeof buf);
        return -1;
    }
    memcpy(out, s, len);
    out[len] = 0;
    memset(buf, 0, sizeof buf);
    return 0;
}

int ik__cli_coord_options(const ik_cli_opts *o, ik_coord_options *co, ik__cli_store_args *a,
                          char *why, size_t why_len)
{
    ik_coord_options_init(co);
    co->lease_ttl_ms = (int)o->v[IK_OPT_LEASE_TTL].n;
    co->allow_unsafe_store = o->v[IK_OPT_ALLOW_UNSAFE_STORE].n != 0;
    co->leaf_name = o->v[IK_OPT_LEAF_NAME].text;
    co->leaf_takeover = o->v[IK_OPT_LEAF_TAKEOVER].text;
    if (ik__cli_store_options(o, o->v[IK_OPT_COORD].text, a->list,
                              sizeof a->list / sizeof a->list[0], a->text, sizeof a->text) != 0) {
        ik__cli_why(why, why_len, "too many or too long store options");
        return -1;
    }
    co->store_options = a->list;
    const char *file = o->v[IK_OPT_PASSWORD_FILE].text;
    if (file && *file) {
        char file_why[400] = "";
        if (ik__cli_read_secret(file, "password", a->password, sizeof a->password, file_why,
                                sizeof file_why) != 0) {
            ik__cli_why(why, why_len, "--password-file: %s", file_why);
            return -1;
        }
        co->password = a->password;
    } else if (o->v[IK_OPT_PASSWORD].text && *o->v[IK_OPT_PASSWORD].text) {
        co->password = o->v[IK_OPT_PASSWORD].text;
    }
    return 0;
}

void ik__cli_store_args_wipe(ik__cli_store_args *a)
{
    memset(a, 0, sizeof *a);
}

int ik__cli_open_coord(const ik_cli_command *cmd, const ik_cli_opts *o, ik_coord **c)
{
    return ik__cli_open_coord_as(cmd, o, 0, c);
}

/* One open of --coord: 0, the open's error (why), or 1 for bad options (why). */
static int open_once(const ik_cli_opts *o, int check_only, ik_coord **c, char *why, size_t why_len)
{
    ik_coord_options co;
    ik__cli_store_args args;
    if (ik__cli_coord_options(o, &co, &args, why, why_len) != 0) {
        ik__cli_store_args_wipe(&args);
        return 1;
    }
    co.check_only = check_only;
    int err = ik_coord_open(o->v[IK_OPT_COORD].text, &co, c, why, why_len);
    ik__cli_store_args_wipe(&args);
    return err;
}

/* The exit of a failed open_once, its message printed. */
static int open_failed(const ik_cli_command *cmd, const ik_cli_opts *o, int err, const char *why)
{
    char shown[512];
    ik__uri_redact(o->v[IK_OPT_COORD].text, shown, sizeof shown);
    if (err == 1) {
        ik__cli_fail(cmd, "%s", why);
        return IK_EXIT_USAGE;
    }
    ik__cli_fail(cmd, "cannot open %s: %s", shown, why[0] ? why : ik_strerror(err));
    return err == IK_EURI ? IK_EXIT_USAGE : IK_EXIT_FAIL;
}

int ik__cli_open_coord_as(const ik_cli_command *cmd, const ik_cli_opts *o, int check_only,
                          ik_coord **c)
{
    char why[512] = "";
    int err = open_once(o, check_only, c, why, sizeof why);
    return err ? open_failed(cmd, o, err, why) : 0;
}

int ik__cli_open_coord_waiting(const ik_cli_command *cmd, const ik_cli_opts *o, int64_t wait_ms,
                               ik_coord **c)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int64_t pause = 100;
    for (int tries = 0;; tries++) {
        char why[512] = "";
        int err = open_once(o, 0, c, why, sizeof why);
        if (err == 0) return 0;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        int64_t spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
        int left = wait_ms < 0 || spent + pause < wait_ms;
        if ((err != IK_ESTORE && err != IK_EINDOUBT) || !left) return open_failed(cmd, o, err, why);
        if (tries == 0) {
            char shown[512];
            ik__uri_redact(o->v[IK_OPT_COORD].text, shown, sizeof shown);
            fprintf(stderr, "idkeeper: %s: cannot open %s yet: %s; trying again%s\n", cmd->name,
                    shown, why[0] ? why : ik_strerror(err),
                    wait_ms < 0 ? "" : " until the timeout");
        }
        struct timespec nap = {pause / 1000, pause % 1000 * 1000000};
        while (nanosleep(&nap, &nap) != 0 && errno == EINTR) {
        }
        if (pause < 1000) pause *= 2;
    }
}

const char *ik__cli_store_why(const ik_coord *c, int err, char *buf, size_t len)
{
    int store = err == IK_ESTORE || (err < 0 && err > -4096);
    if (!store || ik_coord_last_error(c, buf, len) != 0) snprintf(buf, len, "%s", ik_strerror(err));
    return buf;
}

int ik__cli_locks_offered(const ik_cli_command *cmd, ik_coord *c)
{
    char why[512] = "";
    if (ik_coord_locks_check(c, why, sizeof why) == 0) return 0;
    ik__cli_fail(cmd, "%s", why);
    ik_coord_close(c);
    return IK_EXIT_FAIL;
}
