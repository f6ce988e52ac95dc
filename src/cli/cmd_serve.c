/* cmd_serve.c: `idkeeper serve`, the options into an ik_server_config, checked,
 * then the daemon (src/server) until SIGTERM or SIGINT. */
#include "cli.h"
#include "httpc.h"
#include "output.h"
#include "server.h"

#include "../lib/rules.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The option has a value: set by the user, or the option table's default (which
 * `idkeeper serve --help` shows). Options without either keep the server's. */
static int given(const ik_cli_opts *o, ik_cli_opt_id id)
{
    return o->v[id].text != NULL;
}

/* --semaphores: "[kazoo:|curator:]PATH,..." into paths and layouts, each path
 * normalized by the recipes' rule (buf holds them). 0, or -1 with why. */
static int semaphores_from(const char *list, char *buf, size_t len, const char **paths,
                           ik_semaphore_layout *layouts, int *n, char *why, size_t why_len)
{
    *n = 0;
    size_t used = 0;
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        char item[IK__RECIPE_PATH_MAX + 16];
        if (k == 0 || k >= sizeof item) {
            ik__cli_why(why, why_len, "--semaphores: %s item in '%.64s'",
                        k ? "a path too long" : "an empty", list);
            return -1;
        }
        memcpy(item, p, k);
        item[k] = '\0';
        const char *path = item;
        ik_semaphore_layout layout = IK_SEMAPHORE_CURATOR;
        if (strncmp(item, "kazoo:", 6) == 0) {
            layout = IK_SEMAPHORE_KAZOO;
            path += 6;
        } else if (strncmp(item, "curator:", 8) == 0) {
            path += 8;
        }
        char norm[IK__RECIPE_PATH_MAX + 2], w[160];
        if (*n == IK_SERVER_SEMAPHORES_MAX) {
            ik__cli_why(why, why_len, "--semaphores: more than %d semaphores",
                        IK_SERVER_SEMAPHORES_MAX);
            return -1;
        }
        if (ik__recipe_path(path, norm, sizeof norm, w, sizeof w) != 0) {
            ik__cli_why(why, why_len, "--semaphores: '%.64s': %s", path, w);
            return -1;
        }
        size_t nl = strlen(norm) + 1;
        if (used + nl > len) {
            ik__cli_why(why, why_len, "--semaphores: too long");
            return -1;
        }
        memcpy(buf + used, norm, nl);
        paths[*n] = buf + used;
        layouts[*n] = layout;
        (*n)++;
        used += nl;
        p += k;
        if (*p == ',') p++;
    }
    return 0;
}

