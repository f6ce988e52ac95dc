/* store.c: how every command that opens the store reads its options: the store
 * options of --coord's backend (store_flags.c), the password of the SQL and Redis
 * stores (from --password-file, else --password / IDKEEPER_PASSWORD), the lease TTL
 * and --allow-unsafe-store, and
 * the one open of --coord with its failure message. The first line of a file as a
 * secret (the password, the HTTP bearer token) is read here too.
 *
 * No message here shows a secret: the URI is shown with its password removed
 * (ik__uri_redact), and a secret file's errors name the file, never its text. */
#include "cli.h"

#include "../lib/rules.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

int ik__cli_open_coord_as(const ik_cli_command *cmd, const ik_cli_opts *o, int check_only,
                          ik_coord **c)
{
    ik_coord_options co;
    ik__cli_store_args args;
    char why[512] = "", shown[512];
    const char *uri = o->v[IK_OPT_COORD].text;
    ik__uri_redact(uri, shown, sizeof shown);
    if (ik__cli_coord_options(o, &co, &args, why, sizeof why) != 0) {
        ik__cli_store_args_wipe(&args);
        ik__cli_fail(cmd, "%s", why);
        return IK_EXIT_USAGE;
    }
    co.check_only = check_only;
    int err = ik_coord_open(uri, &co, c, why, sizeof why);
    ik__cli_store_args_wipe(&args);
    if (err) {
        ik__cli_fail(cmd, "cannot open %s: %s", shown, why[0] ? why : ik_strerror(err));
        return err == IK_EURI ? IK_EXIT_USAGE : IK_EXIT_FAIL;
    }
    return 0;
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
