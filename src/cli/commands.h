/* commands.h: the option set of each command, by name. main.c's command table and
 * the fuzz drivers of the option parser (tests/fuzz) both read them here, so a
 * fuzzer always parses with the sets the CLI really has. */
#ifndef IK_CLI_COMMANDS_H
#define IK_CLI_COMMANDS_H

#include "options.h"

#define IK_B(id) IK_OPT_BIT(IK_OPT_##id)

/* Options every command that opens the backend takes (ik__cli_coord_options reads
 * them), the backends' store options among them. */
#define IK_STORE_OPTS                                                                              \
    (IK_B(CONFIG) | IK_B(COORD) | IK_B(PASSWORD) | IK_B(PASSWORD_FILE) | IK_B(LEASE_TTL) |         \
     IK_B(ALLOW_UNSAFE_STORE) | IK_OPT_STORE_BITS)
/* ... and those of the commands that work in one app. */
#define IK_COORD_OPTS (IK_STORE_OPTS | IK_B(APP))

#define IK_OPTS_SERVE                                                                              \
    (IK_COORD_OPTS | IK_B(HTTP) | IK_B(IDENTITY) | IK_B(WORKER_RANGE) | IK_B(LAYOUT) |             \
     IK_B(EPOCH) | IK_B(SLOT_CHOICE) | IK_B(SLOT_WAIT) | IK_B(MAX_BATCH) | IK_B(MAX_BACKWARD) |    \
     IK_B(THREADS) | IK_B(MAX_HEADER_BYTES) | IK_B(IDLE_TIMEOUT) | IK_B(READ_TIMEOUT) |            \
     IK_B(MAX_CONNECTIONS) | IK_B(HTTP_TOKEN_FILE) | IK_B(OPEN_LEAF_ROUTES) | IK_B(OPEN_METRICS) | \
     IK_B(QUIET) | IK_B(SHUTDOWN_TIMEOUT) | IK_B(RESP) | IK_B(LOG_SEQUENCE_COMMITS) |              \
     IK_B(LEAF_NAME) | IK_B(LEAF_TAKEOVER) | IK_B(SEMAPHORES))
#define IK_OPTS_NEXT                                                                               \
    (IK_B(CONFIG) | IK_B(SERVER) | IK_B(COUNT) | IK_B(BATCH) | IK_B(HTTP_TOKEN_FILE))
#define IK_OPTS_DECODE (IK_B(CONFIG) | IK_B(LAYOUT) | IK_B(EPOCH) | IK_B(JSON) | IK_B(EXPIRY))
#define IK_OPTS_WORKERS (IK_COORD_OPTS | IK_B(JSON) | IK_B(LEAF_NAME))
#define IK_OPTS_TAGS                                                                               \
    (IK_COORD_OPTS | IK_B(KIND) | IK_B(START) | IK_B(STEP) | IK_B(DESCRIPTION) | IK_B(JSON))
#define IK_OPTS_LOCK (IK_STORE_OPTS | IK_B(TIMEOUT) | IK_B(GRACE) | IK_B(CONTAIN))
#define IK_OPTS_ELECT (IK_STORE_OPTS | IK_B(ID) | IK_B(ONCE) | IK_B(GRACE) | IK_B(CONTAIN))
#define IK_OPTS_SEMAPHORE                                                                          \
    (IK_OPTS_LOCK | IK_B(MAX) | IK_B(SEMAPHORE_LAYOUT) | IK_B(LIST) | IK_B(JSON))
#define IK_OPTS_SCHEMA (IK_B(CONFIG) | IK_B(COORD))
#define IK_OPTS_CHECK (IK_STORE_OPTS | IK_B(JSON))
#define IK_OPTS_VERSION 0
#define IK_OPTS_HELP 0

/* X(name, OPTIONS) for every command, in the order of `idkeeper help`. */
#define IK_CLI_COMMANDS(X)                                                                         \
    X(serve, IK_OPTS_SERVE)                                                                        \
    X(next, IK_OPTS_NEXT)                                                                          \
    X(decode, IK_OPTS_DECODE)                                                                      \
    X(workers, IK_OPTS_WORKERS)                                                                    \
    X(tags, IK_OPTS_TAGS)                                                                          \
    X(lock, IK_OPTS_LOCK)                                                                          \
    X(elect, IK_OPTS_ELECT)                                                                        \
    X(semaphore, IK_OPTS_SEMAPHORE)                                                                \
    X(schema, IK_OPTS_SCHEMA)                                                                      \
    X(check, IK_OPTS_CHECK)                                                                        \
    X(version, IK_OPTS_VERSION)                                                                    \
    X(help, IK_OPTS_HELP)

#endif
