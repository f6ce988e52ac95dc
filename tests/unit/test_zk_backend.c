/* test_zk_backend.c: the pure parts of the ZooKeeper backend (no server needed):
 * digest ACL ids, node data, slot names, the free-slot arithmetic, a Leaf fleet's
 * node names and data. Everything that
 * talks to ZooKeeper is tested against a real one (tests/integration/t_zk_*.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend_zk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void digest_ids_match_zookeeper(void **st)
{
    (void)st;
    /* base64(sha1("user:password")), as computed by `openssl dgst -sha1 -binary | base64`
     * and accepted by ZooKeeper (t_zk_auth.sh checks a live server agrees). */
    static const struct {
        const char *auth, *id;
    } v[] = {
        {"app:s3cret", "app:e2nIdT66oYnDgbYIwoOP6SxOio4="},
        {"super:superpw", "super:g9oN2HttPfn8MMWJZ2r45Np/LIA="},
        {"u:", "u:IX23jg4I7W2/R//KoV8VL1UfuBM="},
        {"a:b:c", "a:cLzgnoJ6mP5qz3w+mwvPE2vDgu0="}, /* the password may hold ':' */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char *id = ik__zk_digest_id(v[i].auth);
        assert_non_null(id);
        assert_string_equal(id, v[i].id);
        free(id);
    }
    assert_null(ik__zk_digest_id("no-colon"));
}

static void slot_data_round_trips(void **st)
{
    (void)st;
    static const char *idents[] = {"web-3:8080", "a b = c", "x", "ünï=cödé\t:tab",
                                   "holder=fake\nrecord_ms=1"};
    char buf[1024];
    for (size_t i = 0; i < sizeof idents / sizeof idents[0]; i++) {
        int n = ik__zk_format_slot(buf, sizeof buf, INT64_C(1795316385635), INT64_C(1795316384653),
                                   INT64_C(0x10000090b7e0001), idents[i]);
        assert_true(n > 0);
        ik__zk_fields f;
        ik__zk_parse_fields(buf, n, &f);
        assert_true(f.has_record);
        assert_int_equal(f.record_ms, INT64_C(1795316385635));
        assert_int_equal(f.since_ms, INT64_C(1795316384653));
        assert_int_equal(f.session, INT64_C(0x10000090b7e0001));
        /* the identity is the rest of the data: even one that looks like keys */
        assert_string_equal(f.ident, idents[i]);
    }
    /* too small a buffer: refused, not truncated */
    assert_int_equal(ik__zk_format_slot(buf, 20, 1, 1, 1, "someone"), -1);
}

static void bad_records_are_not_records(void **st)
{
    (void)st;
    static const char *bad[] = {"",
                                "record_ms=",
                                "record_ms=-5\n",
                                "record_ms=12x\n",
                                "record_ms=99999999999999999999\n",
                                "garbage",
                                "\n\n=\n",
                                "holder=a\nrecord_ms=5\n"}; /* after holder= all is identity */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ik__zk_fields f;
        ik__zk_parse_fields(bad[i], (int)strlen(bad[i]), &f);
        assert_false(f.has_record);
    }
    ik__zk_fields f;
    const char *owner = "pid=42\nhost=web-3\nsince_ms=7\nsession=0xabc\nidentity=w:1\n";
    ik__zk_parse_fields(owner, (int)strlen(owner), &f);
    assert_int_equal(f.pid, 42);
    assert_string_equal(f.host, "web-3");
    assert_int_equal(f.session, 0xabc);
    assert_string_equal(f.ident, "w:1");
}

static void slot_names_are_canonical(void **st)
{
    (void)st;
    char name[16];
    uint32_t w;
    ik__zk_worker_name(7, name, sizeof name);
    assert_string_equal(name, "0007");
    ik__zk_worker_name(65535, name, sizeof name);
    assert_string_equal(name, "65535");
    assert_int_equal(ik__zk_parse_worker("0007", &w), 0);
    assert_int_equal(w, 7);
    assert_int_equal(ik__zk_parse_worker("1023", &w), 0);
    assert_int_equal(w, 1023);
    assert_int_equal(ik__zk_parse_worker("12345", &w), 0);
    assert_int_equal(w, 12345);
    static const char *bad[] = {"7",    "007",  "00007", "01234", "",
                                "abcd", "-001", "0x10",  "owner", "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ik__zk_parse_worker(bad[i], &w), -1);
}

static void identity_names_are_safe_node_names(void **st)
{
    (void)st;
    static const struct {
        const char *id, *name;
    } v[] = {
        {"web-3:8080", "web-3:8080"},
        {"web-3.example.com:8080", "web-3.example.com:8080"},
        {"a/b", "a%2Fb"}, /* no nesting */
        {"50%", "50%25"}, /* '%' itself, so the mapping is one to one */
        {".", "%2E"},     /* "." and ".." are not node names */
        {"..", "%2E%2E"},
        {"...", "..."},
        {"x y", "x%20y"},
    };
    char out[64];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        assert_int_equal(ik__zk_identity_name(v[i].id, out, sizeof out), (int)strlen(v[i].name));
        assert_string_equal(out, v[i].name);
    }
    assert_int_equal(ik__zk_identity_name("abcd", out, 4), -1);      /* does not fit */
    assert_int_equal(ik__zk_identity_name("", out, sizeof out), -1); /* empty */
    char utf8[] = {(char)0xc3, (char)0xa9, 0};
    assert_int_equal(ik__zk_identity_name(utf8, out, sizeof out), 6);
    assert_string_equal(out, "%C3%A9");
}

