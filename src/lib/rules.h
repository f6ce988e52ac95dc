/* rules.h: the rules the library, the daemon and the CLI must agree on, written once.
 *
 * Each rule is one function here, built into libidkeeper (hidden in the .so, linked
 * from the static library by the `idkeeper` binary), so that the daemon and the CLI
 * cannot drift from the library or from each other:
 *
 *   - ISO 8601 time text (the library's messages, the HTTP and RESP answers, the CLI);
 *   - app names (every library entry point that takes an app, the CLI's --app);
 *   - recipe paths (every lock, election and semaphore; the daemon's --semaphores);
 *   - listen addresses (the daemon's --http/--resp, checked early by the CLI);
 *   - the password taken out of a URI before anything shows it;
 *   - the client libraries of the build's stores (`idkeeper version`);
 *   - a backend's store options: their row and its check (the library takes them
 *     from URIs and options, the CLI makes them its --FAMILY-NAME options).
 *
 * This is the only header of src/lib that src/server and src/cli include (as
 * "../lib/rules.h"); everything else they use is include/idkeeper.h. Pure functions:
 * no allocation, no global state, safe from any thread.
 */
#ifndef IK_RULES_H
#define IK_RULES_H

#include <stddef.h>
#include <stdint.h>

/* ---- ISO 8601 ------------------------------------------------------------------ */

/* Room ik__fmt_iso8601 needs, the NUL included: the longest text is that of
 * INT64_MIN ms, "-292275055-05-16T16:47:04.192Z" (30 bytes). */
#define IK__ISO8601_SIZE 32

/* Writes Unix ms as ISO 8601 UTC with milliseconds, proleptic Gregorian calendar,
 * into out (at least IK__ISO8601_SIZE bytes) and returns its length (24 for years
 * 0000 to 9999).
 *
 * Never fails: every int64 has a text. Years 0000..9999 are written with four
 * digits ("2010-11-04T01:42:54.657Z"); years outside that range in ISO 8601's
 * expanded form, a sign and at least six digits, as JavaScript's
 * Date.prototype.toISOString writes them ("+275760-09-13T00:00:00.000Z",
 * "-000001-12-31T23:59:59.999Z": astronomical years, -000001 is 2 BC). Computed
 * with integer arithmetic, not gmtime(3), so a 32-bit time_t cannot make it fail. */
size_t ik__fmt_iso8601(char *out, int64_t unix_ms);

/* ---- app names ------------------------------------------------------------------ */

/* The longest app name, in bytes. */
#define IK__APP_NAME_MAX 64
/* The rule in words, for messages. */
#define IK__APP_NAME_RULE "1 to 64 bytes of [A-Za-z0-9._:-], not . or .."

/* An app name: 1 to IK__APP_NAME_MAX bytes of [A-Za-z0-9._:-], and neither "." nor
 * ".." (an app is a directory under local:DIR and a znode on zk://). NULL is not a
 * name (callers that default NULL to "default" do so first). Returns 0, or
 * IK_EINVAL with "app name must be " IK__APP_NAME_RULE in why (if why_len > 0). */
int ik__app_name_check(const char *app, char *why, size_t why_len);

/* ---- recipe paths ----------------------------------------------------------------- */

/* The longest recipe path, in bytes (a lock's, an election's, a semaphore's). */
#define IK__RECIPE_PATH_MAX 400

/* Checks and normalizes a recipe path into out ("/a/b": '/'-separated segments of
 * printable bytes, no empty segment, no "." or "..", not ZooKeeper's own /zookeeper,
 * at most IK__RECIPE_PATH_MAX bytes; a missing leading '/' added). 0 or IK_EINVAL
 * with a reason in why. */
int ik__recipe_path(const char *path, char *out, size_t out_len, char *why, size_t why_len);

/* ---- listen addresses ------------------------------------------------------------ */

