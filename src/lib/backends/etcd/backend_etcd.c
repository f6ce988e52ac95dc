/* backend_etcd.c: the etcd:// backend (etcd://HOST:PORT[,HOST:PORT...][/PREFIX],
 * etcds:// over TLS) as the seam sees it: its ops tables, and the open and close
 * that make and free its parts. The work is done below, each part in a file of its
 * own:
 *
 *   backend_etcd_slots.c  worker slots: keys on the server's lease, time records
 *   backend_etcd_tags.c   tags: revision-checked keys, a writer key per doubt lane
 *   recipe_etcd.c         locks and elections by etcd's own concurrency recipe
 *   etcd_hazards.c        the store hazard checks (docs/hazards.md, etcd)
 *   etcd_lease.c          the server's one etcd lease and its keepalive thread
 *   etcd_gateway.c        the client: typed calls on the v3 JSON gateway (libcurl)
 *   etcd_uri.c            the URI syntax (pure)
 *
 * Calls go one way: coord.c -> this file -> slots, recipe,
 * hazards -> lease -> gateway. docs/etcd.md has the key layout and the failure
 * model.
 */
#include "etcd_handle.h"
#include "internal.h"
#include "recipe.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void etcd_close(ik__backend *be)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    if (!b) return;
    if (b->gw) {
        ik__etcd_lease_stop(b, 1);
        ik__etcd_gw_free(b->gw);
    }
    pthread_mutex_destroy(&b->lease.mu);
    pthread_cond_destroy(&b->lease.cv);
    pthread_mutex_destroy(&b->hz_mu);
    pthread_mutex_destroy(&b->said_mu);
    ik__hazards_free(&b->base.hz);
    free(b);
}

/* Without ?user=, one read of the prefix at open: a cluster with auth on refuses it
 * ("user name is empty"), and the open fails naming that cause, rather than every
 * later call failing as an unreachable store (docs/etcd.md, "URI and options"). */
static int read_probe(ik__etcd_backend *b, char *why, size_t why_len)
{
    char key[sizeof b->prefix + 16];
    snprintf(key, sizeof key, "%sidkeeper/", b->prefix);
    ik__etcd_answer a = {0};
    char w[400] = "";
    int e = ik__etcd_range(b->gw, key, 1, 0, 0, 1, b->wait_ms * 3, &a, w, sizeof w);
    ik__etcd_answer_free(&a);
    if (!e) return IK_OK;
    if (e == IK_EINDOUBT) e = IK_ESTORE; /* a read applies nothing */
    return ik__fail(e, why, why_len,
                    "cannot read %s (no ?user= given: does etcd require a login?): %s", key, w);
}

static int etcd_open(const char *uri, const ik_coord_options *o, ik__backend **out, char *why,
                     size_t why_len)
{
    ik__etcd_backend *b = calloc(1, sizeof *b);
    if (!b) return IK_ENOMEM;
    b->base.ops = strncmp(uri, "etcds:", 6) == 0 ? &ik__backend_etcds_ops : &ik__backend_etcd_ops;
    pthread_mutex_init(&b->hz_mu, NULL);
    pthread_mutex_init(&b->said_mu, NULL);
    ik__etcd_lease_start(b);
    int e = ik__etcd_uri_parse(uri, &b->t, why, why_len);
    if (!e && ik__etcd_uri_format(&b->t, b->uri, sizeof b->uri) < 0)
        e = ik__fail(IK_EURI, why, why_len, "etcd URI too long");
    if (!e && b->t.prefix[0]) snprintf(b->prefix, sizeof b->prefix, "%s/", b->t.prefix);
    int64_t ttl = o->lease_ttl_ms > 0 ? o->lease_ttl_ms : 10000;
    if (!e && (ttl < 1000 || ttl > 3600000))
        e = ik__fail(IK_EINVAL, why, why_len, "--lease-ttl must be 1000-3600000 ms on etcd");
    b->ttl_ms = (ttl + 999) / 1000 * 1000; /* etcd's leases count whole seconds */
    b->wait_ms = ik__proof_slack_ms(b->ttl_ms);
    if (b->wait_ms < 300) b->wait_ms = 300;
    ik__hazards_init(&b->base.hz, o, b->ttl_ms, b->uri);
    if (!e) {
        ik__etcd_gw_config c = {.tls = b->t.tls, .n_endpoints = b->t.n};
        memcpy(c.endpoints, b->t.endpoints, sizeof c.endpoints);
        c.cacert = b->t.cacert[0] ? b->t.cacert : NULL;
        c.cert = b->t.cert[0] ? b->t.cert : NULL;
        c.key = b->t.key[0] ? b->t.key : NULL;
        c.user = b->t.user[0] ? b->t.user : NULL;
        c.password = o->password;
        if (c.password && !c.user)
            e = ik__fail(IK_EINVAL, why, why_len,
                         "a password for etcd needs a user: add ?user=NAME to the URI");
        if (!e) e = ik__etcd_gw_new(&c, &b->gw, why, why_len);
    }
    if (!e && !b->t.user[0]) e = read_probe(b, why, why_len);
    if (!e) {
        e = ik__etcd_hazards_check(&b->base, why, why_len);
        if (e == IK_EUNSAFE && o->check_only) e = IK_OK;
    }
    if (e) {
        etcd_close(&b->base);
        return e;
    }
    *out = &b->base;
    return IK_OK;
}

