/* zk_hazards.c: the store hazard checks of the zk:// backend (zk_hazards.h;
 * docs/hazards.md, "ZooKeeper"). Everything is asked of the one server the
 * session is connected to now:
 *
 *   forceSync        mntr: a server that has flushed its transaction log
 *                    (zk_cnt_sync_processor_batch_size > 0) but never fsynced it
 *                    (zk_cnt_fsynctime == 0) runs with forceSync=no: it
 *                    acknowledges writes that a power cut loses. Refused. No
 *                    four-letter word shows the setting itself; the counters start
 *                    at 0 with the JVM, and the probe below makes sure the server
 *                    has logged a write of ours before they are read. On an
 *                    observer the row is a risk whatever its own fsync: it does
 *                    not vote, and the voters log and commit our writes.
 *   quorum           /zookeeper/config (voting members) and srvr's Mode: a
 *                    standalone server or one voter is a quorum of one, where a lost
 *                    disk loses every slot record and counter. A risk.
 *   skipACL          a probe: an ephemeral node of this session that the world may
 *                    only read; a write to it must fail with NOAUTH. If it goes
 *                    through, the server ignores ACLs (skipACL=yes). A risk. The
 *                    failed write is logged by the server like any other, which is
 *                    the write the forceSync check needs.
 *   read-only        isro: "ro" is refused (our sessions never accept a read-only
 *                    server, so this is a belt to those braces).
 *   session timeout  what the server granted (conf: minSessionTimeout and
 *                    maxSessionTimeout) against what we asked; the safe window is
 *                    computed from the granted one, so this row is always ok.
 *
 * A four-letter word that is not in 4lw.commands.whitelist leaves its check
 * unverifiable: a risk, not a refusal (many fleets leave the default whitelist).
 *
 * Whose word: each four-letter word goes on a connection of its own to the address
 * the session is connected to, and behind a TCP load balancer that connection may
 * reach another member. So an answer counts only when `cons` on that address lists
 * our session id, asked twice before the first word (a round-robin balancer sends
 * one of the two elsewhere) and once after each word (member_of_session, ask).
 * Otherwise the rows those words judge read "?": risks, never ok or refused on
 * another member's word.
 *
 * When: all of them at open, and before a slot take, a slot renewal or a counter
 * advance whenever the session connected again since the last check (a session
 * event: a reconnect, to another member or to a restarted server, is a new
 * connection), the connected server is another one, or a check is refused now.
 * A full check in which mntr, srvr, isro or cons went unanswered (or the server
 * had logged no write yet) leaves the connection due: the interval's thread runs
 * the full check again, not the light one, until they have answered (never in
 * front of a write, which a silent server would hold back by the words' deadline).
 * Every hazard interval (hazard.h: a third of the negotiated session timeout, at
 * most 10 s) a thread of its own re-checks the connection lightly: what can
 * change on a server without a restart (its voting members);
 * forceSync, skipACL and the session bounds are read by ZooKeeper at its start,
 * and a restart is a new connection. So a slow server never delays a renewal
 * behind an interval's check (the renewal's own answer would then come too late
 * for its window).
 *
 * After the write: the ZooKeeper client sends a request queued while it reconnects
 * on the new connection, so a write the gate let through on a connection it judged
 * can still be answered by a restarted server, or another member, that nobody
 * judged. The gate returns the epoch it judged; a counter advance or a slot renewal
 * answered when the epoch has moved is judged again (the connection now, in full)
 * before it counts: refused, or not connected, an advance's range is not handed out
 * (a gap at its exact range, which the engine logs) and a renewal does not renew.
 */
#include "zk_hazards.h"
#include "backend_zk.h"
#include "internal.h"
#include "zk_session.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HZ_4LW_MAX (256 * 1024) /* mntr is about 20 KB */
#define HZ_MNTR_TRIES 10        /* a follower logs a write a little after it answers */

typedef struct ik__zk_hz {
    pthread_mutex_t run;    /* one check at a time; guards the fields below */
    atomic_uint epoch;      /* CONNECTED session events heard (the listener) */
    unsigned checked_epoch; /* epoch when the last check began */
    int64_t checked_ns;     /* mono ns of the last check (0: none) */
    int complete;           /* every word of the last check answered (run_locked) */
    /* set while the thread asks a connection judged already again because a word
     * went unanswered (hz_thread): a write on that connection (epoch unchanged)
     * does not wait behind it (gate) */
    atomic_int again;
    atomic_uint again_epoch;
    char host[80];         /* the server it judged */
    int64_t probe_session; /* the session whose probe node exists */
    int asked_ms;          /* the session timeout we asked for */
    int listening;
    /* the interval's re-check runs on a thread of its own (hz_thread): a write
     * never waits behind it */
    pthread_t thread;
    int thread_started;
    pthread_mutex_t tmu; /* guards stop; tcv wakes the thread to stop */
    pthread_cond_t tcv;
    int stop;
    atomic_int_least64_t light_ns; /* mono ns of the latest check, full or light */
    /* IDKEEPER_TEST_ZK_GATE_PAUSE_MS, IDKEEPER_TEST_ZK_ACQUIRE_PAUSE_MS: tests only
     * (docs/testing.md, "Test hooks") */
    int test_pause_ms, test_acquire_pause_ms;
    const char *test_pause_end; /* IDKEEPER_TEST_ZK_PAUSE_END: a file that ends a pause */
} zk_hz;

