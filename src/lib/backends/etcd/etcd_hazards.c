/* etcd_hazards.c: the store hazard checks of etcd:// (docs/hazards.md, etcd), and
 * the gate every slot write passes. The rows:
 *
 *   members   the voting members (the member list): one is a risk (every write on
 *             one disk); the member we talk to missing from the list, or a
 *             learner, is refused (it is not part of the quorum that keeps writes)
 *   auth      off, anyone who reaches the port can delete our keys: a risk
 *   fsync     the WAL is fsynced (--unsafe-no-fsync, etcd 3.5+, is refused): a
 *             probe write must raise etcd_disk_wal_fsync_duration_seconds_count on
 *             the member that answered it; unreadable metrics are a risk
 *   cluster   the cluster id every answer must carry (etcd_gateway.h's EG1: the
 *             proof that rides with each write, checked on every answer); at open and
 *             in `idkeeper check`, every endpoint of the URI is asked alone, and one
 *             of another cluster is refused (endpoints_mixed)
 *
 * The fsync probe writes, so it runs at open and in `idkeeper check` only; the rest
 * run again before a write once the hazard interval has passed (ik__hazards_due).
 */
#include "etcd_handle.h"
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FSYNC_METRIC "etcd_disk_wal_fsync_duration_seconds_count"

static void risk_row(const ik__hazards *h, ik_hazard *r, const char *check, const char *value,
                     const char *fix)
{
    ik__hazard_row(h, r, check, value, 1, "%s", fix);
    r->verdict = IK_VERDICT_RISK;
}

/* members, auth, cluster: rows[*n...]. 0 or IK_ESTORE/IK_EUNSAFE (no answer). */
static int light_rows(ik__etcd_backend *b, ik_hazard *rows, size_t *n, char *why, size_t why_len)
{
    ik__hazards *h = &b->base.hz;
    ik__etcd_answer st = {0}, ml = {0};
    int e = ik__etcd_status(b->gw, b->wait_ms * 2, &st, why, why_len);
    if (e) return e == IK_EINDOUBT ? IK_ESTORE : e;
    char v[96], ep[280];
    ik__etcd_gw_endpoint(b->gw, ep, sizeof ep);
    e = ik__etcd_members(b->gw, b->wait_ms * 2, &ml, why, why_len);
    if (e && (st.is_learner || (ml.err_code && strstr(ml.err, "learner")))) {
        /* etcd 3.4's gateway answers a learner's status, and no member list there */
        ik__etcd_answer_free(&ml);
        ik__etcd_answer_free(&st);
        snprintf(v, sizeof v, "%s is a learner", ep);
        ik__hazard_row(h, &rows[(*n)++], "members", v, 1,
                       "promote the learner (etcdctl member promote) or name voting members");
        return IK_OK;
    }
    if (e) {
        ik__etcd_answer_free(&ml);
        ik__etcd_answer_free(&st);
        return e == IK_EINDOUBT ? IK_ESTORE : e;
    }
    size_t voters = 0;
    int found = 0, learner = st.is_learner;
    for (size_t i = 0; i < ml.n_members; i++) {
        if (!ml.members[i].is_learner) voters++;
        if (ml.members[i].id == st.member_id) {
            found = 1;
            learner |= ml.members[i].is_learner;
        }
    }
    if (!found) {
        snprintf(v, sizeof v, "%s (member %" PRIx64 ") not in the member list", ep, st.member_id);
        ik__hazard_row(h, &rows[(*n)++], "members", v, 1,
                       "point the URI at the cluster's own members (etcdctl member list)");
    } else if (learner) {
        snprintf(v, sizeof v, "%s is a learner", ep);
        ik__hazard_row(h, &rows[(*n)++], "members", v, 1,
                       "promote the learner (etcdctl member promote) or name voting members");
    } else if (voters < 2) {
        snprintf(v, sizeof v, "%zu voting member", voters);
        risk_row(h, &rows[(*n)++], "members", v,
                 "run a cluster of 3 or 5 members: on one, a lost disk loses every slot record");
    } else {
        snprintf(v, sizeof v, "%zu voting members, quorum %zu", voters, voters / 2 + 1);
        ik__hazard_row(h, &rows[(*n)++], "members", v, 0, NULL);
    }
    if (ik__etcd_gw_auth_on(b->gw)) {
        ik__hazard_row(h, &rows[(*n)++], "auth", "on", 0, NULL);
    } else {
        risk_row(h, &rows[(*n)++], "auth", "off",
                 "enable auth (etcdctl auth enable) with a role that alone may write the "
                 "prefix, and give idkeeper ?user=NAME and its password");
    }
    snprintf(v, sizeof v, "%" PRIx64 " (etcd %s; checked on every answer)",
             ik__etcd_gw_cluster_id(b->gw), st.version[0] ? st.version : "?");
    ik__hazard_row(h, &rows[(*n)++], "cluster", v, 0, NULL);
    ik__etcd_answer_free(&st);
    ik__etcd_answer_free(&ml);
    return IK_OK;
}

/* The fsync probe: a write of our own, and the WAL's fsync count before and after
 * it on the member that answered (three reads 100 ms apart: a follower fsyncs the
 * entry once it arrives). */