static const char *etcd_uri(const ik__backend *be)
{
    return ((const ik__etcd_backend *)be)->uri;
}

/* the TTL, and a second for etcd's leader to revoke an expired lease (its expiry
 * loop looks every half second, and the revoke is a raft proposal of its own) */
static int64_t etcd_slot_free_ms(ik__backend *be)
{
    return ik__etcd_of(be)->ttl_ms + 1000;
}

static void etcd_session(ik__backend *be, char *buf, size_t len)
{
    ik__etcd_lease *l = &ik__etcd_of(be)->lease;
    pthread_mutex_lock(&l->mu);
    if (l->id)
        snprintf(buf, len, "lease %" PRIx64 "%s", (uint64_t)l->id, l->gone ? " (gone)" : "");
    else if (len)
        buf[0] = '\0';
    pthread_mutex_unlock(&l->mu);
}

static void etcd_cut(ik__backend *be)
{
    ik__etcd_gw *g = ik__etcd_of(be)->gw;
    if (g) ik__etcd_gw_cut(g);
}

/* etcd's words for the latest slot record it refused or did not answer: the lease
 * says them beside its doubt (a NOSPACE alarm is not "unreachable"). */
static void etcd_last_error(ik__backend *be, char *buf, size_t len)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    pthread_mutex_lock(&b->said_mu);
    snprintf(buf, len, "%s", b->said);
    pthread_mutex_unlock(&b->said_mu);
}

static void etcd_client_version(char *buf, size_t len)
{
    curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    snprintf(buf, len, "libcurl %s", v ? v->version : "?");
}

#define ETCD_OPS(SCHEME, FORM, EXAMPLES)                                                           \
    {                                                                                              \
        .scheme = (SCHEME), .uri_form = (FORM), .uri_examples = (EXAMPLES), .takes_password = 1,   \
        .uri_check = ik__etcd_uri_check, .recipe = &ik__recipe_etcd_ops,                           \
        .uri_keys = "cacert, cert, key, user", .open = etcd_open, .close = etcd_close,             \
        .uri = etcd_uri, .slot_acquire = ik__etcd_slot_acquire,                                    \
        .slot_persist = ik__etcd_slot_persist, .slot_release = ik__etcd_slot_release,              \
        .slot_forget = ik__etcd_slot_forget, .recover = NULL, .slots_list = ik__etcd_slots_list,   \
        .slot_free_ms = etcd_slot_free_ms, .slot_frees_after = IK__FREES_AFTER_LEASE_TTL,          \
        .session = etcd_session, .hazards_check = ik__etcd_hazards_check, .cut = etcd_cut,         \
        .close_wait_ms = 0, .client_version = etcd_client_version, .last_error = etcd_last_error,  \
        .tag_create = ik__etcd_tag_create, .tag_get = ik__etcd_tag_get,                            \
        .tag_list = ik__etcd_tag_list, .tag_advance = ik__etcd_tag_advance,                        \
        .tag_settle = ik__etcd_tag_settle, .tag_lanes = 2,                                         \
    }

static const char *const etcd_examples[] = {"etcd://127.0.0.1:2379",
                                            "etcd://h1:2379,h2:2379/idkeeper", NULL};
static const char *const etcds_examples[] = {"etcds://h:2379?user=idkeeper", NULL};

const ik__backend_ops ik__backend_etcd_ops =
    ETCD_OPS("etcd", "etcd://HOST:PORT[,...][/PREFIX]", etcd_examples);
const ik__backend_ops ik__backend_etcds_ops =
    ETCD_OPS("etcds", "etcds://HOST:PORT[,...][/PREFIX]", etcds_examples);