/* Splits a listen address into host and port:
 *
 *   HOST:PORT     a host name or an IPv4 address ("127.0.0.1:8080")
 *   [V6]:PORT     an IPv6 address in brackets ("[::1]:8080", "[::]:8080")
 *   :PORT         every IPv4 address (as 0.0.0.0:PORT)
 *
 * PORT is decimal 0..65535; 0 asks the kernel for any free port (the daemon logs
 * and shows the port it got). host gets the host without brackets, "" for :PORT.
 * Returns 0, or -1 with a one-line reason in why; host and *port are set only on
 * success. */
int ik__parse_listen(const char *addr, char *host, size_t host_len, int *port, char *why,
                     size_t why_len);

/* ---- URIs that may carry a password ---------------------------------------------- */

/* The userinfo of a URI, one rule for every backend that reads one (postgresql://,
 * mysql://, redis://; docs/configuration.md, "Passwords in a URI"): after
 * "SCHEME://", the authority runs to the first '/' (or the end); its last '@' ends
 * the userinfo; the first ':' in the userinfo ends the user, and the password
 * follows it. So a password may hold '@', ':', '?' and '#' as they are, and a '/'
 * only as %2F; both parts are percent-decoded (ik__pct_decode), as psql does
 * ("p%40ss" is "p@ss"). Returns the '@' (NULL: no userinfo) and sets *colon to the
 * ':' before the password (NULL: none). */
const char *ik__uri_userinfo(const char *uri, const char **colon);

/* The value of the hex digit c (0-9, a-f, A-F), or -1. */
int ik__hexval(int c);

/* Percent-decodes the n bytes at s into out (cap bytes, NUL-terminated): the one
 * percent-decoder of the tree (URIs' userinfo here, HTTP path segments in the
 * daemon). Returns the length, or -1 for a bad escape ('%' not followed by two hex
 * digits), a NUL byte (escaped or not: no decoded name or password holds one), or a
 * result that does not fit. */
long ik__pct_decode(const char *s, size_t n, char *out, size_t cap);

/* If the query item item[0..len) ("KEY=VALUE", without its '&') gives a password,
 * its value (inside item); else NULL. Its key is percent-decoded before it is
 * compared, case aside, with "password", as libpq decodes it ("%70assword=x" is a
 * password), or "auth" (the name of every USER:PASSWORD store option, below); a key
 * holding a '%' that does not decode counts as one too. The one
 * rule of every reading and every redaction of a password in a query. */
const char *ik__uri_query_password(const char *item, size_t len);

/* Copies uri into out (out_len bytes, truncated and NUL-terminated) with every
 * password it carries replaced by "***", so that a message, a log line or a status
 * answer can show it:
 *
 *   - the password of a userinfo, "SCHEME://USER:PASSWORD@HOST..." (ik__uri_userinfo:
 *     the same rule as the parsers', so '#', '?' or '@' in it change nothing);
 *   - in a URI with no userinfo by that rule but an '@' before its query (a
 *     password holding a '/', which the parsers refuse), everything from "://" to
 *     that '@';
 *   - the value of every password query parameter ("...?password=x&...", libpq
 *     accepts it; its key decoded first: ik__uri_query_password), to the next '&'
 *     or the end, a '#' in it included.
 *
 * A URI without either is copied as it is. Never fails; returns out. The one rule
 * for every URI the library, the daemon and the CLI show (docs/guarantees.md promise 26: passwords
 * never in a log, a status answer or an error message). */
char *ik__uri_redact(const char *uri, char *out, size_t out_len);

/* coord.c: the URI form of the registry's backend i ("zk://HOST:PORT..."), in the
 * registry's order, NULL past the last: the backends of this build, as `idkeeper
 * version`, `serve --help` and the man pages list them. */