static void fsync_row(ik__etcd_backend *b, ik_hazard *r)
{
    ik__hazards *h = &b->base.hz;
    double before = 0, after = 0;
    char w[300], v[96], key[600];
    if (ik__etcd_metric(b->gw, FSYNC_METRIC, b->wait_ms, &before, w, sizeof w)) {
        risk_row(h, r, "fsync", "? (no " FSYNC_METRIC " on /metrics)",
                 "serve the metrics on the client URL so that idkeeper can see the WAL's "
                 "fsyncs, and never run etcd with --unsafe-no-fsync");
        return;
    }
    ik__etcd_key(b, "-", "fsync-probe", key, sizeof key);
    ik__etcd_answer a = {0};
    char val[32];
    snprintf(val, sizeof val, "%" PRId64, ik__wall_ms());
    if (ik__etcd_put(b->gw, key, val, 0, b->wait_ms * 2, &a, w, sizeof w)) {
        char fix[240];
        const char *said = strstr(w, "etcdserver: "); /* etcd's own words, past "etcd at URL" */
        snprintf(v, sizeof v, "? (the probe write failed: %.60s)", said ? said : w);
        snprintf(fix, sizeof fix,
                 "etcd did not take the probe write (%.150s): clear that (a NOSPACE alarm: "
                 "compact, defrag, etcdctl alarm disarm; a read-only role: let it write the "
                 "prefix)",
                 w);
        ik__etcd_answer_free(&a);
        risk_row(h, r, "fsync", v, fix);
        return;
    }
    ik__etcd_answer_free(&a);
    for (int i = 0; i < 3; i++) {
        if (ik__etcd_metric(b->gw, FSYNC_METRIC, b->wait_ms, &after, w, sizeof w) == 0 &&
            after > before)
            break;
        usleep(100000);
    }
    if (after > before) {
        snprintf(v, sizeof v, "yes (WAL fsyncs %.0f -> %.0f over a write)", before, after);
        ik__hazard_row(h, r, "fsync", v, 0, NULL);
    } else {
        snprintf(v, sizeof v, "no (WAL fsyncs stayed at %.0f over a write)", before);
        ik__hazard_row(h, r, "fsync", v, 1,
                       "restart the member without --unsafe-no-fsync: it acknowledges writes "
                       "it has not written to disk");
    }
}

/* EG1 across the URI: every endpoint it lists, asked alone (a gateway of its own,
 * which fixes the cluster id of the one endpoint it has), must be of the cluster the
 * open fixed, or a failover to it would find every write refused. 0 if each that
 * answers is; 1 with value naming the first that is not. An endpoint that does not
 * answer is not judged here: a failover to it finds the mix (EG1), and refuses. */
static int endpoints_mixed(ik__etcd_backend *b, char *value, size_t len)
{
    uint64_t ours = ik__etcd_gw_cluster_id(b->gw);
    for (int i = 0; b->t.n > 1 && i < b->t.n; i++) {
        ik__etcd_gw_config c = {.tls = b->t.tls, .n_endpoints = 1};
        snprintf(c.endpoints[0], sizeof c.endpoints[0], "%s", b->t.endpoints[i]);
        c.cacert = b->t.cacert[0] ? b->t.cacert : NULL;
        c.cert = b->t.cert[0] ? b->t.cert : NULL;
        c.key = b->t.key[0] ? b->t.key : NULL;
        ik__etcd_gw *one = NULL; /* no login: a status needs none */
        char w[300];
        if (ik__etcd_gw_new(&c, &one, w, sizeof w) != 0) continue;
        uint64_t id = ik__etcd_gw_cluster_id(one);
        ik__etcd_gw_free(one);
        if (id != ours) {
            snprintf(value, len, "%.60s is cluster %" PRIx64 ", not %" PRIx64 " as %.60s",
                     b->t.endpoints[i], id, ours, b->t.endpoints[0]);
            return 1;
        }
    }
    return 0;
}

static int run_checks(ik__etcd_backend *b, int full, char *why, size_t why_len)
{
    ik_hazard rows[4];
    size_t n = 0;
    pthread_mutex_lock(&b->hz_mu);
    int e = light_rows(b, rows, &n, why, why_len);
    if (e == IK_EUNSAFE) { /* EG1: another cluster answers at the address: refused, and
                              shown so (an answer of the first clears it) */
        char v[96];
        snprintf(v, sizeof v, "another cluster answers, not %" PRIx64 " (the one opened on)",
                 ik__etcd_gw_cluster_id(b->gw));
        n = 0;
        ik__hazard_row(&b->base.hz, &rows[n++], "cluster", v, 1,
                       "point the URI at the cluster idkeeper opened, or restart idkeeper on "
                       "this one (its slot records and counters are not there)");
        char inner[300];
        ik__hazards_update(&b->base.hz, rows, n, inner, sizeof inner);
    }
    char mix[96];
    if (!e && full && endpoints_mixed(b, mix, sizeof mix)) /* the "cluster" row, refused */
        ik__hazard_row(&b->base.hz, &rows[n - 1], "cluster", mix, 1,
                       "the URI lists members of two clusters: a failover from one to the "
                       "other would refuse every write; list one cluster's members only");
    if (!e && full) fsync_row(b, &rows[n++]);
    if (!e) {
        b->checked_ns = ik__mono_ns();
        e = ik__hazards_update(&b->base.hz, rows, n, why, why_len);
    }
    pthread_mutex_unlock(&b->hz_mu);
    return e;
}

int ik__etcd_hazards_check(ik__backend *be, char *why, size_t why_len)
{
    return run_checks(ik__etcd_of(be), 1, why, why_len);
}

int ik__etcd_write_gate(ik__etcd_backend *b, char *why, size_t why_len)
{
    pthread_mutex_lock(&b->hz_mu);
    int64_t last = b->checked_ns;
    pthread_mutex_unlock(&b->hz_mu);
    if (ik__hazards_due(&b->base.hz, last) || ik__etcd_gw_foreign(b->gw)) {
        int e = run_checks(b, 0, why, why_len);
        if (e == IK_ESTORE) return e;
    }
    return ik__hazards_refused(&b->base.hz, why, why_len);
}
