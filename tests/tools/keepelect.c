/* keepelect: an ik_election with keep_on_loss, through the public API, for
 * conformance/hold_lost's keep case: after LOST the election must keep its node (or
 * key, or session lock) and not campaign again until its owner says so with
 * ik_election_rejoin (include/idkeeper.h; docs/recipes.md, "One order").
 *
 *   keepelect URI PATH ID TERM_MS
 *       campaigns at PATH as ID, the session timeout or lease TTL TERM_MS, and
 *       prints one line per event on stdout (EPOCHREALTIME-like "S.US" first):
 *         T held|in_doubt|lost WHY     the election's callbacks
 *         T trusted MS                 a proof: the window's end, MS from now
 *       It reads commands on stdin, one a line:
 *         rejoin                       ik_election_rejoin; prints "T rejoin RC"
 *         quit                         resigns, closes, exits 0
 * The password comes from IDKEEPER_PASSWORD. Exit 2 on bad usage or a failed open. */
#include <idkeeper.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

/* One line: the time, word, then text or n. */
static void say(const char *word, const char *text, int64_t n)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    pthread_mutex_lock(&out_mu);
    if (text)
        printf("%ld.%06ld %s %s\n", (long)tv.tv_sec, (long)tv.tv_usec, word, text);
    else
        printf("%ld.%06ld %s %" PRId64 "\n", (long)tv.tv_sec, (long)tv.tv_usec, word, n);
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
}

static void on_change(void *ctx, ik_hold_state s, const char *why)
{
    (void)ctx;
    say(ik_hold_state_name(s), why, 0);
}

static void on_proof(void *ctx, int64_t until)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    say("trusted", NULL, (until - now) / 1000000);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: keepelect URI PATH ID TERM_MS\n");
        return 2;
    }
    ik_coord_options co;
    ik_coord_options_init(&co);
    co.password = getenv("IDKEEPER_PASSWORD");
    int term = atoi(argv[4]);
    co.lease_ttl_ms = term;
    co.zk_session_timeout_ms = term;
    ik_coord *c = NULL;
    char why[512] = "";
    int rc = ik_coord_open(argv[1], &co, &c, why, sizeof why);
    if (rc) {
        fprintf(stderr, "keepelect: open: %s: %s\n", ik_strerror(rc), why);
        return 2;
    }
    ik_election_options eo;
    ik_election_options_init(&eo);
    eo.on_change = on_change;
    eo.on_proof = on_proof;
    eo.keep_on_loss = 1;
    ik_election *e = NULL;
    rc = ik_election_create(c, argv[2], argv[3], &eo, &e);
    if (rc == 0) rc = ik_election_campaign(e);
    if (rc) {
        fprintf(stderr, "keepelect: campaign: %s\n", ik_strerror(rc));
        ik_election_destroy(e);
        ik_coord_close(c);
        return 2;
    }
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "rejoin", 6) == 0) {
            int r = ik_election_rejoin(e);
            say("rejoin", NULL, r);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    ik_election_destroy(e);
    ik_coord_close(c);
    return 0;
}
