/* backend_sql_hazards.c: the store hazards of the SQL backends (docs/hazards.md,
 * "MySQL and MariaDB", "PostgreSQL"): when each connection is checked, and the
 * database clock's progress between two checks of one connection.
 *
 * The driver (sql_driver.h: hazards) reads back what its connect set on the session
 * (autocommit, isolation, sql_mode, the session limits) and the server's durability
 * settings, one row each. This file runs that check
 *   - on every new connection (ik__sql_connect), whatever it is for;
 *   - before a slot renewal, a slot take and a tag advance, on the connection that
 *     carries it, when that connection is due (ik__hazards_due: its last check is
 *     older than the hazard interval, or a row is refused now);
 *   - for ik_coord_check, on a pooled connection;
 * and adds one row of its own, "database clock": the database's clock must move as
 * our CLOCK_BOOTTIME does between two checks, on whichever connections of this
 * backend they ran (one server, one clock). Slot expiry is set and compared on the
 * database's clock (docs/sql.md, "Slots"), so a step of it forward can free a slot
 * while its holder still issues; the row is refused for one check (the lease goes in
 * doubt: nothing is written, the generator stops) and is cleared by the next one
 * that finds the clocks moving together again. Not per connection: a step that makes
 * a renewal find its slot expired before the slot connection's check is due ends
 * that connection with the slot, and the next take's new connection must still see
 * the step against the backend's last read.
 *
 * The proof that rides with each write, and the rules of a write's evidence (SP1-SP4),
 * are backend_sql_proof.c's, over this file.
 *
 * Invariants
 *   H1. No slot write or tag advance goes out on a connection whose check is due
 *       without that check; while a row is refused, none goes out at all
 *       (IK_EUNSAFE, nothing sent).
 *   H2. A connection whose check failed (no answer) is dead: the caller drops it.
 */
#include "backend_sql.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The largest difference between the database clock's progress and ours between
 * two checks of one connection that is not a step: a sixth of the lease TTL (half
 * of the margin the slot lease keeps, docs/sql.md "Slots"), at least 500 ms, plus
 * the two reads' own uncertainty (their round trips). */
static int64_t clock_margin_ms(const ik__sql_backend *b)
{
    int64_t m = b->ttl_ms / 6;
    return m < 500 ? 500 : m;
}

/* The "database clock" row after a read of db_ms at at_ns, rtt_ns its round trip,
 * against the backend's last read (any connection): 0 and *row, or 1 for no row (the
 * database gave no clock). */
static int clock_row(ik__sql_backend *b, int64_t db_ms, int64_t at_ns, int64_t rtt_ns,
                     ik_hazard *row)
{
    char value[96];
    int unsafe = 0;
    if (!db_ms) return 1;
    pthread_mutex_lock(&b->mu);
    int first = !b->clock_db_ms;
    if (!first) {
        int64_t ours = (at_ns - b->clock_at_ns) / 1000000, theirs = db_ms - b->clock_db_ms;
        int64_t step = theirs - ours;
        int64_t margin = clock_margin_ms(b) + (rtt_ns + b->clock_rtt_ns) / 2000000;
        unsafe = step > margin || step < -margin;
        snprintf(value, sizeof value, "%+" PRId64 " ms against ours over %" PRId64 " ms", step,
                 ours);
    } else {
        snprintf(value, sizeof value, "first read");
    }
    b->clock_db_ms = db_ms;
    b->clock_at_ns = at_ns;
    b->clock_rtt_ns = rtt_ns;
    pthread_mutex_unlock(&b->mu);
    ik__hazard_row(&b->base.hz, row, "database clock", value, unsafe,
                   "the database host's clock stepped (by more than %" PRId64
                   " ms): slot expiry runs on it, so another server may have taken this "
                   "server's worker; find what steps it (slew it, never step it), then "
                   "this clears at the next check",
                   clock_margin_ms(b));
    return 0;
}

int ik__sql_hazards_read(ik__sql_backend *b, ik__sql_conn *c, ik_hazard *rows, size_t *n, char *why,
                         size_t why_len)
{
    const ik__sql_driver *d = b->d;
    int64_t db_ms = 0;
    char inner[256] = "";
    ik__sql_conn_hz *st = d->hz_state(c);
    int64_t sent = ik__mono_ns();
    *n = 0;
    int rc = d->hazards(c, &b->base.hz, rows, n, &db_ms, inner, sizeof inner);
    int64_t got = ik__mono_ns();
    if (rc) return ik__fail(rc, why, why_len, "cannot read %s's settings: %s", d->name, inner);
    if (*n > IK__SQL_HAZARDS_MAX) *n = IK__SQL_HAZARDS_MAX;
    if (clock_row(b, db_ms, sent + (got - sent) / 2, got - sent, &rows[*n]) == 0) (*n)++;
    st->checked_ns = got;
    return 0;
}

int ik__sql_hazards_run(ik__sql_backend *b, ik__sql_conn *c, char *why, size_t why_len)
{
    ik_hazard rows[IK__SQL_HAZARDS_MAX + 1];
    size_t n = 0;
    int rc = ik__sql_hazards_read(b, c, rows, &n, why, why_len);
    if (rc) return rc;
    return ik__hazards_update(&b->base.hz, rows, n, why, why_len);
}

int ik__sql_hazards_gate(ik__sql_backend *b, ik__sql_conn *c, int *cls, char *why, size_t why_len)
{
    *cls = 0;
    if (ik__hazards_due(&b->base.hz, b->d->hz_state(c)->checked_ns)) {
        int rc = ik__sql_hazards_run(b, c, why, why_len);
        if (rc && rc != IK_EUNSAFE) { /* no answer: H2 */
            *cls = rc < 0 && rc >= IK__SQL_EREFUSED ? rc : IK__SQL_EGONE;
            return IK_ESTORE;
        }
    }
    return ik__hazards_refused(&b->base.hz, why, why_len);
}

int ik__sql_hazards_foreign(ik__sql_backend *b, ik__sql_conn *c, int rc)
{
    ik__sql_conn_hz *st = c && rc == IK__SQL_EFOREIGN ? b->d->hz_state(c) : NULL;
    if (!st || !st->foreign) return rc;
    ik_hazard row;
    ik__hazard_row(&b->base.hz, &row, st->foreign_check, st->foreign_value, 1, "%s",
                   st->foreign_fix);
    ik__hazards_update(&b->base.hz, &row, 1, NULL, 0);
    return rc;
}

int ik__sql_has_proof(const ik__sql_driver *d)
{
    return d->proof && d->stmt[IK__SQL_PROOF];
}
