/* test_cli_httpc_mt.c: the CLI's HTTP client against a scripted server thread:
 * keep-alive reuse, reconnects after the server closes, chunked bodies, size
 * limits, malformed answers and timeouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "httpc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One connection of the script: the answers to its requests in order (NULL ends),
 * then the server closes it. An answer of "" means: read the request, say nothing
 * and close at once. */
typedef struct script_conn {
    const char *answers[4];
} script_conn;

typedef struct server {
    int lfd, port;
    const script_conn *conns;
    int nconns;
    int accepted; /* read after join */
    int hold_ms;  /* keep the last connection open this long without answering */
    pthread_t th;
} server;

/* Reads one request (up to the blank line); returns 0, or -1 on EOF. */
static int read_request(int fd)
{
    char buf[4096];
    size_t n = 0;
    while (n < sizeof buf - 1) {
        ssize_t r = recv(fd, buf + n, 1, 0);
        if (r <= 0) return -1;
        n += (size_t)r;
        buf[n] = 0;
        if (n >= 4 && strcmp(buf + n - 4, "\r\n\r\n") == 0) return 0;
    }
    return -1;
}

static void *server_main(void *arg)
{
    server *s = arg;
    for (int c = 0; c < s->nconns; c++) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) break;
        s->accepted++;
        for (int i = 0; s->conns[c].answers[i]; i++) {
            if (read_request(fd) != 0) break;
            const char *a = s->conns[c].answers[i];
            if (!*a) break;
            if (send(fd, a, strlen(a), MSG_NOSIGNAL) < 0) break;
        }
        if (c == s->nconns - 1 && s->hold_ms) usleep((useconds_t)s->hold_ms * 1000);
        close(fd);
    }
    return NULL;
}

static void server_start(server *s, const script_conn *conns, int n)
{
    memset(s, 0, sizeof *s);
    s->conns = conns;
    s->nconns = n;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 8), 0);
    socklen_t al = sizeof a;
    getsockname(s->lfd, (struct sockaddr *)&a, &al);
    s->port = ntohs(a.sin_port);
}

static void server_run(server *s)
{
    assert_int_equal(pthread_create(&s->th, NULL, server_main, s), 0);
}

static int server_join(server *s)
{
    pthread_join(s->th, NULL);
    close(s->lfd);
    return s->accepted;
}

static const char ok3[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n1\n2\n";
static const char ok1[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n7\n";
static const char closing[] =
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n9\n";
static const char chunked[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "2\r\n1\n\r\n3\r\n22\n\r\n0\r\n\r\n";
static const char notfound[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 22\r\n\r\n"
                               "{\"error\":\"unknown\"}\n\n\n";

static void keep_alive_reuses_one_connection(void **state)
{
    static const script_conn conns[] = {{{ok3, ok1, chunked, NULL}}};
    server s;
    server_start(&s, conns, 1);
    server_run(&s);
    ik_httpc *c = ik__httpc_create("127.0.0.1", s.port, 2000);
    ik_httpc_resp r;
    char why[256];
    assert_int_equal(ik__httpc_get(c, "/a", 1000, &r, why, sizeof why), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "1\n2\n");
    assert_int_equal(ik__httpc_get(c, "/b", 1000, &r, why, sizeof why), 0);
    assert_string_equal(r.body, "7\n");
    assert_int_equal(ik__httpc_get(c, "/c", 1000, &r, why, sizeof why), 0);
    assert_string_equal(r.body, "1\n22\n");
    assert_int_equal(r.body_len, 5);
    ik__httpc_destroy(c);
    assert_int_equal(server_join(&s), 1);
}

static void reconnects_after_the_server_closes(void **state)
{
    /* 1: answers once and closes without saying so; 2: says Connection: close;
     * 3: answers a 404 */
    static const script_conn conns[] = {{{ok1, NULL}}, {{closing, NULL}}, {{notfound, NULL}}};
    server s;
    server_start(&s, conns, 3);
    server_run(&s);
    ik_httpc *c = ik__httpc_create("127.0.0.1", s.port, 2000);
    ik_httpc_resp r;
    char why[256] = "";
    assert_int_equal(ik__httpc_get(c, "/a", 1000, &r, why, sizeof why), 0);
    usleep(50 * 1000); /* let the server's close arrive */
    if (ik__httpc_get(c, "/b", 1000, &r, why, sizeof why) != 0)
        fail_msg("no retry on a fresh connection: %s", why);
    assert_string_equal(r.body, "9\n");
    assert_int_equal(ik__httpc_get(c, "/c", 1000, &r, why, sizeof why), 0);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(r.body, "unknown"));
    ik__httpc_destroy(c);
    assert_int_equal(server_join(&s), 3);
}

static void errors_are_reported(void **state)
{
    static const char garbage[] = "SPDY/9 what\r\n\r\n";
    static const char big[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
        "0123456789012345678901234567890123456789012345678901234567890123456789"
        "012345678901234567890123456789";
    static const script_conn conns[] = {{{garbage, NULL}}, {{big, NULL}}, {{"", NULL}}};
    server s;
    server_start(&s, conns, 3);
    server_run(&s);
    ik_httpc *c = ik__httpc_create("127.0.0.1", s.port, 2000);
    ik_httpc_resp r;
    char why[256];
    assert_int_equal(ik__httpc_get(c, "/a", 1000, &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "malformed"));
    assert_int_equal(ik__httpc_get(c, "/b", 10, &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "larger than 10 bytes"));
    /* a fresh connection closed without an answer is not retried */
    assert_int_equal(ik__httpc_get(c, "/c", 1000, &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "without answering"));
    ik__httpc_destroy(c);
    assert_int_equal(server_join(&s), 3);

    /* nobody listens */
    c = ik__httpc_create("127.0.0.1", s.port, 2000);
    assert_int_equal(ik__httpc_get(c, "/d", 1000, &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "cannot connect"));
    ik__httpc_destroy(c);
}

static void silent_server_times_out(void **state)
{
    static const script_conn conns[] = {{{NULL}}};
    server s;
    server_start(&s, conns, 1);
    s.hold_ms = 600;
    server_run(&s);
    ik_httpc *c = ik__httpc_create("127.0.0.1", s.port, 200);
    ik_httpc_resp r;
    char why[256];
    assert_int_equal(ik__httpc_get(c, "/a", 1000, &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "within 200 ms"));
    ik__httpc_destroy(c);
    server_join(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keep_alive_reuses_one_connection),
        cmocka_unit_test(reconnects_after_the_server_closes),
        cmocka_unit_test(errors_are_reported),
        cmocka_unit_test(silent_server_times_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
