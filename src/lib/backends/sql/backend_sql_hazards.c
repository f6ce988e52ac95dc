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
 * Proof with every write (ik__sql_commit_proved): a slot take, a renewal, a tag
 * advance and a lock's fence carry the driver's IK__SQL_PROOF (the durability
 * settings and our tables' engines or persistence, as the session sees them) in the
 * round trip of their commit point, after it: the COMMIT, or the write itself where it
 * runs in autocommit. The driver reads the session's state from the answer (no
 * transaction left open where a write must have committed) and what the store said
 * of the commit (a notice or warning with it). The proof's rows replace the check's
 * rows of the same names and go through the same verdicts (hazard.c), so a setting
 * turned unsafe between two interval checks is seen by the next write itself.
 *
 * Invariants
 *   H4. Evidence counts only when it was read at or after the write's commit point,
 *       in the same round trip: settings read before a COMMIT say nothing about it
 *       (PostgreSQL applies a reload when it reads its next message, which may be
 *       the COMMIT; a SET GLOBAL lands whenever it lands). A change that lands
 *       between the commit and the proof read after it is refused too: a false
 *       alarm, the safe side. (What cannot change inside a transaction, a table's
 *       engine under the metadata lock our statements hold, may be read earlier.)
 *   H5. What the store says of a commit is part of its evidence: a notice or a
 *       warning with it (PostgreSQL's "might not have been replicated" after a
 *       cancelled synchronous-replication wait), or a COMMIT answered as something
 *       else, makes the write untrusted, as a refused proof does.
 *   H6. A write whose transaction ends in a COMMIT carries the proof in its first
 *       round trip too (ik__sql_proof_early): a setting already unsafe rolls it back,
 *       nothing committed and no gap. That read is not its evidence (H4); it only
 *       spares a commit the evidence after it would refuse.
 *   H3. A write whose evidence is refused, lost or qualified is not trusted: a take
 *       is released, a renewal does not extend the safe window, a fence is not
 *       granted, an advance is never handed out (before the COMMIT: rolled back;
 *       after it: a gap logged at its exact range).
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

int ik__sql_proof_early(ik__sql_backend *b, ik__sql_conn *c, const ik__sql_res *r, char *why,
                        size_t why_len)
{
    ik_hazard rows[IK__SQL_PROOF_MAX];
    size_t n = 0;
    b->d->proof(c, &b->base.hz, r, 1, rows, &n);
    if (n > IK__SQL_PROOF_MAX) n = IK__SQL_PROOF_MAX;
    return ik__hazards_update(&b->base.hz, rows, n, why, why_len);
}

int ik__sql_commit_proved(ik__sql_backend *b, ik__sql_conn *c, ik__sql_call commit,
                          ik__sql_res *res, ik__sql_commit *out)
{
    const ik__sql_driver *d = b->d;
    int proof = ik__sql_has_proof(d);
    ik__sql_call calls[2] = {commit, {IK__SQL_PROOF, NULL, 0}};
    ik__sql_res r[2];
    int ran = 0;
    char inner[300] = "";
    memset(out, 0, sizeof *out);
    memset(r, 0, sizeof r);
    int rc = ik__sql_exec_pipeline(d, c, calls, proof ? 2 : 1, r, &ran, inner, sizeof inner);
    if (res) {
        *res = r[0];
        memset(&r[0], 0, sizeof r[0]);
    }
    if (ran == 0) { /* H4: the commit point's own answer */
        out->state = rc == IK__SQL_EDOUBT   ? IK__SQL_UNANSWERED
                     : rc == IK__SQL_EFOREIGN ? IK__SQL_UNTRUSTED /* ran in another session */
                                              : IK__SQL_NOT_COMMITTED;
        out->code = "store_unsafe";
        snprintf(out->why, sizeof out->why, "%s", inner);
        if (rc == IK__SQL_EFOREIGN) ik__sql_hazards_foreign(b, c, rc);
    } else if (rc) { /* committed; its evidence lost or refused with the connection */
        out->state = IK__SQL_UNTRUSTED;
        out->code = rc == IK__SQL_EFOREIGN ? "store_unsafe" : "answer_lost";
        snprintf(out->why, sizeof out->why, "its commit was answered, but not the evidence read after it: %s", inner);
        ik__sql_hazards_foreign(b, c, rc);
    } else {
        char words[240] = "";
        ik_hazard rows[IK__SQL_PROOF_MAX];
        size_t n = 0;
        d->proof(c, &b->base.hz, proof ? &r[1] : NULL, 0, rows, &n);
        if (n > IK__SQL_PROOF_MAX) n = IK__SQL_PROOF_MAX;
        char hz[300] = "";
        int refused = ik__hazards_update(&b->base.hz, rows, n, hz, sizeof hz) == IK_EUNSAFE;
        if (refused) {
            out->state = IK__SQL_UNTRUSTED;
            out->refused = 1;
            out->code = "store_unsafe";
            snprintf(out->why, sizeof out->why, "its commit's evidence was refused: %s", hz);
        } else if (d->qualified && d->qualified(c, words, sizeof words)) {
            /* H5: the store's own answer says the commit may not last */
            out->state = IK__SQL_UNTRUSTED;
            out->code = "store_unsafe";
            snprintf(out->why, sizeof out->why, "%s answered its commit with: %s", d->name, words);
        } else {
            out->state = IK__SQL_COMMITTED;
        }
    }
    ik__sql_res_clear(&r[0]);
    ik__sql_res_clear(&r[1]);
    return rc;
}
