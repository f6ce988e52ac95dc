/* test_alloc_fail.c: allocation-failure injection (SQLite's malloc tests, curl's
 * torture mode). The library promises IK_ENOMEM on allocation failure and no leak:
 * for every N, the Nth allocation along a main path fails, and the path must answer
 * 0 or IK_ENOMEM, never crash, and leave nothing allocated once torn down.
 *
 * Paths: the layout (which must not allocate at all), the generator, a slot lease on
 * local: (start, info, the lease thread's record writes, the slot list, release; and
 * begin, wait_held, release), tags on local: (create, get, list), segment and
 * sequence IDs on local:.
 *
 * And what a failed allocation must never do to a sequence (docs/sequence.md):
 * commit a range it then cannot hand out, without a gap line. For every N, a
 * sequence request whose Nth allocation fails leaves the tag's max_id advanced by
 * exactly the IDs it answered plus those the gap hook reported; and a request of
 * 10,000,000 IDs whose answer (80 MB) cannot be allocated, the case of a process
 * whose address space is nearly used, commits nothing.
 *
 * The library's own calls to malloc, calloc, realloc, free, strdup, strndup and
 * posix_memalign are wrapped at link time (-Wl,--wrap=..., tests/CMakeLists.txt), so
 * only its allocations count and fail; SQLite's and libc's inner ones do not. Each
 * allocation made through a wrapper is kept in a table until freed; a path's run
 * must end with the table empty. Allocations on the library's own threads (the lease,
 * the segment loader, the sequence committer) count too: their order may vary from
 * run to run, which only varies which of them fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the wrappers ----------------------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

#define LIVE_MAX 65536 /* open addressing; a path holds far fewer at once */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static void *live[LIVE_MAX];
static long nlive;
static atomic_long nallocs;     /* allocations asked for since reset */
static atomic_long fail_at;     /* the allocation number that fails (0: none) */
static atomic_long failures;    /* how many were failed */
static atomic_size_t fail_size; /* every allocation of at least this many bytes fails (0: none) */

static size_t slot_of(void *p)
{
    return ((uintptr_t)p >> 4) * 2654435761u % LIVE_MAX;
}

static void live_add(void *p)
{
    pthread_mutex_lock(&live_mu);
    size_t i = slot_of(p);
    while (live[i])
        i = (i + 1) % LIVE_MAX;
    live[i] = p;
    nlive++;
    pthread_mutex_unlock(&live_mu);
}

/* Removes p from the table; 0 if it was not there (not ours: libc's or a client
 * library's allocation, freed by the library). */
static int live_del(void *p)
{
    int found = 0;
    pthread_mutex_lock(&live_mu);
    size_t i = slot_of(p);
    while (live[i]) {
        if (live[i] == p) {
            found = 1;
            live[i] = NULL;
            nlive--;
            /* re-insert the rest of the cluster */
            for (size_t j = (i + 1) % LIVE_MAX; live[j]; j = (j + 1) % LIVE_MAX) {
                void *q = live[j];
                live[j] = NULL;
                size_t k = slot_of(q);
                while (live[k])
                    k = (k + 1) % LIVE_MAX;
                live[k] = q;
            }
            break;
        }
        i = (i + 1) % LIVE_MAX;
    }
    pthread_mutex_unlock(&live_mu);
    return found;
}

/* 1 if this allocation is the one that fails. */
static int should_fail(void)
{
    long k = atomic_fetch_add(&nallocs, 1) + 1;
    if (k == atomic_load(&fail_at)) {
        atomic_fetch_add(&failures, 1);
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    size_t big = atomic_load(&fail_size);
    if (should_fail() || (big && n >= big)) return NULL;
    void *p = __real_malloc(n);
    if (p) live_add(p);
    return p;
}

void *__wrap_calloc(size_t k, size_t n)
{
    size_t big = atomic_load(&fail_size);
    if (should_fail() || (big && k * n >= big)) return NULL;
    void *p = __real_calloc(k, n);
    if (p) live_add(p);
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    size_t big = atomic_load(&fail_size);
    if (should_fail() || (big && n >= big)) return NULL;
    int ours = p ? live_del(p) : 0;
    void *q = __real_realloc(p, n);
    if (q) {
        live_add(q);
    } else if (ours) {
        live_add(p); /* still allocated */
    }
    return q;
}

void __wrap_free(void *p)
{
    if (p) live_del(p);
    __real_free(p);
}

char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = __wrap_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

char *__wrap_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = __wrap_malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = 0;
    }
    return d;
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    if (should_fail()) return 12; /* ENOMEM */
    int r = __real_posix_memalign(p, align, n);
    if (r == 0) live_add(*p);
    return r;
}

