/* output.h: pure helpers the commands share to read options into library types
 * and to format results (ISO times, JSON strings, server error bodies). */
#ifndef IK_CLI_OUTPUT_H
#define IK_CLI_OUTPUT_H

#include "idkeeper.h"
#include "options.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes Unix ms as ISO 8601 UTC with milliseconds ("2024-05-01T12:00:00.123Z")
 * into buf (at least 32 bytes). Returns buf. */
char *ik__cli_iso_ms(int64_t ms, char *buf, size_t len);

/* Writes s to f as a JSON string, quotes included, escaping what JSON requires. */
void ik__cli_json_string(FILE *f, const char *s);

/* Finds the string value of "key" at the top level of a small JSON object and
 * copies it, unescaped (\uXXXX outside ASCII becomes '?'), into out. Returns 0,
 * or -1 if there is no such string. Not a validating parser: for error bodies. */
int ik__cli_json_get_string(const char *json, size_t len, const char *key, char *out,
                            size_t out_len);

/* Finds the first "key": <non-negative integer> anywhere in a JSON text (nested
 * objects included) and stores the integer. Returns 0, or -1 if there is none. */
int ik__cli_json_get_u64(const char *json, size_t len, const char *key, uint64_t *out);

/* The server's --max-batch from the body of its GET /v1/status: the "max_batch" of
 * its "http" object. Returns it, or -1 if the body does not say. */
int64_t ik__cli_status_max_batch(const char *body, size_t len);

/* Builds the ID layout from the options: the library default, then --layout,
 * then --epoch, then --worker-range (each only if the command takes it and it
 * has a value). Returns 0, or -1 with "SOURCE: reason" in why. Does not call
 * ik_layout_check(). */
int ik__cli_layout_from_opts(const ik_cli_opts *o, ik_layout *l, char *why, size_t why_len);

/* Names where the layout's parts came from ("--layout, IDKEEPER_EPOCH",
 * "c.ini:3", or "the default layout" if none was set) into buf; returns buf. */
const char *ik__cli_layout_sources(const ik_cli_opts *o, char *buf, size_t len);

#endif