/* ------------------------------------------------------------------------------
 * The pure parts
 */
int ik__zk_4lw_closed(const char *reply)
{
    return reply && strstr(reply, "is not executed because it is not in the whitelist") != NULL;
}

int ik__zk_4lw_value(const char *reply, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = reply; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, kl) != 0) continue;
        const char *v = p + kl;
        if (*v == '=' || *v == '\t')
            v++;
        else if (v[0] == ':' && v[1] == ' ')
            v += 2;
        else
            continue;
        size_t n = strcspn(v, "\r\n");
        if (len) snprintf(out, len, "%.*s", (int)n, v);
        return 0;
    }
    return -1;
}

int ik__zk_config_voters(const char *config, int len)
{
    int voters = 0;
    const char *end = config + (len > 0 ? len : 0);
    for (const char *p = config; p && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n > 7 && strncmp(p, "server.", 7) == 0 && memchr(p, '=', n)) {
            /* server.N=host:quorum:election[:role][;client]: the role is participant
             * unless it says observer */
            const char *semi = memchr(p, ';', n);
            size_t m = semi ? (size_t)(semi - p) : n;
            int observer = m >= 9 && memcmp(p + m - 9, ":observer", 9) == 0;
            voters += !observer;
        }
        p = nl ? nl + 1 : NULL;
    }
    return voters;
}

/* ------------------------------------------------------------------------------
 * Four-letter words, on a connection of their own to the session's server
 */
/* On the hazard thread (hz_thread): its stop flag, which ends a word's wait at once
 * (within HZ_STOP_SLICE_MS), so that a close never waits out a slow member's answer
 * (docs/guarantees.md promise 13: the stop's bound). NULL on other threads, whose
 * waits end at their deadline. */
static __thread const int *hz_stop;
#define HZ_STOP_SLICE_MS 50

static int wait_fd(int fd, short ev, int64_t deadline_ns)
{
    for (;;) {
        int64_t left = (deadline_ns - ik__mono_ns()) / 1000000;
        if (left <= 0) return -1;
        if (hz_stop && __atomic_load_n(hz_stop, __ATOMIC_ACQUIRE)) return -1;
        if (hz_stop && left > HZ_STOP_SLICE_MS) left = HZ_STOP_SLICE_MS;
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, (int)left);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return -1;
    }
}

/* A connection to ss that has sent word, or -1 if it could not by the deadline. */
static int word_fd(const struct sockaddr_storage *ss, socklen_t sl, const char *word,
                   int64_t deadline_ns)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    int err = 0;
    socklen_t el = sizeof err;
    if ((connect(fd, (const struct sockaddr *)ss, sl) != 0 &&
         (errno != EINPROGRESS || wait_fd(fd, POLLOUT, deadline_ns) != 0 ||
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0)) ||
        send(fd, word, strlen(word), MSG_NOSIGNAL) != (ssize_t)strlen(word)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads into buf[*n..cap) until the server closes or fails the connection (1), cap
 * is full (1), or the deadline passes (0). */
static int read_some(int fd, char *buf, size_t *n, size_t cap, int64_t deadline_ns)
{
    while (*n < cap) {
        if (wait_fd(fd, POLLIN, deadline_ns) != 0) return 0;
        ssize_t r = recv(fd, buf + *n, cap - *n, 0);
        if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) return 1;
        if (r > 0) *n += (size_t)r;
    }
    return 1;
}

/* The server's answer to word (malloc'd, NUL-terminated), or NULL if it did not
 * answer by the deadline. */
static char *four_letters(const struct sockaddr_storage *ss, socklen_t sl, const char *word,
                          int64_t deadline_ns)
{
    int fd = word_fd(ss, sl, word, deadline_ns);
    if (fd < 0) return NULL;
    size_t n = 0;
    char *buf = malloc(HZ_4LW_MAX + 1);
    if (buf && (!read_some(fd, buf, &n, HZ_4LW_MAX, deadline_ns) || n == 0)) {
        free(buf); /* late, or closed without a word: not a server that answers them */
        buf = NULL;
    }
    if (buf) buf[n] = '\0';
    close(fd);
    return buf;
}

/* Does the member answering on ss hold session sid? `cons` lists every connection
 * of a member with the id of its session ("sid=0x...,"), and only the member the
 * session is connected to has it. Read in pieces, since a member with thousands of
 * connections answers megabytes. HZ_OURS, HZ_OTHER (it answered without our
 * session: another member, as behind a load balancer), HZ_CLOSED (cons is not in
 * 4lw.commands.whitelist) or HZ_SILENT (no answer by the deadline). */