static void nth_free_skips_taken_slots(void **st)
{
    (void)st;
    ik__zk_wset s = {0};
    uint32_t lo = 10, hi = 41; /* 32 slots */
    srand(7);
    /* take them all in a random order, always through nth_free: each pick is free,
     * and once all are taken there is none left. */
    for (uint32_t taken = 0; taken < hi - lo + 1; taken++) {
        uint64_t k = (uint64_t)rand() % (hi - lo + 1 - taken);
        uint32_t w = ik__zk_wset_nth_free(&s, lo, k);
        assert_true(w >= lo && w <= hi);
        assert_false(ik__zk_wset_has(&s, w));
        /* k-th free means exactly k free slots below it */
        uint64_t below = 0;
        for (uint32_t x = lo; x < w; x++)
            below += !ik__zk_wset_has(&s, x);
        assert_int_equal(below, k);
        assert_int_equal(ik__zk_wset_add(&s, w), 0);
        assert_int_equal(ik__zk_wset_add(&s, w), 0); /* twice: no change */
        assert_int_equal(s.n, taken + 1);
    }
    for (size_t i = 1; i < s.n; i++)
        assert_true(s.v[i - 1] < s.v[i]);
    free(s.v);
}

/* A Leaf fleet's nodes (backend_zk_leaf.c): the data as Leaf's Jackson writes it,
 * read by key in any order; names IP:PORT-NNNNNNNNNN. */
static void leaf_nodes_read_as_leaf_writes_them(void **st)
{
    (void)st;
    ik__zk_leaf_data d;
    char buf[256];
    int n = ik__zk_leaf_format(buf, sizeof buf, "10.0.0.1:8080", 1700000000123);
    assert_string_equal(buf, "{\"ip\":\"10.0.0.1\",\"port\":\"8080\",\"timestamp\":1700000000123}");
    assert_int_equal(ik__zk_leaf_parse_data(buf, n, &d), 0);
    assert_string_equal(d.ip, "10.0.0.1");
    assert_string_equal(d.port, "8080");
    assert_int_equal(d.timestamp_ms, 1700000000123);
    static const char *const reordered =
        " {\"timestamp\" : 5, \"port\": 80, \"x\":\"y\", \"ip\":\"a\"}\n";
    assert_int_equal(ik__zk_leaf_parse_data(reordered, (int)strlen(reordered), &d), 0);
    assert_int_equal(d.timestamp_ms, 5);
    assert_string_equal(d.port, "80");
    static const char *const bad[] = {
        "not json",
        "{}",
        "{\"ip\":\"a\",\"port\":\"1\"}",
        "{\"timestamp\":\"5\"}",
        "{\"timestamp\":-5}",
        "{\"timestamp\":5",
        "{\"timestamp\":5}x",
        "{\"timestamp\":99999999999999999999}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ik__zk_leaf_parse_data(bad[i], (int)strlen(bad[i]), &d), -1);

    char ident[64];
    uint32_t seq;
    assert_int_equal(ik__zk_leaf_parse_name("10.0.0.1:8080-0000000042", ident, sizeof ident, &seq),
                     0);
    assert_string_equal(ident, "10.0.0.1:8080");
    assert_int_equal(seq, 42);
    static const char *const bad_names[] = {
        "garbage",
        "10.0.0.1:8080-42",
        "a-b:1-0000000001",
        "10.0.0.1-0000000001",
        "10.0.0.1:8080-00000000x1",
        "10.0.0.1:8080-9999999999",
        "10.0.0.1:8080_0000000001",
    };
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++)
        assert_int_equal(ik__zk_leaf_parse_name(bad_names[i], ident, sizeof ident, &seq), -1);
    assert_int_equal(ik__zk_leaf_identity_check("10.0.0.1:8080", NULL, 0), 0);
    static const char *const bad_ids[] = {"host-1:8080", "10.0.0.1",     "10.0.0.1:",      ":8080",
                                          "a:b:8080",    "10.0.0.1:80x", "10.0.0.1:123456"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++)
        assert_int_equal(ik__zk_leaf_identity_check(bad_ids[i], NULL, 0), -10001);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(digest_ids_match_zookeeper),
        cmocka_unit_test(slot_data_round_trips),
        cmocka_unit_test(bad_records_are_not_records),
        cmocka_unit_test(slot_names_are_canonical),
        cmocka_unit_test(identity_names_are_safe_node_names),
        cmocka_unit_test(nth_free_skips_taken_slots),
        cmocka_unit_test(leaf_nodes_read_as_leaf_writes_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
