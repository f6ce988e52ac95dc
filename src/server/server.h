/* server.h: the idkeeper daemon (`idkeeper serve`: HTTP/1.1, and the Redis protocol
 * with --resp, over libidkeeper) as the CLI sees it, and all it sees: the CLI fills
 * an ik_server_config from flags, environment and the config file, and calls
 * ik_server_run(). The daemon's own files share the headers below it (worker.h and
 * the headers of the files they call: docs/architecture.md, src/server). */
#ifndef IK_SERVER_H
#define IK_SERVER_H

#include "config.h" /* ik_server_config, ik_server_config_init */
#include "idkeeper.h"

/* Runs the daemon until SIGTERM, SIGINT or SIGHUP. Returns the process exit code: 0 after a
 * clean shutdown, non-zero (with a one-line reason on stderr) if it cannot start. */
int ik_server_run(const ik_server_config *c);

#endif
