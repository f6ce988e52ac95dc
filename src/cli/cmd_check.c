/* cmd_check.c: `idkeeper check`, the store's hazard checks as a table: every
 * setting of the store that could lose an acknowledged write, a lease or a lock,
 * what was found and what to change (docs/hazards.md). It opens the store as serve
 * does, but with check_only, so that a refused setting is reported, not fatal. */
#include "cli.h"
#include "output.h"

#include <stdio.h>

int ik__cmd_check(const ik_cli_command *cmd, ik_cli_opts *o)
{
    int rc = ik__cli_no_args(cmd, o);
    if (rc != 0) return rc;
    ik_coord *c = NULL;
    int err = ik__cli_open_coord_as(cmd, o, 1, &c);
    if (err != 0) return err;
    ik_hazard *rows = NULL;
    size_t n = 0;
    char why[512] = "";
    err = ik_coord_check(c, &rows, &n, why, sizeof why);
    if (err != 0) {
        ik__cli_fail(cmd, "cannot check %s: %s", ik_coord_uri(c), why[0] ? why : ik_strerror(err));
        ik_coord_close(c);
        return IK_EXIT_FAIL;
    }
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= rows[i].verdict == IK_VERDICT_OK;
    if (o->v[IK_OPT_JSON].n) {
        if (ik__cli_json_print(stdout, ik__cli_hazard_json(ik_coord_uri(c), rows, n)) != 0)
            err = -1;
    } else {
        ik__cli_hazard_table(stdout, rows, n);
    }
    ik_free(rows);
    ik_coord_close(c);
    if (err != 0 || fflush(stdout) != 0) {
        ik__cli_fail(cmd, "cannot write to stdout");
        return IK_EXIT_FAIL;
    }
    return ok ? IK_EXIT_OK : IK_EXIT_UNSAFE;
}