const char *ik__coord_uri_form(size_t i);
/* coord.c: every form, "A, B or C", into buf (cut short if buf is). */
void ik__coord_uri_forms(char *buf, size_t len);
/* coord.c: when a dead holder's slot frees on each backend of this build, from the
 * rows (backend.h, slot_frees_after), into buf (cut short if buf is): with
 * lease_ttl_only, the schemes whose slots are leases of --lease-ttl ("mysql://,
 * etcd://"); else every backend by what its slot frees after, and what --slot-wait
 * waits by default there (that plus 2000, or 0), "zk:// the session timeout + 2000;
 * mysql://, etcd:// --lease-ttl + 2000; local: 0". */
void ik__coord_slot_frees(char *buf, size_t len, int lease_ttl_only);
/* coord.c: the schemes of this build's backends that log in with a password (their
 * rows' takes_password), "mysql://, redis://", into buf (cut short if buf is). */
void ik__coord_password_schemes(char *buf, size_t len);

/* coord.c: the client libraries of this build's backends, "NAME VERSION\n" a line
 * (each once: two schemes can share one), into buf, from each backend's ops table.
 * Truncated at a line's end if buf is short. */
void ik__coord_client_versions(char *buf, size_t len);

/* ---- store options (docs/configuration.md, "Store options") ------------------------
 *
 * A backend's own settings (a ZooKeeper session timeout, a Redis WAIT count) are rows
 * of one table in its ops table (backend.h), not fields of the public options: coord.c
 * reads them from the URI's query ("zk://h:2181/app?session-timeout=4000") or from
 * ik_coord_options.store_options ("session-timeout=4000"), checks them by the row and
 * hands them to the backend's open; the CLI makes each row an option --FAMILY-NAME
 * (IDKEEPER_FAMILY_NAME, config key FAMILY-NAME) and prints its help from it; and
 * tests/tools/docs_code.py writes the rows of the man pages and configuration.md from
 * the tables in the source. A new backend's options touch nothing outside its folder. */

/* What a value looks like. A new shape is a case of ik__store_option_check. */
typedef enum ik__store_shape {
    IK__STORE_INT,      /* decimal digits (no sign) in [min, max] */
    IK__STORE_USERPASS, /* USER:PASSWORD with a non-empty user: a secret, never shown; in
                           a URI's query its key must be one ik__uri_query_password knows */
} ik__store_shape;

typedef struct ik__store_option {
    const char *family; /* the CLI's prefix, "zk", "redis" (both redis schemes share it) */
    const char *name;   /* "session-timeout": the query key, and the CLI's --FAMILY-NAME */
    ik__store_shape shape;
    int64_t min, max;    /* IK__STORE_INT's bounds */
    const char *def;     /* the default as text (the backend applies it), NULL: none */
    const char *metavar; /* "MS", "N", "USER:PASSWORD" */
    const char *help;    /* one line, for help, the man pages and configuration.md */
    size_t legacy;       /* offsetof the deprecated ik_coord_options field it was (still
                            honoured where the option is not given otherwise), or 0 */
} ik__store_option;

/* Checks text as a value of op: 0, or -1 with a one-line reason in why that never
 * holds a secret's text (store_options.c). */
int ik__store_option_check(const ik__store_option *op, const char *text, char *why, size_t why_len);

/* coord.c: the store options of this build's backends, each row once (two schemes
 * may share a table), in the registry's order: the i-th, NULL past the last. */
const ik__store_option *ik__coord_store_option(size_t i);
/* coord.c: 1 if op is an option of the backend that uri's scheme names, else 0. */
int ik__coord_store_option_of(const char *uri, const ik__store_option *op);

/* Makes room for one more element in a growable array: if n == *cap, doubles *cap
 * (at least `first`) and reallocates *v. 0, or IK_ENOMEM with *v unchanged. The one
 * growth step of the tree (alloc.c): the library answers IK_ENOMEM, the daemon
 * aborts (ik__oom), the CLI says "out of memory". */
int ik__grow(void **v, size_t *cap, size_t n, size_t elem, size_t first);

#endif
