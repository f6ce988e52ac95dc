/* fuzz_cli_specs.h: the CLI's commands with their option sets (src/cli/commands.h,
 * the same definitions main.c's table uses), for the drivers of the option parser
 * (fuzz_cli.c, fuzz_config.c). */
#ifndef IK_FUZZ_CLI_SPECS_H
#define IK_FUZZ_CLI_SPECS_H

#include "commands.h"
#include "options.h"

#include <string.h>

#define FUZZ_NAME(name, opts) #name,
#define FUZZ_SPEC(name, opts) {#name, opts, fuzz_sections},

static const char *const fuzz_sections[] = {IK_CLI_COMMANDS(FUZZ_NAME) NULL};

static const ik_cli_spec fuzz_specs[] = {IK_CLI_COMMANDS(FUZZ_SPEC)};

#define FUZZ_NSPECS (sizeof fuzz_specs / sizeof fuzz_specs[0])

/* The spec of the command named name, or NULL. */
static inline const ik_cli_spec *fuzz_spec_find(const char *name)
{
    for (size_t i = 0; i < FUZZ_NSPECS; i++)
        if (strcmp(fuzz_specs[i].cmd, name) == 0) return &fuzz_specs[i];
    return NULL;
}

#endif
