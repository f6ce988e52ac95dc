/* cmd_semaphore.c: `idkeeper semaphore PATH --max N -- CMD [ARG...]`: runs CMD while
 * holding one of the N leases of the semaphore at PATH (docs/guarantees.md promise
 * 28), and stops it if the lease is lost; `idkeeper semaphore --list PATH` prints
 * the leases held. A lease is held, waited for and given back as `lock` holds a
 * lock (hold_take.c: the same states, the same grace, the same supervise loop); on
 * zk:// --semaphore-layout picks the peer whose nodes it joins (docs/recipes.md,
 * "Semaphores"). */
#include "cli.h"
#include "hold_run.h"
#include "output.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int sema_acquire(void *h, int64_t timeout_ms, int64_t *fence)
{
    return ik_semaphore_acquire(h, timeout_ms, fence);
}

static int sema_release(void *h)
{
    return ik_semaphore_release(h);
}

static void sema_cancel(void *h)
{
    ik_semaphore_cancel(h);
}

static void sema_info(void *h, ik_hold_info *out)
{
    ik_semaphore_get_info(h, out);
}

static int64_t sema_until(void *h)
{
    return ik_semaphore_trusted_until(h);
}

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

static int print_json(const ik_cli_opts *o, const char *uri, int64_t max,
                      const ik_semaphore_holder *h, size_t n)
{
    json_t *held = json_array();
    for (size_t i = 0; held && i < n; i++) {
        json_t *one = json_pack("{s:o,s:I,s:o,s:o}", "node", ik__cli_json_text(h[i].node), "fence",
                                (json_int_t)h[i].fence, "session", ik__cli_json_text(h[i].session),
                                "data", ik__cli_json_text(h[i].data));
        if (json_array_append_new(held, one) != 0) {
            json_decref(held);
            held = NULL;
        }
    }
    return ik__cli_json_print(stdout,
                              json_pack("{s:o,s:o,s:o,s:I,s:o}", "coord", ik__cli_json_text(uri),
                                        "path", ik__cli_json_text(o->args[0]), "layout",
                                        ik__cli_json_text(o->v[IK_OPT_SEMAPHORE_LAYOUT].text),
                                        "max", (json_int_t)max, "held", held));
}

/* --list: the stored max and the leases held, as a table or JSON. */
static int list(const ik_cli_command *cmd, ik_cli_opts *o)
{
    if (o->nargs != 1 || o->rest >= 0) {
        ik__cli_fail(cmd, "--list takes one PATH and no command (usage: idkeeper %s)", cmd->usage);
        return IK_EXIT_USAGE;
    }
    ik_coord *c = NULL;
    int err = ik__cli_open_coord(cmd, o, &c);
    if (err) return err;
    int64_t max = 0;
    ik_semaphore_holder *h = NULL;
    size_t n = 0;
    err = ik__cli_locks_offered(cmd, c);
    if (err) return err; /* c closed */
    err = ik_semaphore_holders(c, o->args[0], (ik_semaphore_layout)o->v[IK_OPT_SEMAPHORE_LAYOUT].n,
                               &max, &h, &n);
    int rc = IK_EXIT_OK;
    if (err) {
        ik__cli_fail(cmd, "cannot list the leases of the semaphore at %s on %s: %s", o->args[0],
                     ik_coord_uri(c), ik_strerror(err));
        rc = err == IK_EINVAL || err == IK_EURI ? IK_EXIT_USAGE : IK_EXIT_FAIL;
    } else if (o->v[IK_OPT_JSON].n) {
        if (print_json(o, ik_coord_uri(c), max, h, n) != 0) {
            ik__cli_fail(cmd, "cannot write the leases to stdout");
            rc = IK_EXIT_FAIL;
        }
    } else {
        if (max)
            printf("semaphore %s: max %" PRId64 ", %zu held\n", o->args[0], max, n);
        else
            printf("semaphore %s: no max stored, %zu held\n", o->args[0], n);
        printf("%-20s  %-18s  %-40s  %s\n", "FENCE", "SESSION", "DATA", "NODE");
        for (size_t i = 0; i < n; i++)
            printf("%-20" PRId64 "  %-18s  %-40s  %s\n", h[i].fence, or_dash(h[i].session),
                   or_dash(h[i].data), h[i].node);
    }
    ik_free(h);
    ik_coord_close(c);
    return rc;
}

int ik__cmd_semaphore(const ik_cli_command *cmd, ik_cli_opts *o)
{
    if (o->v[IK_OPT_LIST].n) return list(cmd, o);
    if (!o->v[IK_OPT_MAX].text) {
        ik__cli_fail(cmd, "--max N is required: the most leases held at once (usage: idkeeper %s)",
                     cmd->usage);
        return IK_EXIT_USAGE;
    }
    ik_sup sup;
    memset(&sup, 0, sizeof sup);
    ik_coord *c;
    int64_t t0 = ik__sup_mono_ms();
    int rc = ik__cli_hold_begin(cmd, o, &sup, &c);
    if (rc) return rc;
    int64_t open_ms = ik__sup_mono_ms() - t0; /* not counted by --timeout (docs/cli.md) */
    const char *path = o->args[0];
    ik_semaphore_options so;
    ik_semaphore_options_init(&so);
    so.max = o->v[IK_OPT_MAX].n;
    so.layout = (ik_semaphore_layout)o->v[IK_OPT_SEMAPHORE_LAYOUT].n;
    so.on_change = ik__cli_take_on_change;
    so.on_proof = ik__cli_take_on_proof;
    so.ctx = &sup;
    ik_semaphore *s = NULL;
    int err = ik_semaphore_create(c, path, &so, &s);
    if (err == IK_EURI) { /* the locks are offered: the layout is not */
        ik__cli_fail(cmd,
                     "--semaphore-layout %s is a ZooKeeper layout: %s lays a semaphore out "
                     "one way (docs/recipes.md, \"Semaphores\")",
                     o->v[IK_OPT_SEMAPHORE_LAYOUT].text, ik_coord_uri(c));
        rc = IK_EXIT_USAGE;
    } else if (err) {
        ik__cli_fail(cmd,
                     "bad semaphore path '%s': %s (segments of printable bytes, no '.' or "
                     "'..', at most 390 bytes)",
                     path, ik_strerror(err));
        rc = IK_EXIT_USAGE;
    } else {
        char noun[600], e_max[64];
        snprintf(noun, sizeof noun, "a lease of the semaphore at %s", path);
        snprintf(e_max, sizeof e_max, "IDKEEPER_SEMAPHORE_MAX=%" PRId64, so.max);
        ik_cli_taker t = {noun,         "IDKEEPER_SEMAPHORE", e_max,     s,         sema_acquire,
                          sema_release, sema_cancel,          sema_info, sema_until};
        rc = ik__cli_take_and_run(cmd, o, &sup, c, open_ms, &t);
    }
    ik_semaphore_destroy(s);
    ik_coord_close(c);
    ik__sup_fini(&sup);
    return rc;
}