enum { HZ_OURS, HZ_OTHER, HZ_CLOSED, HZ_SILENT };
static int member_of_session(const struct sockaddr_storage *ss, socklen_t sl, int64_t sid,
                             int64_t deadline_ns)
{
    char needle[40], buf[8192 + 1];
    int nl = snprintf(needle, sizeof needle, "sid=0x%" PRIx64 ",", (uint64_t)sid);
    int fd = word_fd(ss, sl, "cons", deadline_ns);
    if (fd < 0) return HZ_SILENT;
    size_t n = 0, seen = 0;
    int verdict = HZ_SILENT;
    for (;;) {
        int done = read_some(fd, buf, &n, sizeof buf - 1, deadline_ns);
        seen += n;
        buf[n] = '\0';
        if (strstr(buf, needle)) {
            verdict = HZ_OURS;
            break;
        }
        if (ik__zk_4lw_closed(buf)) {
            verdict = HZ_CLOSED;
            break;
        }
        if (!done || n < sizeof buf - 1) { /* late, failed, or the whole answer read */
            verdict = done && seen ? HZ_OTHER : HZ_SILENT;
            break;
        }
        /* keep the tail that may hold the start of the needle */
        memmove(buf, buf + n - (size_t)nl, (size_t)nl);
        n = (size_t)nl;
        seen -= (size_t)nl;
    }
    close(fd);
    return verdict;
}

/* ------------------------------------------------------------------------------
 * The probe node and /zookeeper/config, on the session
 */
static int call_wait(ik__zk_wait *w, zhandle_t *zh, int zrc, int64_t deadline_ns)
{
    ik__zk_issued(&w->r[0], zrc);
    if (!ik__zk_wait_until(w, zh, deadline_ns)) return ZOPERATIONTIMEOUT;
    return w->r[0].rc;
}

/* 1: a write the world may not make went through (ACLs are skipped); 0: refused
 * with NOAUTH; -1: unknown (msg says why). */
static int probe_acl(zk_hz *z, const ik__zk_session *s, int64_t deadline_ns, char *msg, size_t len)
{
    static char world[] = "world", anyone[] = "anyone";
    struct ACL read_only[1] = {{ZOO_PERM_READ, {world, anyone}}};
    struct ACL_vector acl = {1, read_only};
    char parent[600], path[640];
    snprintf(parent, sizeof parent, "%s/idkeeper", s->chroot);
    snprintf(path, sizeof path, "%s/hazard-probe-%016" PRIx64, parent, (uint64_t)s->id);
    int zrc;
    if (z->probe_session != s->id) {
        for (int attempt = 0; attempt < 2; attempt++) {
            ik__zk_wait *w = ik__zk_wait_new(1, 0);
            if (!w) return snprintf(msg, len, "out of memory"), -1;
            ik__zk_arm(&w->r[0], s->zh);
            zrc = call_wait(w, s->zh,
                            zoo_acreate2(s->zh, path, NULL, -1, &acl, ZOO_EPHEMERAL,
                                         ik__zk_on_created, &w->r[0]),
                            deadline_ns);
            ik__zk_wait_put(w);
            if (zrc != ZNONODE || attempt) break;
            zrc = ik__zk_create_path(s->zh, parent, strlen(parent), s->shared_acl, s->shared_acl,
                                     ZOO_PERSISTENT, NULL, 0);
            if (zrc != ZOK) break;
        }
        if (zrc != ZOK && zrc != ZNODEEXISTS) {
            snprintf(msg, len, "? (cannot make a probe node: %s)", zerror(zrc));
            return -1;
        }
        z->probe_session = s->id;
    }
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return snprintf(msg, len, "out of memory"), -1;
    ik__zk_arm(&w->r[0], s->zh);
    zrc = call_wait(w, s->zh, zoo_aset(s->zh, path, "1", 1, -1, ik__zk_on_stat, &w->r[0]),
                    deadline_ns);
    ik__zk_wait_put(w);
    if (zrc == ZNOAUTH) return 0;
    if (zrc == ZOK) return 1;
    if (zrc == ZNONODE) z->probe_session = 0; /* made again next time */
    snprintf(msg, len, "? (probe write: %s)", zerror(zrc));
    return -1;
}

/* The voting members in /zookeeper/config (0: empty, a standalone server), or -1. */
static int read_voters(const ik__zk_session *s, int64_t deadline_ns)
{
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return -1;
    ik__zk_arm(&w->r[0], s->zh);
    int zrc = call_wait(w, s->zh, zoo_aget(s->zh, ZOO_CONFIG_NODE, 0, ik__zk_on_data, &w->r[0]),
                        deadline_ns);
    int voters = zrc == ZOK       ? ik__zk_config_voters(w->r[0].data, w->r[0].len)
                 : zrc == ZNONODE ? 0
                                  : -1;
    ik__zk_wait_put(w);
    return voters;
}

