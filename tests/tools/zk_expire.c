/* zk_expire: the multi of zk_session.c (invariant ZS4) on a real ZooKeeper, on a handle
 * whose session the client knows is dead and on one still connecting.
 *
 *   zk_expire HOST:PORT CHROOT [--raw]
 *
 * Makes CHROOT/x, opens a handle under CHROOT, kills its session the way Curator's
 * KillSession does (a second handle on the same session id closes it; again if the
 * first took the session back meanwhile), waits until the first handle says
 * ZOO_EXPIRED_SESSION_STATE, then sends the slot write's multi, [check x, set x],
 * through ik__zk_amulti and ik__zk_multi: both must answer
 * ZINVALIDSTATE. A handle to a port nobody listens on must get ZCONNECTIONLOSS.
 * Exit 0 when they do, 1 otherwise, 2 when ZooKeeper does not play its part.
 *
 * --raw sends the same multi with the client's own zoo_amulti instead: with
 * libzookeeper_mt 3.8 (Debian 12) the process aborts ("free(): invalid pointer"),
 * which is why ZS4 exists. A test tool, never installed. */
#include "zk_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to ms for zoo_state(zh) == want. */
static int wait_state(zhandle_t *zh, int want, long ms)
{
    for (long t = 0; t < ms; t += 20) {
        if (zoo_state(zh) == want) return 1;
        nap_ms(20);
    }
    return zoo_state(zh) == want;
}

static int expect(const char *what, int got, int want)
{
    printf("zk_expire: %s: %s (%d)\n", what, zerror(got), got);
    if (got == want) return 0;
    fprintf(stderr, "zk_expire: %s answered %s, want %s\n", what, zerror(got), zerror(want));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: zk_expire HOST:PORT CHROOT [--raw]\n");
        return 2;
    }
    const char *hosts = argv[1], *chroot = argv[2];
    int raw = argc > 3 && strcmp(argv[3], "--raw") == 0;
    char rooted[512];
    snprintf(rooted, sizeof rooted, "%s%s", hosts, chroot);
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);

    zhandle_t *setup = zookeeper_init(hosts, NULL, 4000, NULL, NULL, 0);
    if (!setup || !wait_state(setup, ZOO_CONNECTED_STATE, 10000)) {
        fprintf(stderr, "zk_expire: cannot connect to %s\n", hosts);
        return 2;
    }
    char x[600];
    snprintf(x, sizeof x, "%s/x", chroot);
    zoo_create(setup, chroot, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_create(setup, x, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zookeeper_close(setup);

    zhandle_t *zh = zookeeper_init(rooted, NULL, 4000, NULL, NULL, 0);
    if (!zh || !wait_state(zh, ZOO_CONNECTED_STATE, 10000)) {
        fprintf(stderr, "zk_expire: cannot connect to %s\n", rooted);
        return 2;
    }
    clientid_t id = *zoo_client_id(zh);
    /* The second handle takes the session over (the server drops zh's connection)
     * and closes it. zh may take the session back first, when it reconnects before
     * the close went out (the close is then not sent): so, again, 5 times at most. */
    int expired = 0, attempt = 0;
    while (attempt < 5 && !expired) {
        attempt++;
        zhandle_t *killer = zookeeper_init(hosts, NULL, 4000, &id, NULL, 0);
        if (!killer || !wait_state(killer, ZOO_CONNECTED_STATE, 10000)) {
            fprintf(stderr, "zk_expire: cannot open a second handle on session 0x%llx\n",
                    (unsigned long long)id.client_id);
            return 2;
        }
        zookeeper_close(killer);
        expired = wait_state(zh, ZOO_EXPIRED_SESSION_STATE, 10000);
    }
    if (!expired) {
        fprintf(stderr, "zk_expire: the handle never heard its session expire (state %d)\n",
                zoo_state(zh));
        return 2;
    }
    printf("zk_expire: session 0x%llx expired (closed by a second handle, try %d); the "
           "client says so\n",
           (unsigned long long)id.client_id, attempt);

    struct Stat st;
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    memset(res, 0, sizeof res);
    zoo_check_op_init(&ops[0], "/x", -1);
    zoo_set_op_init(&ops[1], "/x", "1", 1, -1, &st);
    int bad = 0;
    if (raw) {
        int zrc = zoo_amulti(zh, 2, ops, res, NULL, NULL);
        printf("zk_expire: --raw: zoo_amulti answered %s and the process lives\n", zerror(zrc));
    } else {
        bad |= expect("ik__zk_amulti on the expired handle",
                      ik__zk_amulti(zh, 2, ops, res, NULL, NULL), ZINVALIDSTATE);
        bad |= expect("ik__zk_multi on the expired handle", ik__zk_multi(zh, 2, ops, res),
                      ZINVALIDSTATE);
    }
    zookeeper_close(zh);

    /* A handle that cannot connect (port 1 on loopback: refused) is sent nothing. */
    zhandle_t *nowhere = zookeeper_init("127.0.0.1:1", NULL, 4000, NULL, NULL, 0);
    if (!nowhere) return 2;
    nap_ms(100);
    if (!raw)
        bad |= expect("ik__zk_amulti while connecting",
                      ik__zk_amulti(nowhere, 2, ops, res, NULL, NULL), ZCONNECTIONLOSS);
    zookeeper_close(nowhere);
    return bad;
}