int ik__cmd_serve(const ik_cli_command *cmd, ik_cli_opts *o)
{
    int rc = ik__cli_no_args(cmd, o);
    if (rc != 0) return rc;
    ik_server_config c;
    ik_server_config_init(&c);

    char why[512] = "";
    if (ik__cli_layout_from_opts(o, &c.layout, why, sizeof why) != 0) {
        ik__cli_fail(cmd, "%s", why);
        return IK_EXIT_USAGE;
    }
    if (ik_layout_check(&c.layout, wall_ms(), why, sizeof why) != 0) {
        char spec[256], from[256];
        ik_layout_format(&c.layout, spec, sizeof spec);
        ik__cli_fail(cmd, "layout from %s (%s): %s", ik__cli_layout_sources(o, from, sizeof from),
                     spec, why);
        return IK_EXIT_USAGE;
    }
    if (given(o, IK_OPT_COORD)) c.coord_uri = o->v[IK_OPT_COORD].text;
    if (given(o, IK_OPT_APP)) c.app = o->v[IK_OPT_APP].text;
    if (given(o, IK_OPT_HTTP)) c.http_addr = o->v[IK_OPT_HTTP].text;
    if (given(o, IK_OPT_RESP)) c.resp_addr = o->v[IK_OPT_RESP].text;
    if (given(o, IK_OPT_IDENTITY)) c.identity = o->v[IK_OPT_IDENTITY].text;
    if (given(o, IK_OPT_SLOT_CHOICE))
        c.slot_choice = o->v[IK_OPT_SLOT_CHOICE].n == 1 ? IK_SLOT_LOWEST : IK_SLOT_RANDOM;
    if (given(o, IK_OPT_SLOT_WAIT)) c.slot_wait_ms = o->v[IK_OPT_SLOT_WAIT].n;
    if (given(o, IK_OPT_MAX_BATCH)) c.max_batch = (uint32_t)o->v[IK_OPT_MAX_BATCH].n;
    if (given(o, IK_OPT_MAX_BACKWARD)) c.max_backward_ms = o->v[IK_OPT_MAX_BACKWARD].n;
    ik__cli_store_args args; /* lives as long as the server: c.coord points into it */
    if (ik__cli_coord_options(o, &c.coord, &args, why, sizeof why) != 0) {
        ik__cli_fail(cmd, "%s", why);
        return IK_EXIT_USAGE;
    }
    if (given(o, IK_OPT_THREADS)) c.threads = (int)o->v[IK_OPT_THREADS].n;
    if (given(o, IK_OPT_MAX_HEADER_BYTES))
        c.max_header_bytes = (uint32_t)o->v[IK_OPT_MAX_HEADER_BYTES].n;
    if (given(o, IK_OPT_IDLE_TIMEOUT)) c.idle_timeout_ms = (int)o->v[IK_OPT_IDLE_TIMEOUT].n;
    if (given(o, IK_OPT_READ_TIMEOUT)) c.read_timeout_ms = (int)o->v[IK_OPT_READ_TIMEOUT].n;
    if (given(o, IK_OPT_MAX_CONNECTIONS)) c.max_connections = (int)o->v[IK_OPT_MAX_CONNECTIONS].n;
    char token[512];
    if (given(o, IK_OPT_HTTP_TOKEN_FILE) && *o->v[IK_OPT_HTTP_TOKEN_FILE].text) {
        if (ik__cli_read_secret(o->v[IK_OPT_HTTP_TOKEN_FILE].text, "token", token, sizeof token,
                                why, sizeof why) != 0) {
            ik__cli_fail(cmd, "--http-token-file: %s", why);
            return IK_EXIT_USAGE;
        }
        c.http_token = token;
    }
    c.open_leaf_routes = (int)o->v[IK_OPT_OPEN_LEAF_ROUTES].n;
    c.open_metrics = (int)o->v[IK_OPT_OPEN_METRICS].n;
    if (given(o, IK_OPT_SHUTDOWN_TIMEOUT))
        c.shutdown_timeout_ms = (int)o->v[IK_OPT_SHUTDOWN_TIMEOUT].n;
    if (given(o, IK_OPT_QUIET)) c.quiet = (int)o->v[IK_OPT_QUIET].n;
    c.log_sequence_commits = (int)o->v[IK_OPT_LOG_SEQUENCE_COMMITS].n;
    char sema_buf[IK_SERVER_SEMAPHORES_MAX * (IK__RECIPE_PATH_MAX + 2)];
    const char *sema_paths[IK_SERVER_SEMAPHORES_MAX];
    ik_semaphore_layout sema_layouts[IK_SERVER_SEMAPHORES_MAX];
    if (given(o, IK_OPT_SEMAPHORES)) {
        if (semaphores_from(o->v[IK_OPT_SEMAPHORES].text, sema_buf, sizeof sema_buf, sema_paths,
                            sema_layouts, &c.nsemaphores, why, sizeof why) != 0) {
            ik__cli_fail(cmd, "%s", why);
            return IK_EXIT_USAGE;
        }
        c.semaphores = sema_paths;
        c.semaphore_layouts = sema_layouts;
    }

    if (!c.coord_uri || ik_coord_uri_check(c.coord_uri, why, sizeof why) != 0) {
        char shown[512];
        ik__cli_fail(cmd, "--coord %s: %s",
                     c.coord_uri ? ik__uri_redact(c.coord_uri, shown, sizeof shown) : "(none)",
                     why);
        return IK_EXIT_USAGE;
    }
    fflush(stdout);
    return ik_server_run(&c);
}
