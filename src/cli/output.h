/* output.h: pure helpers the commands share to read options into library types
 * and to read and write JSON (results, server answers). */
#ifndef IK_CLI_OUTPUT_H
#define IK_CLI_OUTPUT_H

#include "../lib/rules.h" /* ik__fmt_iso8601: one ISO 8601 text with the library */
#include "idkeeper.h"
#include "options.h"

#include <jansson.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* JSON goes through jansson, both ways. The functions that make a json_t return
 * a new reference, or NULL when out of memory. */

/* s as a JSON string. Bytes of s that are not UTF-8 become U+FFFD (the daemon's
 * JSON does the same), so the output is always valid JSON. */
json_t *ik__cli_json_text(const char *s);

/* Unix ms as an ISO 8601 JSON string (ik__fmt_iso8601, src/lib/rules.h). */
json_t *ik__cli_json_time(int64_t ms);

/* Writes v to f as one line of compact JSON ({"a":1,"b":"x"}, members in the
 * order they were added) and drops the reference to v. v NULL (a failed build)
 * writes nothing. Returns 0, or -1 if v was NULL or f failed. */
int ik__cli_json_print(FILE *f, json_t *v);

/* The string member "key" of a JSON object (a server's error body), copied into
 * out (cut at a UTF-8 character boundary to fit). Returns 0, or -1 if the text is
 * not a JSON object or has no such string at its top level. */
int ik__cli_json_get_string(const char *json, size_t len, const char *key, char *out,
                            size_t out_len);

/* The server's --max-batch from the body of its GET /v1/status: the "max_batch" of
 * its "http" object. Returns it, or -1 if the body does not say. */
int64_t ik__cli_status_max_batch(const char *body, size_t len);

/* `idkeeper check`'s table of store hazard verdicts (docs/hazards.md): a header
 * line (CHECK, VALUE, VERDICT, WHAT TO CHANGE), then one line per row, the columns
 * as wide as their widest cell, "-" for an empty fix. Writes to f. */
void ik__cli_hazard_table(FILE *f, const ik_hazard *rows, size_t n);

/* The same rows as one JSON object {"coord":URI,"ok":B,"checks":[{"check","value",
 * "verdict","fix"},...]}, ok true only when every verdict is ok; NULL when out of
 * memory. */
json_t *ik__cli_hazard_json(const char *uri, const ik_hazard *rows, size_t n);

/* Builds the ID layout from the options: the library default, then --layout,
 * then --epoch, then --worker-range (each only if the command takes it and it
 * has a value). Returns 0, or -1 with "SOURCE: reason" in why. Does not call
 * ik_layout_check(). */
int ik__cli_layout_from_opts(const ik_cli_opts *o, ik_layout *l, char *why, size_t why_len);

/* Names where the layout's parts came from ("--layout, IDKEEPER_EPOCH",
 * "c.ini:3", or "the default layout" if none was set) into buf; returns buf. */
const char *ik__cli_layout_sources(const ik_cli_opts *o, char *buf, size_t len);

#endif
