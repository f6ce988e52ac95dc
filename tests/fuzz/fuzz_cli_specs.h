/* fuzz_cli_specs.h: the option sets of the CLI's commands, as the rows of src/cli/main.c
 * give them, for the drivers of the option parser (fuzz_cli.c, fuzz_config.c). main.c
 * holds main() and cannot be linked into a driver, so the sets are repeated here; a
 * set that drifts from main.c still fuzzes the parser, just not that command's mix. */
#ifndef IK_FUZZ_CLI_SPECS_H
#define IK_FUZZ_CLI_SPECS_H

#include "options.h"

#include <string.h>

#define FB(id) IK_OPT_BIT(IK_OPT_##id)
#define FUZZ_COORD_OPTS (FB(CONFIG) | FB(COORD) | FB(APP) | FB(ZK_SESSION_TIMEOUT) | FB(ZK_AUTH))

static const char *const fuzz_sections[] = {"serve", "next",    "decode", "workers",
                                            "tags",  "version", "help",   NULL};

static const ik_cli_spec fuzz_specs[] = {
    {"serve",
     FUZZ_COORD_OPTS | FB(HTTP) | FB(IDENTITY) | FB(WORKER_RANGE) | FB(LAYOUT) | FB(EPOCH) |
         FB(SLOT_CHOICE) | FB(MAX_BATCH) | FB(MAX_BACKWARD) | FB(THREADS) | FB(MAX_HEADER_BYTES) |
         FB(IDLE_TIMEOUT) | FB(READ_TIMEOUT) | FB(MAX_CONNECTIONS) | FB(HTTP_TOKEN_FILE) |
         FB(QUIET) | FB(SHUTDOWN_TIMEOUT),
     fuzz_sections},
    {"next", FB(CONFIG) | FB(SERVER) | FB(COUNT) | FB(BATCH), fuzz_sections},
    {"decode", FB(CONFIG) | FB(LAYOUT) | FB(EPOCH) | FB(JSON) | FB(EXPIRY), fuzz_sections},
    {"workers", FUZZ_COORD_OPTS | FB(JSON), fuzz_sections},
    {"tags", FUZZ_COORD_OPTS | FB(KIND) | FB(START) | FB(STEP) | FB(DESCRIPTION) | FB(JSON),
     fuzz_sections},
    {"version", 0, fuzz_sections},
    {"help", 0, fuzz_sections},
};

#define FUZZ_NSPECS (sizeof fuzz_specs / sizeof fuzz_specs[0])

/* The spec of the command named name, or NULL. */
static inline const ik_cli_spec *fuzz_spec_find(const char *name)
{
    for (size_t i = 0; i < FUZZ_NSPECS; i++)
        if (strcmp(fuzz_specs[i].cmd, name) == 0) return &fuzz_specs[i];
    return NULL;
}

#endif
