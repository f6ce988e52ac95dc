/* cmd_schema.c: `idkeeper schema --coord URI`, the SQL schema of a mysql:// or
 * postgresql:// store, printed without connecting (docs/sql.md). */
#include "cli.h"

#include "../lib/rules.h"
#include "idkeeper.h"

#include <stdio.h>

int ik__cmd_schema(const ik_cli_command *cmd, ik_cli_opts *o)
{
    int rc = ik__cli_no_args(cmd, o);
    if (rc != 0) return rc;
    const char *uri = o->v[IK_OPT_COORD].text;
    char *text = NULL, why[512] = "", shown[512];
    ik__uri_redact(uri, shown, sizeof shown);
    int err = ik_coord_schema(uri, &text, why, sizeof why);
    if (err) {
        ik__cli_fail(cmd, "%s: %s", shown, why[0] ? why : ik_strerror(err));
        return err == IK_EURI ? IK_EXIT_USAGE : IK_EXIT_FAIL;
    }
    fputs(text, stdout);
    ik_free(text);
    if (fflush(stdout) != 0) {
        ik__cli_fail(cmd, "cannot write to stdout");
        return IK_EXIT_FAIL;
    }
    return IK_EXIT_OK;
}
