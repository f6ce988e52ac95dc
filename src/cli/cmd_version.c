/* cmd_version.c: `idkeeper version`, the version of idkeeper, the backends it was
 * built with, and the libraries it links, as they report themselves at run time
 * where they can. The backends and each store's client library come from the
 * registry (ik__coord_uri_form, ik__coord_client_versions), so a build without a
 * backend leaves its lines out. */
#include "cli.h"

#include "idkeeper.h"
#include "http_framing.h"

#include "../lib/rules.h"

#include <uv.h>

#include <stdio.h>

int ik__cmd_version(const ik_cli_command *cmd, ik_cli_opts *o)
{
    int rc = ik__cli_no_args(cmd, o);
    if (rc != 0) return rc;
    char hp[64];
    ik__http_lib_version(hp, sizeof hp);
    printf("idkeeper %s\n", IK_VERSION_STRING);
    printf("libidkeeper %s\n", ik_version());
    /* the backends of this build, one a line, from the registry (the man pages'
     * lists are made from these lines at build time: man/backends.cmake) */
    for (size_t i = 0; ik__coord_uri_form(i); i++)
        printf("backend %s\n", ik__coord_uri_form(i));
    printf("libuv %s\n", uv_version_string());
    char clients[1024];
    ik__coord_client_versions(clients, sizeof clients);
    printf("%s", clients); /* the stores' clients: sqlite, zookeeper, libpq... */
    printf("%s\n", hp);
    if (fflush(stdout) != 0) {
        ik__cli_fail(cmd, "cannot write to stdout");
        return IK_EXIT_FAIL;
    }
    return IK_EXIT_OK;
}
