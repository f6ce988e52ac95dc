/* test_zk_hazards.c: the pure parts of the zk:// hazard checks (src/lib/backends/zk/zk_hazards.c):
 * reading the four-letter words' answers as ZooKeeper 3.8 writes them, and counting
 * the voters of /zookeeper/config. The checks themselves run against real servers
 * (tests/integration/t_zk_hazards.sh, t_zk_hazards_ensemble.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "zk_hazards.h"

#include <string.h>

/* answers copied from a ZooKeeper 3.8.0 (Debian 12) */
static const char srvr[] = "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29\n"
                           "Latency min/avg/max: 0/0.0/0\nReceived: 1\nSent: 0\nConnections: 1\n"
                           "Outstanding: 0\nZxid: 0x0\nMode: standalone\nNode count: 5\n";
static const char conf[] = "clientPort=24181\nsecureClientPort=-1\ndataDir=/tmp/d/version-2\n"
                           "tickTime=500\nmaxClientCnxns=0\nminSessionTimeout=1000\n"
                           "maxSessionTimeout=120000\nclientPortListenBacklog=-1\nserverId=0\n";
static const char mntr[] = "zk_version\t3.8.0\nzk_server_state\tfollower\n"
                           "zk_avg_fsynctime\t0.0\nzk_min_fsynctime\t0\nzk_cnt_fsynctime\t12\n"
                           "zk_cnt_sync_processor_batch_size\t9\n";

static void values_of_each_word(void **st)
{
    (void)st;
    char v[64];
    assert_int_equal(ik__zk_4lw_value(srvr, "Mode", v, sizeof v), 0);
    assert_string_equal(v, "standalone");
    assert_int_equal(ik__zk_4lw_value(conf, "minSessionTimeout", v, sizeof v), 0);
    assert_string_equal(v, "1000");
    assert_int_equal(ik__zk_4lw_value(conf, "maxSessionTimeout", v, sizeof v), 0);
    assert_string_equal(v, "120000");
    /* a key is a whole key: zk_cnt_fsynctime is not zk_avg_fsynctime's prefix */
    assert_int_equal(ik__zk_4lw_value(mntr, "zk_cnt_fsynctime", v, sizeof v), 0);
    assert_string_equal(v, "12");
    assert_int_equal(ik__zk_4lw_value(mntr, "zk_cnt_sync_processor_batch_size", v, sizeof v), 0);
    assert_string_equal(v, "9");
    assert_int_equal(ik__zk_4lw_value(mntr, "zk_cnt_fsync", v, sizeof v), -1);
    assert_int_equal(ik__zk_4lw_value(conf, "dataDirSize", v, sizeof v), -1);
    assert_int_equal(ik__zk_4lw_value("", "Mode", v, sizeof v), -1);
}

static void closed_words(void **st)
{
    (void)st;
    assert_true(ik__zk_4lw_closed("mntr is not executed because it is not in the whitelist.\n"));
    assert_false(ik__zk_4lw_closed(mntr));
    assert_false(ik__zk_4lw_closed(NULL));
}

static void voters_of_a_config(void **st)
{
    (void)st;
    const char three[] = "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n"
                         "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\n"
                         "server.3=127.0.0.1:2890:3890;127.0.0.1:2183\n"
                         "server.4=127.0.0.1:2891:3891:observer;127.0.0.1:2184\n"
                         "version=100000000";
    assert_int_equal(ik__zk_config_voters(three, (int)strlen(three)), 3);
    const char one[] = "server.1=h:2888:3888:participant;0.0.0.0:2181\nversion=0";
    assert_int_equal(ik__zk_config_voters(one, (int)strlen(one)), 1);
    assert_int_equal(ik__zk_config_voters("", 0), 0); /* a standalone server */
    /* only the length given counts (the node's data is not NUL-terminated) */
    assert_int_equal(ik__zk_config_voters(three, (int)(strchr(three, '\n') - three)), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values_of_each_word),
        cmocka_unit_test(closed_words),
        cmocka_unit_test(voters_of_a_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