static void arm(long n)
{
    atomic_store(&nallocs, 0);
    atomic_store(&failures, 0);
    atomic_store(&fail_at, n);
}

/* ---- the paths ---------------------------------------------------------------------- */

/* A path runs once against a fresh store and tears down what it made. Returns 0 or
 * the first error it met (which must be IK_ENOMEM when an allocation failed). */
typedef int (*path_fn)(const char *uri);

static int path_generator(const char *uri)
{
    (void)uri;
    ik_layout l;
    ik_layout_default(&l);
    ik_snowflake *g = NULL;
    int rc = ik_snowflake_create(&l, 5, NULL, &g);
    if (rc) return rc;
    ik_snowflake_grant(g, 7, 0, IK_NO_CEILING, IK_FOREVER);
    int64_t ids[16];
    rc = ik_snowflake_next_n(g, 16, ids);
    ik_snowflake_destroy(g);
    return rc;
}

/* What both lease paths start from: the coord at uri and a generator for workers
 * 0-3. Returns the first failure; what was made is in *c and *g either way. */
static int open_coord_and_generator(const char *uri, ik_coord **c, ik_snowflake **g)
{
    ik_layout lay;
    ik_layout_default(&lay);
    lay.worker_max = 3;
    char why[256];
    int rc = ik_coord_open(uri, NULL, c, why, sizeof why);
    if (rc == 0) rc = ik_snowflake_create(&lay, 5, NULL, g);
    return rc;
}