/* "HOST:PORT" of the server the session is connected to: 0, or -1 if not known. */
static int server_of(zhandle_t *zh, struct sockaddr_storage *ss, socklen_t *sl, char *out,
                     size_t len)
{
    *sl = sizeof *ss;
    memset(ss, 0, sizeof *ss);
    if (!zookeeper_get_connected_host(zh, (struct sockaddr *)ss, sl)) return -1;
    char ip[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        snprintf(out, len, "%s:%u", ip, ntohs(a->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        snprintf(out, len, "[%s]:%u", ip, ntohs(a->sin6_port));
    } else {
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------
 * The checks
 */
static zk_hz *hz_of(ik__backend *be)
{
    return ik__zk_backend_of(be)->hzs;
}

static long num(const char *reply, const char *key)
{
    char v[32];
    if (ik__zk_4lw_value(reply, key, v, sizeof v) != 0) return -1;
    char *end;
    long n = strtol(v, &end, 10);
    return end == v ? -1 : n;
}

/* A row that is never refused: a hazard idkeeper cannot rule out, or accepts. */
static void risk_row(const ik__hazards *h, ik_hazard *r, const char *check, const char *value,
                     const char *fix)
{
    ik__hazard_row(h, r, check, value, 1, "%s", fix);
    r->verdict = IK_VERDICT_RISK;
}

/* A session to check on: taken with ik__zk_session_get, the server it is connected
 * to, and what its four-letter words have shown so far. */
typedef struct hz_conn {
    ik__zk_session s;
    struct sockaddr_storage ss;
    socklen_t sl;
    char host[80];
    int member;   /* HZ_OURS while every cons so far listed our session, else the first
                     other answer (member_of_session) */
    int answered; /* every word answered (a word not in the whitelist answers so) */
} hz_conn;

/* One more cons on c's address (none once one did not list our session). */
static void confirm(hz_conn *c, int64_t deadline_ns)
{
    if (c->member != HZ_OURS) return;
    c->member = member_of_session(&c->ss, c->sl, c->s.id, deadline_ns);
    if (c->member == HZ_SILENT) c->answered = 0;
}

/* A four-letter word to c's server (its answer, malloc'd, or NULL: no answer), then
 * a cons: the answer is the session's server's only while c->member is still
 * HZ_OURS after it. */
static char *ask(hz_conn *c, const char *word, int64_t deadline_ns)
{
    char *m = four_letters(&c->ss, c->sl, word, deadline_ns);
    if (!m) c->answered = 0;
    confirm(c, deadline_ns);
    return m;
}

/* A row's value when c's answers are not known to be its session's server's (into
 * out), or NULL when they are. */
static const char *not_ours(const hz_conn *c, const char *word, char *out, size_t len)
{
    static const char *const why[] = {
        [HZ_OTHER] = "answered by another member",
        [HZ_CLOSED] = "not confirmed: cons closed",
        [HZ_SILENT] = "not confirmed: no answer to cons",
    };
    if (c->member == HZ_OURS) return NULL;
    snprintf(out, len, "? (%s: %s %s)", c->host, word, why[c->member]);
    return out;
}

#define MEMBER_FIX                                                                                 \
    "connect to the members themselves, not through a load balancer, and add cons to "             \
    "4lw.commands.whitelist: a four-letter word is trusted only when cons shows that the member "  \
    "answering holds idkeeper's session"

/* The forceSync row: 1 when it is settled, 0 when a later full check should ask
 * again (mntr unanswered, or no write logged yet). */
static int forcesync_row(const ik__hazards *h, ik_hazard *r, hz_conn *c, int observer,
                         int64_t deadline_ns)
{
    char v[96];
    if (observer) {
        snprintf(v, sizeof v, "? (%s is an observer)", c->host);
        risk_row(h, r, "forceSync", v,
                 "run idkeeper check --coord zk://VOTER:PORT once per voting member: an "
                 "observer does not vote, so its own forceSync says nothing of the voters that "
                 "log and commit idkeeper's writes");
        return 1;
    }
    int unsynced = 0;
    for (int i = 0; i < HZ_MNTR_TRIES; i++) {
        char *m = ask(c, "mntr", deadline_ns);
        if (!m) {
            snprintf(v, sizeof v, "? (no answer to mntr from %s)", c->host);
            risk_row(h, r, "forceSync", v,
                     "make the server answer the four-letter word mntr, so that idkeeper can "
                     "see whether it fsyncs its log");
            return 0;
        }
        int closed = ik__zk_4lw_closed(m);
        long fsyncs = num(m, "zk_cnt_fsynctime"),
             flushes = num(m, "zk_cnt_sync_processor_batch_size");
        free(m);
        if (closed || fsyncs < 0 || flushes < 0) { /* a risk whoever answered */
            snprintf(v, sizeof v, "? (%s: mntr %s)", c->host,
                     closed ? "not in 4lw.commands.whitelist" : "has no fsync counters");
            risk_row(h, r, "forceSync", v,
                     "add mntr to 4lw.commands.whitelist on every server, so that idkeeper can "
                     "see whether it fsyncs its log (forceSync)");
            return 1;
        }
        if (not_ours(c, "mntr", v, sizeof v)) {
            risk_row(h, r, "forceSync", v, MEMBER_FIX);
            return 1;
        }
        if (fsyncs > 0) {
            snprintf(v, sizeof v, "yes (%s: %ld fsyncs)", c->host, fsyncs);
            ik__hazard_row(h, r, "forceSync", v, 0, NULL);
            return 1;
        }
        /* flushed but not fsynced: a server with forceSync=yes counts the flush
         * before its fsync, so only a count that stays 0 says no */
        if (flushes > 0 && ++unsynced >= 3) {
            snprintf(v, sizeof v, "no (%s: %ld log flushes, 0 fsyncs)", c->host, flushes);
            ik__hazard_row(h, r, "forceSync", v, 1,
                           "set forceSync=yes (drop -Dzookeeper.forceSync=no) on %s and restart "
                           "it: it acknowledges writes it has not fsynced, and a power cut "
                           "loses slot records and counters",
                           c->host);
            return 1;
        }
        if (i + 1 < HZ_MNTR_TRIES) usleep(100 * 1000); /* a follower logs a bit later */
    }
    snprintf(v, sizeof v, "? (%s has %s)", c->host,
             unsynced ? "not fsynced its log yet" : "logged no write yet");
    risk_row(h, r, "forceSync", v, "check again once the server has logged a write");
    return 0;
}

/* Takes the session and the address of its server. 0: the caller checks on it and
 * then puts the session (ik__zk_session_put); IK_ESTORE: not connected (the session
 * is put already, nothing can be judged). */
static int hz_connect(ik__backend *be, hz_conn *c, char *why, size_t why_len)
{
    ik__zk_session_get(be, &c->s);
    c->member = HZ_OURS;
    c->answered = 1;
    if (c->s.connected && server_of(c->s.zh, &c->ss, &c->sl, c->host, sizeof c->host) == 0)
        return 0;
    ik__zk_session_put(be);
    return ik__fail(IK_ESTORE, why, why_len,
                    "ZooKeeper is not connected: its settings cannot be checked");
}

#define QUORUM_FIX                                                                                 \
    "run an ensemble of 3 or 5 servers: with a quorum of one, a lost disk loses every slot "       \
    "record and counter (sequences restart, workers are reused)"
#define RO_FIX "%s serves read-only, cut off from its quorum: reconnect it to the ensemble"

/* The re-check of a connection already judged, when only the interval is due:
 * what can change on a server without a restart (a restart is a new connection,
 * judged in full): its voting members (a reconfig). forceSync, skipACL and the
 * session bounds are read once, at start, by ZooKeeper; a server that turns
 * read-only drops our session (it never asks for read-only mode), and the
 * reconnect is judged in full. It runs on the hazard thread (hz_thread), on the
 * session alone (one read, no connection of its own), sends no write and waits at
 * most a short while; a row not answered keeps its verdict. */
static int light_check(ik__backend *be, zk_hz *z, char *why, size_t why_len)
{
    ik__hazards *h = &be->hz;
    hz_conn c;
    int rc = hz_connect(be, &c, why, why_len);
    if (rc) return rc;
    int64_t budget_ms = c.s.timeout_ms / 6 > 1000 ? 1000 : c.s.timeout_ms / 6;
    int64_t deadline = ik__mono_ns() + (budget_ms < 100 ? 100 : budget_ms) * 1000000;
    int voters = read_voters(&c.s, deadline);
    ik__zk_session_put(be);
    ik_hazard rows[1];
    size_t n = 0;
    char v[96];
    if (voters >= 2) {
        snprintf(v, sizeof v, "%d voters, quorum %d", voters, voters / 2 + 1);
        ik__hazard_row(h, &rows[n++], "quorum", v, 0, NULL);
    } else if (voters == 1) {
        risk_row(h, &rows[n++], "quorum", "1 voter", QUORUM_FIX);
    } /* 0 (standalone, which no reconfig changes) or unanswered: as it was */
    atomic_store(&z->light_ns, ik__mono_ns());
    return ik__hazards_update(h, rows, n, why, why_len);
}

/* All checks on the session's server. Caller holds z->run. 0, IK_EUNSAFE, or
 * IK_ESTORE if the session is not connected (nothing was judged). */
static int run_locked(ik__backend *be, zk_hz *z, char *why, size_t why_len)
{
    ik__hazards *h = &be->hz;
    unsigned epoch = atomic_load(&z->epoch);
    hz_conn c;
    int rc = hz_connect(be, &c, why, why_len);
    if (rc) return rc;
    int64_t budget_ms = ik__proof_slack_ms(c.s.timeout_ms);
    if (budget_ms < 2000) budget_ms = 2000;
    int64_t deadline = ik__mono_ns() + budget_ms * 1000000;
    int timeout_ms = c.s.timeout_ms;
    char probe_msg[96] = "";
    int skip = probe_acl(z, &c.s, deadline, probe_msg, sizeof probe_msg);
    int voters = read_voters(&c.s, deadline);
    ik__zk_session_put(be); /* the rest asks the server on connections of its own */

    /* two cons first: behind a round-robin balancer one of them reaches another
     * member, then one after each word (ask) */
    confirm(&c, deadline);
    confirm(&c, deadline);
    char *srvr = ask(&c, "srvr", deadline);
    int srvr_ours = c.member == HZ_OURS;
    char *conf = ask(&c, "conf", deadline);
    int conf_ours = c.member == HZ_OURS;
    char *isro = ask(&c, "isro", deadline);
    int isro_ours = c.member == HZ_OURS;
    ik_hazard rows[5];
    size_t n = 0;
    char v[96], mode[32] = "";
    if (srvr && srvr_ours && !ik__zk_4lw_closed(srvr))
        ik__zk_4lw_value(srvr, "Mode", mode, sizeof mode);

    int settled = forcesync_row(h, &rows[n++], &c, strcmp(mode, "observer") == 0, deadline);

    if (strcmp(mode, "standalone") == 0 || voters == 0)
        snprintf(v, sizeof v, "standalone (%s)", c.host);
    else if (voters > 0)
        snprintf(v, sizeof v, "%d voter%s, quorum %d", voters, voters == 1 ? "" : "s",
                 voters / 2 + 1);
    else
        snprintf(v, sizeof v, "? (cannot read %s)", ZOO_CONFIG_NODE);
    if (voters >= 2 && strcmp(mode, "standalone") != 0)
        ik__hazard_row(h, &rows[n++], "quorum", v, 0, NULL);
    else
        risk_row(h, &rows[n++], "quorum", v, QUORUM_FIX);

    if (skip == 0)
        ik__hazard_row(h, &rows[n++], "skipACL", "no (a write the ACL forbids was refused)", 0,
                       NULL);
    else if (skip == 1)
        risk_row(h, &rows[n++], "skipACL", "yes (a write the ACL forbids went through)",
                 "remove skipACL=yes (zookeeper.skipACL) and restart: any client can change or "
                 "delete idkeeper's slot and counter nodes");
    else
        risk_row(h, &rows[n++], "skipACL", probe_msg,
                 "let idkeeper create nodes under CHROOT/idkeeper, so that it can check that "
                 "ACLs are enforced");

    if (isro && !ik__zk_4lw_closed(isro) && !isro_ours) {
        if (!not_ours(&c, "isro", v, sizeof v)) /* ours then, another member since */
            snprintf(v, sizeof v, "? (%s: isro answered by another member)", c.host);
        risk_row(h, &rows[n++], "read-only", v, MEMBER_FIX);
    } else if (isro && !ik__zk_4lw_closed(isro) && strncmp(isro, "ro", 2) == 0) {
        snprintf(v, sizeof v, "ro (%s)", c.host);
        ik__hazard_row(h, &rows[n++], "read-only", v, 1, RO_FIX, c.host);
    } else {
        snprintf(v, sizeof v, "%s (%s)",
                 isro && !ik__zk_4lw_closed(isro) ? "rw" : "? (isro closed; sessions refuse ro)",
                 c.host);
        ik__hazard_row(h, &rows[n++], "read-only", v, 0, NULL);
    }

    int bounds = conf && conf_ours && !ik__zk_4lw_closed(conf);
    long lo = bounds ? num(conf, "minSessionTimeout") : -1;
    long hi = bounds ? num(conf, "maxSessionTimeout") : -1;
    if (lo >= 0 && hi >= 0)
        snprintf(v, sizeof v, "%d ms (asked %d; server allows %ld-%ld)", timeout_ms, z->asked_ms,
                 lo, hi);
    else
        snprintf(v, sizeof v, "%d ms (asked %d)", timeout_ms, z->asked_ms);
    ik__hazard_row(h, &rows[n++], "session timeout", v, 0, NULL);

    free(srvr);
    free(conf);
    free(isro);
    /* judged only once mntr, srvr and isro (and cons) have answered: until then the
     * interval's check runs the full one again (hz_thread) */
    z->complete = settled && c.answered;
    z->checked_epoch = epoch;
    z->checked_ns = ik__mono_ns();
    atomic_store(&z->light_ns, z->checked_ns);
    snprintf(z->host, sizeof z->host, "%s", c.host);
    return ik__hazards_update(h, rows, n, why, why_len);
}

/* Is the full check due before a write (z->run held)? Never checked, a new
 * connection, another server, or a check refused now (HZ3). The interval's
 * re-check is the thread's (hz_thread). */
static int due_locked(ik__backend *be, zk_hz *z)
{
    if (z->checked_ns == 0 || atomic_load(&z->epoch) != z->checked_epoch) return 1;
    if (ik__hazards_refused(&be->hz, NULL, 0)) return 1;
    ik__zk_session s;
    ik__zk_session_get(be, &s);
    struct sockaddr_storage ss;
    socklen_t sl;
    char host[80];
    int other = s.connected && server_of(s.zh, &ss, &sl, host, sizeof host) == 0 &&
                strcmp(host, z->host) != 0;
    ik__zk_session_put(be);
    return other;
}

/* Before a write: 0 (checked, or not due), IK_EUNSAFE (refused now), or IK_ESTORE
 * (due, but the session is not connected: nothing was judged). *judged: the epoch of
 * the connection it judged (for judged_still). */
static int gate(ik__backend *be, unsigned *judged)
{
    zk_hz *z = hz_of(be);
    *judged = 0;
    if (!z) return IK_OK;
    if (pthread_mutex_trylock(&z->run) != 0) {
        /* the thread asks its words again on the connection already judged: a server
         * that does not answer them would hold every renewal back by their deadline
         * (t_zk_slow); the rows it has stand meanwhile */
        unsigned again = atomic_load(&z->again_epoch);
        if (atomic_load(&z->again) && atomic_load(&z->epoch) == again) {
            *judged = again;
            return ik__hazards_refused(&be->hz, NULL, 0);
        }
        pthread_mutex_lock(&z->run);
    }
    int rc = due_locked(be, z) ? run_locked(be, z, NULL, 0) : IK_OK;
    *judged = z->checked_epoch;
    pthread_mutex_unlock(&z->run);
    if (rc && rc != IK_EUNSAFE) return rc;
    return ik__hazards_refused(&be->hz, NULL, 0);
}

/* After a write the gate let through: 1 if the session has not connected again since
 * the connection the gate judged (so the write was answered on it: the client hands
 * a CONNECTED event to the listener before any answer from the new connection). */
static int judged_still(ik__backend *be, unsigned judged)
{
    zk_hz *z = hz_of(be);
    return !z || atomic_load(&z->epoch) == judged;
}

/* A write answered after the session connected again (judged_still 0): the gate
 * again, on the connection now; with wait, once the session is connected (at most
 * the connection wait a write makes: a blip between the answer and this judgement
 * is not a gap). 0 if it is judged and not refused; else IK_EUNSAFE, with what to
 * say in why (the refusal, or that nothing could be judged). */
static int judge_after(ik__backend *be, int wait, char *why, size_t why_len)
{
    unsigned judged;
    if (wait) ik__zk_wait_connected(be, ik__zk_connect_wait_ms(ik__zk_slot_free_ms(be)));
    int rc = gate(be, &judged);
    if (rc == IK_OK) return IK_OK;
    if (rc != IK_EUNSAFE || ik__hazards_refused(&be->hz, why, why_len) != IK_EUNSAFE)
        snprintf(why, why_len, "ZooKeeper is not connected: its settings cannot be checked");
    return IK_EUNSAFE;
}

/* The test hooks: a counter advance (IDKEEPER_TEST_ZK_GATE_PAUSE_MS) or a slot take
 * (IDKEEPER_TEST_ZK_ACQUIRE_PAUSE_MS) pauses ms after its gate, before it is sent, so
 * that a test can restart ZooKeeper in between; the line tells the test it is there,
 * and the file IDKEEPER_TEST_ZK_PAUSE_END, once it exists, ends the pause early (the
 * test makes it when the restart is done, whatever it took). */
static void test_pause(const zk_hz *z, int ms)
{
    if (ms <= 0) return;
    ik__logf("test hook: pausing %d ms between the check and the write", ms);
    int64_t end = ik__mono_ns() + (int64_t)ms * 1000000;
    while (ik__mono_ns() < end && !(z->test_pause_end && access(z->test_pause_end, F_OK) == 0)) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
}

static int test_ms(const char *var)
{
    const char *v = getenv(var); /* tests only */
    long ms = v ? strtol(v, NULL, 10) : 0;
    return ms > 0 && ms <= 60000 ? (int)ms : 0;
}

/* The interval's re-check: every hazard interval, the light check of the
 * connection (the full one when it is due and no write came to run it). */
static void *hz_thread(void *arg)
{
    ik__backend *be = arg;
    zk_hz *z = ik__zk_backend_of(be)->hzs;
    hz_stop = &z->stop;
    pthread_mutex_lock(&z->tmu);
    while (!z->stop) {
        struct timespec ts;
        ik__deadline_ts(&ts, be->hz.interval_ms);
        pthread_cond_timedwait(&z->tcv, &z->tmu, &ts);
        if (z->stop) break;
        pthread_mutex_unlock(&z->tmu);
        if (ik__hazards_due(&be->hz, atomic_load(&z->light_ns)) &&
            pthread_mutex_trylock(&z->run) == 0) { /* else a full check runs now */
            int due = due_locked(be, z), full = due || !z->complete;
            if (!due && full) { /* only a word unanswered: writes need not wait */
                atomic_store(&z->again_epoch, z->checked_epoch);
                atomic_store(&z->again, 1);
            }
            if (full) run_locked(be, z, NULL, 0);
            atomic_store(&z->again, 0);
            pthread_mutex_unlock(&z->run);
            if (!full) light_check(be, z, NULL, 0);
        }
        pthread_mutex_lock(&z->tmu);
    }
    pthread_mutex_unlock(&z->tmu);
    return NULL;
}

static void on_session(void *ctx, unsigned gen, int state)
{
    (void)gen;
    if (state == ZOO_CONNECTED_STATE) atomic_fetch_add(&((zk_hz *)ctx)->epoch, 1);
}

int ik__zk_hazards_check(ik__backend *be, char *why, size_t why_len)
{
    zk_hz *z = hz_of(be);
    if (!z) return IK_OK;
    pthread_mutex_lock(&z->run);
    int rc = run_locked(be, z, why, why_len);
    pthread_mutex_unlock(&z->run);
    return rc;
}

int ik__zk_hazards_open(ik__backend *be, const ik_coord_options *o, char *why, size_t why_len)
{
    ik__zk_backend *b = ik__zk_backend_of(be);
    zk_hz *z = calloc(1, sizeof *z);
    if (!z) return IK_ENOMEM;
    pthread_mutex_init(&z->run, NULL);
    z->asked_ms = b->zc.timeout_ms;
    z->test_pause_ms = test_ms("IDKEEPER_TEST_ZK_GATE_PAUSE_MS");
    z->test_acquire_pause_ms = test_ms("IDKEEPER_TEST_ZK_ACQUIRE_PAUSE_MS");
    z->test_pause_end = getenv("IDKEEPER_TEST_ZK_PAUSE_END"); /* tests only */
    b->hzs = z;
    /* the interval: a third of the negotiated session timeout, at most 10 s */
    ik__hazards_init(&be->hz, o, ik__zk_slot_free_ms(be), b->zc.uri);
    if (ik__zk_listen(be, on_session, z) != 0) return IK_ENOMEM;
    z->listening = 1;
    int rc = ik__zk_hazards_check(be, why, why_len);
    if (rc && rc != IK_EUNSAFE) return rc;
    pthread_mutex_init(&z->tmu, NULL);
    ik__cond_init_mono(&z->tcv);
    if (pthread_create(&z->thread, NULL, hz_thread, be) != 0) {
        pthread_cond_destroy(&z->tcv);
        pthread_mutex_destroy(&z->tmu);
        return ik__fail(IK_ENOMEM, why, why_len, "cannot start the hazard check thread");
    }
    z->thread_started = 1;
    return rc;
}

void ik__zk_hazards_close(ik__backend *be)
{
    ik__zk_backend *b = ik__zk_backend_of(be);
    zk_hz *z = b->hzs;
    if (!z) return;
    if (z->thread_started) {
        pthread_mutex_lock(&z->tmu);
        __atomic_store_n(&z->stop, 1, __ATOMIC_RELEASE); /* also read by wait_fd */
        pthread_cond_broadcast(&z->tcv);
        pthread_mutex_unlock(&z->tmu);
        pthread_join(z->thread, NULL);
        pthread_cond_destroy(&z->tcv);
        pthread_mutex_destroy(&z->tmu);
    }
    if (z->listening) ik__zk_unlisten(be, on_session, z);
    pthread_mutex_destroy(&z->run);
    free(z);
    b->hzs = NULL;
}

/* ------------------------------------------------------------------------------
 * The gated writes
 */
int ik__zk_gated_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                              char *why, size_t why_len)
{
    zk_hz *z = hz_of(be);
    if (z) ik__zk_wait_connected(be, ik__zk_connect_wait_ms(ik__zk_slot_free_ms(be)));
    unsigned judged;
    int rc = gate(be, &judged);
    if (rc == IK_EUNSAFE) return ik__hazards_refused(&be->hz, why, why_len);
    if (rc)
        return ik__fail(IK_ESTORE, why, why_len,
                        "ZooKeeper is not connected: its settings cannot be checked");
    if (z) test_pause(z, z->test_acquire_pause_ms);
    rc = ik__zk_slot_acquire(be, req, out, why, why_len);
    if (rc != IK_OK || judged_still(be, judged)) return rc;
    char after[300];
    if (judge_after(be, 1, after, sizeof after) == IK_OK) return IK_OK;
    /* taken on a connection that cannot be vouched for: not ours to issue from; the
     * node stays with the session, and the next take finds it ours (slot_forget) */
    ik__zk_slot_forget(be, out->handle);
    out->handle = NULL;
    return ik__fail(IK_EUNSAFE, why, why_len,
                    "the slot was taken on a connection made after its check: %s", after);
}

int ik__zk_gated_slot_persist(ik__backend *be, void *handle, int64_t record_ms,
                              ik__lease_proof *proof, int64_t *written_ms)
{
    /* not connected (IK_ESTORE): the renewal sends nothing on a handle that is not
     * connected either, and settles what an earlier one left */
    unsigned judged;
    int rc = gate(be, &judged);
    if (rc == IK_EUNSAFE) return rc;
    rc = ik__zk_slot_persist(be, handle, record_ms, proof, written_ms);
    if (rc != IK_OK || judged_still(be, judged)) return rc;
    char why[300];
    /* no wait: the lease's thread runs the renewals, and one that comes back late is
     * worth less than the next, 500 ms on while in doubt */
    return judge_after(be, 0, why, sizeof why); /* refused: the renewal does not count */
}

int ik__zk_gated_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                             ik__tag_write *w, int64_t *first)
{
    /* the connection wait the advance would make (up to 2 s), made here, so that
     * the advance sends on a connection judged first: one that is still down
     * answers now (certainly not done), not after a second wait of its own that a
     * reconnect could end on a connection nobody checked */
    if (hz_of(be) &&
        ik__zk_wait_connected(be, ik__zk_connect_wait_ms(ik__zk_slot_free_ms(be))) == IK_ESTORE)
        return IK_ESTORE;
    unsigned judged;
    int rc = gate(be, &judged);
    if (rc == IK_EUNSAFE) return rc;
    if (rc) return IK_ESTORE; /* certainly not done */
    if (hz_of(be)) test_pause(hz_of(be), hz_of(be)->test_pause_ms);
    rc = ik__zk_tag_advance(be, app, name, kind, w, first);
    /* answered, or read back as landed (the engine would hand it out) */
    int ran = rc == IK_OK || (rc == IK_EINDOUBT && w->own_ev.held && !w->own_ev.code);
    if (!ran || judged_still(be, judged)) return rc;
    char why[300];
    if (judge_after(be, 1, why, sizeof why) == IK_OK) return rc;
    /* landed, on a connection that cannot be vouched for: never handed out */
    if (rc == IK_OK) w->own_ev.first = *first;
    w->own_ev.read = w->own_ev.held = 1;
    w->own_ev.code = "store_unsafe";
    snprintf(w->own_ev.what, sizeof w->own_ev.what,
             "its write was answered on a connection made after its check (%s)", why);
    return IK_EUNSAFE;
}
