/* twoseq: two ik_sequence on one ik_coord, both drawing one tag (the conformance
 * group tags_two_sequences; include/idkeeper.h lets a program make more than one
 * sequence on a coord, so every backend must keep their IDs apart).
 *
 *   twoseq URI TAG load
 *       sequences X and Y, two threads each, 150 requests of 1..5 IDs a thread
 *   twoseq URI TAG lost GO_FILE
 *       X and Y draw once at the same time (so that the backend has connections
 *       for both), print "warm", wait for GO_FILE (the test arms its fault: the
 *       next sequence write's COMMIT is lost), then X asks for 5 IDs and, 300 ms
 *       later, while X's write waits before its COMMIT
 *       (IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS), Y asks for 3; then each draws 3 more
 *
 * The password comes from IDKEEPER_PASSWORD. Output, one line each:
 *   ids S ID...          an answer of sequence S (X or Y)
 *   err S RC             a request of S that failed (no IDs)
 *   at exit: ik_sequence_gap_ids_total{tag="T",why="W"} N
 *                        after ik_coord_close (which settles open doubts): the
 *                        gaps the library reported through ik_set_gap_hook, as
 *                        the daemon writes its metrics at exit (tests/tools/
 *                        idcheck.py gaps holds them to the library's log lines)
 *   done
 * Exit 0, or 2 on bad usage or a failed open. */
#include <idkeeper.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *tag;
static struct {
    char why[32];
    int64_t ids;
} gaps[8];

static void on_gap(void *ctx, const char *app, const char *t, ik_tag_kind kind, int64_t first,
                   int64_t count, const char *why)
{
    (void)ctx;
    (void)app;
    (void)kind;
    if (strcmp(t, tag) != 0) return;
    (void)first;
    pthread_mutex_lock(&out_mu);
    for (size_t i = 0; i < sizeof gaps / sizeof gaps[0]; i++)
        if (!gaps[i].why[0] || strcmp(gaps[i].why, why) == 0) {
            snprintf(gaps[i].why, sizeof gaps[i].why, "%s", why);
            gaps[i].ids += count;
            break;
        }
    pthread_mutex_unlock(&out_mu);
}

static void draw(ik_sequence *s, const char *name, size_t n)
{
    int64_t ids[8];
    int rc = ik_sequence_next_wait(s, tag, n, ids);
    pthread_mutex_lock(&out_mu);
    if (rc) {
        printf("err %s %d\n", name, rc);
    } else {
        printf("ids %s", name);
        for (size_t i = 0; i < n; i++)
            printf(" %" PRId64, ids[i]);
        printf("\n");
    }
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
}

typedef struct job {
    ik_sequence *s;
    const char *name;
    int rounds;
    size_t n;
    unsigned seed;
} job;

static void *run(void *arg)
{
    job *j = arg;
    for (int i = 0; i < j->rounds; i++)
        draw(j->s, j->name, j->n ? j->n : 1 + (size_t)(rand_r(&j->seed) % 5));
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[3], "load") && (strcmp(argv[3], "lost") || argc < 5))) {
        fprintf(stderr, "usage: twoseq URI TAG load | twoseq URI TAG lost GO_FILE\n");
        return 2;
    }
    tag = argv[2];
    ik_set_gap_hook(on_gap, NULL);
    ik_coord_options o;
    ik_coord_options_init(&o);
    o.password = getenv("IDKEEPER_PASSWORD");
    ik_coord *c;
    char why[512] = "";
    int rc = ik_coord_open(argv[1], &o, &c, why, sizeof why);
    if (rc) {
        fprintf(stderr, "twoseq: cannot open: %s\n", why);
        return 2;
    }
    ik_sequence *x, *y;
    if (ik_sequence_create(c, NULL, &x) || ik_sequence_create(c, NULL, &y)) {
        fprintf(stderr, "twoseq: cannot create the sequences\n");
        return 2;
    }
    pthread_t th[4];
    if (strcmp(argv[3], "load") == 0) {
        job jobs[4] = {
            {x, "X", 150, 0, 1}, {x, "X", 150, 0, 2}, {y, "Y", 150, 0, 3}, {y, "Y", 150, 0, 4}};
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, run, &jobs[i]);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
    } else {
        job wx = {x, "X", 1, 1, 0}, wy = {y, "Y", 1, 1, 0};
        pthread_create(&th[0], NULL, run, &wx);
        pthread_create(&th[1], NULL, run, &wy);
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
        pthread_mutex_lock(&out_mu);
        printf("warm\n");
        fflush(stdout);
        pthread_mutex_unlock(&out_mu);
        while (access(argv[4], F_OK) != 0)
            sleep_ms(10);
        job fx = {x, "X", 1, 5, 0}, fy = {y, "Y", 1, 3, 0};
        pthread_create(&th[0], NULL, run, &fx);
        sleep_ms(300);
        pthread_create(&th[1], NULL, run, &fy);
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
        job ax = {x, "X", 3, 1, 0}, ay = {y, "Y", 3, 1, 0};
        pthread_create(&th[0], NULL, run, &ax);
        pthread_create(&th[1], NULL, run, &ay);
        pthread_join(th[0], NULL);
        pthread_join(th[1], NULL);
    }
    ik_sequence_destroy(x);
    ik_sequence_destroy(y);
    ik_coord_close(c);
    ik_set_gap_hook(NULL, NULL);
    for (size_t i = 0; i < sizeof gaps / sizeof gaps[0] && gaps[i].why[0]; i++)
        printf("at exit: ik_sequence_gap_ids_total{tag=\"%s\",why=\"%s\"} %" PRId64 "\n", tag,
               gaps[i].why, gaps[i].ids);
    printf("done\n");
    return 0;
}
