/* fuzz_sql_uri.c: the SQL URI rule and the password's removal (sql_util.c), and the
 * postgresql:// check behind ik_coord_uri_check. Invariants: a refusal has a
 * reason; the URI with its password removed holds no ":PASSWORD@" and no
 * password item (ik__uri_query_password: its key decoded), and is accepted by the
 * rule whenever the URI was. */
#include "fuzz.h"
#include "idkeeper.h"
#include "rules.h"
#include "sql_driver.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *uri = malloc(size + 1);
    memcpy(uri, data, size);
    uri[size] = '\0';
    char why[256] = "";
    int ok = ik__sql_uri_check(uri, "postgresql", why, sizeof why) == 0;
    if (!ok && !why[0]) abort();
    char *pw = NULL;
    char *shown = ik__sql_uri_redact(uri, &pw);
    if (!shown) abort();
    const char *q = strchr(shown, '?'); /* no item of its query is a password */
    while (q) {
        q++;
        size_t n = strcspn(q, "&");
        if (ik__uri_query_password(q, n)) abort();
        q = q[n] ? q + n : NULL;
    }
    if (ok && ik__sql_uri_check(shown, "postgresql", why, sizeof why) != 0) abort();
    why[0] = '\0';
    if (ik_coord_uri_check(uri, why, sizeof why) != 0 && !why[0]) abort();
    free(shown);
    free(pw);
    free(uri);
    return 0;
}