static int path_lease(const char *uri)
{
    ik_coord *c = NULL;
    ik_snowflake *g = NULL;
    ik_slot_lease *l = NULL;
    char why[256];
    int rc = open_coord_and_generator(uri, &c, &g);
    if (rc == 0) {
        ik_lease_options o;
        ik_lease_options_init(&o);
        o.app = "alloc";
        o.identity = "alloc-test";
        o.persist_interval_ms = 20;
        rc = ik_slot_lease_start(c, g, &o, &l, why, sizeof why);
    }
    if (rc == 0) {
        int64_t id;
        int r = ik_snowflake_next(g, &id);
        (void)r; /* the time guard may hold it back: not this test's concern */
        ik_lease_info li;
        ik_slot_lease_get_info(l, &li);
        /* a few of the lease thread's record writes (persist_interval_ms 20: one every 10 ms) */
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (rc == 0) {
        ik_slot_info *slots = NULL;
        size_t n = 0;
        rc = ik_slots_list(c, "alloc", &slots, &n);
        ik_free(slots);
    }
    int r2 = ik_slot_lease_release(l);
    if (rc == 0) rc = r2;
    ik_snowflake_destroy(g);
    ik_coord_close(c);
    return rc;
}

/* The asynchronous start: begin, wait until held, release. */
static int path_lease_begin(const char *uri)
{
    ik_coord *c = NULL;
    ik_snowflake *g = NULL;
    ik_slot_lease *l = NULL;
    char why[256];
    int rc = open_coord_and_generator(uri, &c, &g);
    if (rc == 0) {
        ik_lease_options o;
        ik_lease_options_init(&o);
        o.app = "alloc-begin";
        o.identity = "alloc-test";
        rc = ik_slot_lease_begin(c, g, &o, &l, why, sizeof why);
    }
    if (rc == 0) rc = ik_slot_lease_wait_held(l, 5000, why, sizeof why);
    int r2 = l ? ik_slot_lease_release(l) : 0;
    if (rc == 0) rc = r2;
    ik_snowflake_destroy(g);
    ik_coord_close(c);
    return rc;
}

static int path_tags(const char *uri)
{
    ik_coord *c = NULL;
    char why[256];
    int rc = ik_coord_open(uri, NULL, &c, why, sizeof why);
    if (rc == 0) rc = ik_tag_create(c, "alloc", "t1", IK_TAG_SEGMENT, 1, 10, "d", why, sizeof why);
    if (rc == IK_EEXIST) rc = 0;
    ik_tag_info ti;
    if (rc == 0) rc = ik_tag_get(c, "alloc", "t1", &ti);
    ik_tag_info *list = NULL;
    size_t n = 0;
    if (rc == 0) rc = ik_tags_list(c, "alloc", &list, &n);
    ik_free(list);
    ik_coord_close(c);
    return rc;
}

/* The tags the counter paths draw from exist before the run (their creation is
 * path_tags's). */
static int path_counters(const char *uri)
{
    ik_coord *c = NULL;
    ik_segment *s = NULL;
    ik_sequence *q = NULL;
    char why[256];
    int64_t ids[8];
    int rc = ik_coord_open(uri, NULL, &c, why, sizeof why);
    if (rc == 0) {
        ik_segment_options o;
        ik_segment_options_init(&o);
        o.wait_ms = 2000;
        rc = ik_segment_create(c, "alloc", &o, &s);
    }
    if (rc == 0) rc = ik_segment_next_wait(s, "seg", 8, ids);
    if (rc == 0) rc = ik_sequence_create(c, "alloc", &q);
    if (rc == 0) rc = ik_sequence_next_wait(q, "seq", 8, ids);
    ik_sequence_destroy(q);
    ik_segment_destroy(s);
    ik_coord_close(c);
    return rc;
}

/* Runs path once without failures (it must succeed), then once for each N up to
 * the number of allocations it made plus a margin, failing the Nth; checks the
 * answer and that nothing is left allocated. */
static void inject(const char *name, path_fn fn, const char *uri)
{
    arm(0);
    int rc = fn(uri);
    if (rc != 0) fail_msg("%s: fails without injection: %s", name, ik_strerror(rc));
    assert_int_equal(nlive, 0);
    long total = atomic_load(&nallocs);
    long failed_runs = 0;
    for (long n = 1; n <= total + 4; n++) {
        arm(n);
        rc = fn(uri);
        long failed = atomic_load(&failures);
        arm(0);
        if (failed > 0 && rc != 0) failed_runs++;
        if (rc != 0 && rc != IK_ENOMEM)
            fail_msg("%s: allocation %ld of %ld failed, and the path answered %s, not "
                     "IK_ENOMEM",
                     name, n, total, ik_errname(rc));
        if (nlive != 0)
            fail_msg("%s: allocation %ld of %ld failed: %ld allocations leaked", name, n, total,
                     nlive);
    }
    print_message("%s: %ld allocations, each failed in turn (%ld runs answered IK_ENOMEM)\n", name,
                  total, failed_runs);
}

/* ---- a sequence's accounting under a failed allocation ------------------------------ */

static atomic_llong gap_ids; /* IDs the gap hook reported */

static void count_gap(void *ctx, const char *app, const char *tag, ik_tag_kind kind, int64_t first,
                      int64_t count, const char *why)
{
    (void)ctx, (void)app, (void)tag, (void)kind, (void)first, (void)why;
    atomic_fetch_add(&gap_ids, count);
}

/* The tag's max_id, read with nothing armed. */
static int64_t max_id_of(const char *uri, const char *tag)
{
    long armed = atomic_load(&fail_at);
    size_t big = atomic_load(&fail_size);
    atomic_store(&fail_at, 0);
    atomic_store(&fail_size, 0);
    ik_coord *c;
    char why[256];
    ik_tag_info ti;
    assert_int_equal(ik_coord_open(uri, NULL, &c, why, sizeof why), 0);
    assert_int_equal(ik_tag_get(c, "alloc", tag, &ti), 0);
    ik_coord_close(c);
    atomic_store(&fail_at, armed);
    atomic_store(&fail_size, big);
    return ti.max_id;
}

/* One request of n IDs of tag "seq" through a sequence of its own: its answer. */
static int draw_sequence(const char *uri, size_t n, int64_t *ids)
{
    ik_coord *c = NULL;
    ik_sequence *q = NULL;
    char why[256];
    int rc = ik_coord_open(uri, NULL, &c, why, sizeof why);
    if (rc == 0) rc = ik_sequence_create(c, "alloc", &q);
    if (rc == 0) rc = ik_sequence_next_wait(q, "seq", n, ids);
    ik_sequence_destroy(q);
    ik_coord_close(c);
    return rc;
}

static void sequence_never_commits_what_it_cannot_answer(void **st)
{
    char dir[64], uri[80], why[256];
    local_dir_make(dir, uri, "ik-alloc-seq");
    ik_coord *c;
    assert_int_equal(ik_coord_open(uri, NULL, &c, why, sizeof why), 0);
    assert_int_equal(ik_tag_create(c, "alloc", "seq", IK_TAG_SEQUENCE, 1, 1, "", why, sizeof why),
                     0);
    ik_coord_close(c);
    ik_set_gap_hook(count_gap, NULL);
    int64_t ids[8];
    arm(0);
    assert_int_equal(draw_sequence(uri, 8, ids), 0);
    long total = atomic_load(&nallocs);
    for (long n = 1; n <= total + 4; n++) {
        int64_t before = max_id_of(uri, "seq");
        atomic_store(&gap_ids, 0);
        arm(n);
        int rc = draw_sequence(uri, 8, ids);
        arm(0);
        int64_t advanced = max_id_of(uri, "seq") - before;
        int64_t answered = rc == 0 ? 8 : 0;
        if (advanced != answered + atomic_load(&gap_ids))
            fail_msg("allocation %ld of %ld failed (%s): max_id advanced by %lld, %lld IDs "
                     "answered, %lld reported as a gap",
                     n, total, ik_errname(rc), (long long)advanced, (long long)answered,
                     (long long)atomic_load(&gap_ids));
        assert_int_equal(nlive, 0);
    }

    /* 10,000,000 IDs whose answer does not fit in what is left of memory */
    size_t big = 10000000;
    int64_t *many = __real_malloc(big * sizeof *many);
    assert_non_null(many);
    int64_t before = max_id_of(uri, "seq");
    atomic_store(&gap_ids, 0);
    atomic_store(&fail_size, (size_t)64 << 20);
    int rc = draw_sequence(uri, big, many);
    atomic_store(&fail_size, 0);
    __real_free(many);
    assert_int_equal(rc, IK_ENOMEM);
    int64_t advanced = max_id_of(uri, "seq") - before;
    if (advanced != atomic_load(&gap_ids))
        fail_msg("a request of %zu IDs answered IK_ENOMEM, yet max_id advanced by %lld and %lld "
                 "were reported as a gap",
                 big, (long long)advanced, (long long)atomic_load(&gap_ids));
    assert_int_equal(advanced, 0);
    ik_set_gap_hook(NULL, NULL);
    local_dir_remove(dir);
}

static void layout_never_allocates(void **st)
{
    arm(0);
    ik_layout l;
    char why[200], text[200];
    ik_layout_default(&l);
    assert_int_equal(ik_layout_parse(&l, "js53,workers=0-7", why, sizeof why), 0);
    assert_int_equal(ik_layout_check(&l, l.epoch_ms + 1000, why, sizeof why), 0);
    ik_layout_format(&l, text, sizeof text);
    int64_t id;
    ik_id_parts p;
    assert_int_equal(ik_layout_compose(&l, 5, 1, 2, &id), 0);
    assert_int_equal(ik_layout_decode(&l, id, &p), 0);
    assert_int_equal(atomic_load(&nallocs), 0);
}

static void generator(void **st)
{
    inject("generator", path_generator, NULL);
}

static void lease_local(void **st)
{
    char dir[64], uri[80];
    local_dir_make(dir, uri, "ik-alloc-lease");
    inject("lease on local:", path_lease, uri);
    local_dir_remove(dir);
}

static void lease_begin_local(void **st)
{
    char dir[64], uri[80];
    local_dir_make(dir, uri, "ik-alloc-begin");
    inject("lease begin/wait_held on local:", path_lease_begin, uri);
    local_dir_remove(dir);
}

static void tags_local(void **st)
{
    char dir[64], uri[80];
    local_dir_make(dir, uri, "ik-alloc-tags");
    inject("tags on local:", path_tags, uri);
    local_dir_remove(dir);
}

static void counters_local(void **st)
{
    char dir[64], uri[80], why[256];
    local_dir_make(dir, uri, "ik-alloc-counters");
    ik_coord *c;
    assert_int_equal(ik_coord_open(uri, NULL, &c, why, sizeof why), 0);
    assert_int_equal(ik_tag_create(c, "alloc", "seg", IK_TAG_SEGMENT, 1, 5, "", why, sizeof why),
                     0);
    assert_int_equal(ik_tag_create(c, "alloc", "seq", IK_TAG_SEQUENCE, 1, 1, "", why, sizeof why),
                     0);
    ik_coord_close(c);
    inject("segment and sequence on local:", path_counters, uri);
    local_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_never_allocates),
        cmocka_unit_test(generator),
        cmocka_unit_test(lease_local),
        cmocka_unit_test(lease_begin_local),
        cmocka_unit_test(tags_local),
        cmocka_unit_test(counters_local),
        cmocka_unit_test(sequence_never_commits_what_it_cannot_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
