/* loop.h: the event loops (loop.c), as server.c starts and stops them. */
#ifndef IK_LOOP_H
#define IK_LOOP_H

#include "worker.h"

/* Sets up w's loop, listener (on w->fd, which it takes over), stop async and sweep
 * timer, on the calling thread. Returns 0 or a libuv error (w must then be torn down
 * with ik__worker_teardown). */
int ik__worker_init(ik__server *srv, ik__worker *w);
/* Thread body: runs the loop until it has drained after ik__worker_stop. */
void *ik__worker_main(void *arg);
/* Asks w to stop accepting, finish in-flight requests and end its loop. Any thread;
 * call once. */
void ik__worker_stop(ik__worker *w);
/* Asks w to close its use of the allocators (phase 2). Any thread; once, after
 * ik__worker_stop. */
void ik__worker_close_stores(ik__worker *w);
/* Closes whatever ik__worker_init opened and frees w's buffers (not w). Call after
 * the thread has been joined, or if it never started. */
void ik__worker_teardown(ik__worker *w);

#endif
