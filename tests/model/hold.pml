/* hold.pml: the hold rule of `idkeeper lock` and `idkeeper elect`, as a model that
 * Spin checks (tests/model/check.sh, a test of make test): a holder A, its hold
 * monitor with the window rule, CMD's tree stopped with the grace, the guardian's
 * deadline, the store's expiry, and the next holder B. The claim: B's CMD never
 * starts while a process of A's CMD's tree is alive (docs/recipes.md, "The hold
 * rule, checked").
 *
 * The numbers are the code's: check.sh reads the safe window (WIN_NUM/WIN_DEN of the
 * term, src/lib/backend.h's ik__proof_window_ms) and the grace bounds
 * (GRACE_MAX_DIV, GRACE_DEFAULT_DIV: src/cli/hold_run.h's IK_CLI_GRACE_*_DIV) there
 * and passes them with -D; the model refuses to run without them. Time is in ticks,
 * the term T is TERM ticks. Every time is a countdown from now, so that the states
 * are those of a window of time, not of a history.
 *
 * What the model assumes (docs/recipes.md states it too):
 *   - the store ends A's grant no sooner than T after the send of the last request
 *     of A's that reached it (a session timeout, a lease TTL, an idle limit), and only
 *     then lets B hold; B's CMD starts the moment B holds;
 *   - the guardian acts within LAT ticks of each of its times, and a SIGKILL ends
 *     the tree within KILL_LAT ticks (the kernel, through a PID namespace's init or a
 *     cgroup): 2 ticks in all, T/24 (125 ms at T = 3 s, 417 ms at 10 s);
 *   - idkeeper (its monitor, its main loop) may be slow, starved or frozen at any
 *     moment, for ever: nothing it does is ever due. Its probes may be lost, reach
 *     the store and go unanswered, or be answered any time later;
 *   - A's CMD may ignore SIGTERM, end on it, or end by itself.
 *
 * Mutations that check.sh runs, each of which Spin must find unsafe (the model can
 * fail): a grace up to T/2; a window of 5/6 T; a guardian without the deadline
 * (NO_DEADLINE: the guardian before it had one); the grant given back at LOST before
 * CMD's tree is gone (OLD_ORDER: elect's old order).
 */
#ifndef WIN_NUM
#error "run through tests/model/check.sh: the window and grace come from the code"
#endif

#define TERM 48
#define W (TERM * WIN_NUM / WIN_DEN)
#define GMAX (TERM / GRACE_MAX_DIV)
#define GDEF (TERM / GRACE_DEFAULT_DIV)
#define LAT 1
#define KILL_LAT 1
#define NONE 127

/* countdowns, in ticks from now (NONE: not running) */
short expire = TERM; /* the store may end A's grant once this is 0 */
short tr = W;        /* A's monitor trusts the grant this much longer (the acquire's proof) */
#ifndef NO_DEADLINE
short gd = W;        /* the guardian's deadline (on_proof moves it; it never moves back) */
#else
short gd = NONE;
#endif
short ka = NONE;     /* the guardian's SIGKILL to the tree */
short db = NONE;     /* the tree is dead by then, once the SIGKILL is sent */
short age = NONE;    /* ticks since the probe in flight was sent */

byte holder = 1;     /* the store: 0 free, 1 A, 2 B */
bool stood;          /* the probe in flight reached the store while A held */
bool lost, released, lapsed;
bool a_alive = 1;    /* a process of A's CMD's tree is alive */
bool a_term;         /* SIGTERM was sent to A's CMD */
bool b_running;
short grace;

inline arm(t) {
  if
  :: ka == NONE || t < ka -> ka = t
  :: else -> skip
  fi
}

inline down(x, floor) {
  if
  :: x != NONE && x > floor -> x--
  :: else -> skip
  fi
}

/* A tick, while nothing the guardian or the kernel must do is overdue. */
active proctype clock() {
  atomic { /* the grace: none, the default, the longest the CLI accepts */
    if
    :: grace = 0
    :: grace = GDEF
    :: grace = GMAX
    fi
  }
  do
  :: d_step {
       !b_running &&
       !(a_alive && !lapsed && gd != NONE && gd <= -LAT) &&
       !(a_alive && ka != NONE && db == NONE && ka <= -LAT) &&
       !(a_alive && db != NONE && db <= 0) ->
       down(expire, 0); down(tr, 0); down(gd, -LAT); down(ka, -LAT); down(db, 0);
       if
       :: age != NONE && age < TERM -> age++
       :: else -> skip
       fi }
  :: b_running -> break
  od
}

active proctype store() {
  do
  :: d_step { holder == 1 && expire == 0 -> holder = 0 } /* expiry */
  :: d_step { holder == 0 && !b_running -> holder = 2; b_running = 1;
       assert(!a_alive) } /* B holds and its CMD starts: nothing of A's may run */
  :: b_running -> break
  od
}

/* idkeeper: probes, the window rule, the stop on LOST, and the grant given back only
 * once CMD's tree is gone. No transition of its is ever forced. */
active proctype idkeeper() {
  do
  :: d_step { a_alive && !lost && age == NONE -> /* a probe that reaches the store */
       age = 0; stood = (holder == 1);
       if
       :: stood -> expire = TERM
       :: else -> skip
       fi }
  :: d_step { age != NONE -> age = NONE } /* its answer never comes */
  :: d_step { age != NONE && age > 0 -> /* the answer */
       if
       :: stood && !lost && W - age > tr -> tr = W - age
       :: else -> skip
       fi;
#ifndef NO_DEADLINE
       if
       :: stood && !lost && !lapsed && tr > gd -> gd = tr /* on_proof */
       :: else -> skip
       fi;
#endif
       if
       :: !stood && !lost -> lost = 1; a_term = 1; arm(grace) /* the grant is gone */
       :: else -> skip
       fi;
       age = NONE }
  :: d_step { !lost && tr == 0 -> lost = 1; a_term = 1; arm(grace) } /* the window rule */
#ifdef OLD_ORDER
  :: d_step { lost && !released -> released = 1;
       if :: holder == 1 -> holder = 0 :: else -> skip fi }
#else
  :: d_step { !a_alive && !released -> released = 1; /* one order: the tree is gone */
       if :: holder == 1 -> holder = 0 :: else -> skip fi }
#endif
  :: released || b_running -> break
  od
}

/* The guardian: at its deadline, SIGTERM, and SIGKILL the grace after the deadline;
 * at its SIGKILL time, SIGKILL to the tree. */
active proctype guardian() {
  do
#ifndef NO_DEADLINE
  :: d_step { a_alive && !lapsed && gd <= 0 -> lapsed = 1; a_term = 1; arm(gd + grace); gd = NONE }
#endif
  :: d_step { a_alive && ka != NONE && db == NONE && ka <= 0 -> db = KILL_LAT }
  :: !a_alive || b_running -> break
  od
}

/* CMD's tree: dead by the SIGKILL's time at the latest; or it ends on SIGTERM, or by
 * itself. */
active proctype tree() {
  do
  :: d_step { a_alive && (db != NONE || a_term) -> a_alive = 0; ka = NONE; db = NONE; gd = NONE; tr = 0 }
  :: d_step { a_alive -> a_alive = 0; ka = NONE; db = NONE; gd = NONE; tr = 0 }
  :: !a_alive || b_running -> break
  od
}
