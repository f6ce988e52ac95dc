/* resp_conn.h: the Redis protocol on the connection core (resp_conn.c), as loop.c
 * wires it. */
#ifndef IK_RESP_CONN_H
#define IK_RESP_CONN_H

#include "worker.h"

/* RESP (resp_conn.c): sets up w's RESP listener on w->resp_fd (which it takes
 * over) and its tag-kind cache; 0 or a libuv error. On the thread that calls
 * ik__worker_init, after the loop is set up. */
int ik__resp_worker_init(ik__worker *w);
/* Frees what ik__resp_worker_init allocated (after the loop ended). */
void ik__resp_teardown(ik__worker *w);
#endif
