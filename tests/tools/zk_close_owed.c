/* zk_close_owed: a zk:// coord closed while its handle owes answers
 * (zk_session.c invariant ZS6), against a real ZooKeeper behind the fault proxy.
 *
 *   zk_close_owed URI GO_FILE N [LINGER_MS]
 *
 * Opens URI (through the proxy), prints "connected", waits for GO_FILE (the test
 * mutes the proxy: requests pass, no answer comes back), sends N reads of the
 * root on the backend's session the way every zk:// module does (ik__zk_arm,
 * ik__zk_issued, ik__zk_on_data), gives each up at once (ik__zk_wait_put, as a
 * call whose deadline passed), then closes the coord and prints "closed N". With
 * LINGER_MS, the process then lives on that long: past the client's receive
 * timeout, when the answers still owed are paid (ZCONNECTIONLOSS) and the last one
 * closes the handle on its own completion thread. Last it prints "threads T", the
 * threads the process has left (1: the client's two have ended, the handle closed).
 * Under the ASan build, LeakSanitizer checks at exit that no request's wait and no
 * client completion was lost by the close. Exit 0, or 2 on bad usage or a failed
 * open. A test tool, never installed. */
#include "backend.h"
#include "zk_session.h"

#include <idkeeper.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: zk_close_owed URI GO_FILE N [LINGER_MS]\n");
        return 2;
    }
    int n = (int)strtol(argv[3], NULL, 10);
    ik_coord_options o;
    ik_coord_options_init(&o);
    o.zk_session_timeout_ms = 10000; /* the client keeps the muted connection 6.7 s */
    ik_coord *c = NULL;
    char why[256] = "";
    if (ik_coord_open(argv[1], &o, &c, why, sizeof why) != 0) {
        fprintf(stderr, "zk_close_owed: cannot open %s: %s\n", argv[1], why);
        return 2;
    }
    printf("connected\n");
    fflush(stdout);
    for (int i = 0; i < 6000 && access(argv[2], F_OK) != 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ik__backend *be = ik__coord_backend(c);
    ik__zk_session s;
    ik__zk_session_get(be, &s);
    int sent = 0;
    for (int i = 0; i < n; i++) {
        ik__zk_wait *w = ik__zk_wait_new(1, 0);
        if (!w) break;
        ik__zk_arm(&w->r[0], s.zh);
        int zrc = zoo_aget(s.zh, "/", 0, ik__zk_on_data, &w->r[0]);
        ik__zk_issued(&w->r[0], zrc);
        sent += zrc == ZOK;
        ik__zk_wait_put(w); /* given up: the client still owes the answer */
    }
    ik__zk_session_put(be);
    ik_coord_close(c);
    printf("closed %d\n", sent);
    fflush(stdout);
    long linger = argc == 5 ? strtol(argv[4], NULL, 10) : 0;
    struct timespec ts = {linger / 1000, (linger % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    int threads = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        threads += e->d_name[0] != '.';
    if (d) closedir(d);
    printf("threads %d\n", threads);
    return 0;
}
