/* ready.h: whether this server can issue a snowflake ID now, and the words for why
 * not (ready.c); the lease's state and the clocks as the daemon reads them. */
#ifndef IK_READY_H
#define IK_READY_H

#include "worker.h"

/* Why no snowflake ID can be issued now, into why; 0 if one can. Any thread. */
int ik__not_ready(ik__server *srv, char *why, size_t len);
/* The slot lease's info (ik_slot_lease_get_info); once the stop has released it,
 * state RELEASED and worker -1. Any thread. */
void ik__lease_info(ik__server *srv, ik_lease_info *li);
/* Writes "the layout's time field ran out on DATE ..." into why (truncated to len).
 * Any thread. */
void ik__layout_end_why(const ik__server *srv, char *why, size_t len);
/* The generator's deadline clock now, ns (ik_clock_system's mono_ns: CLOCK_BOOTTIME). */
int64_t ik__boot_ns(void);

#endif
