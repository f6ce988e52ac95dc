/* backend_sql_proof.c: the evidence that rides with each SQL write (docs/hazards.md,
 * "Proof with every write"), over the connection pool (backend_sql.c) and the hazard
 * checks (backend_sql_hazards.c): a write's commit point with the proof read after
 * it, and the proof read before a COMMIT.
 *
 * Proof with every write (ik__sql_commit_proved): a slot take, a renewal, a tag
 * advance and a lock's fence carry the driver's IK__SQL_PROOF (the durability
 * settings, as the session sees them, and our tables' engines or persistence: SP5)
 * in the round trip of their commit point, after it: the COMMIT, or the write itself
 * where it runs in autocommit. The driver reads the session's state from the answer (no
 * transaction left open where a write must have committed) and what the store said
 * of the commit (a notice or warning with it). The proof's rows replace the check's
 * rows of the same names and go through the same verdicts (hazard.c), so a setting
 * turned unsafe between two interval checks is seen by the next write itself.
 *
 * Invariants
 *   SP1. Evidence counts only when it was read at or after the write's commit point,
 *       in the same round trip: settings read before a COMMIT say nothing about it
 *       (PostgreSQL applies a reload when it reads its next message, which may be
 *       the COMMIT; a SET GLOBAL lands whenever it lands). A change that lands
 *       between the commit and the proof read after it is refused too: a false
 *       alarm, the safe side. (What cannot change inside a transaction, a table's
 *       engine under the metadata lock our statements hold, may be read earlier:
 *       SP5.)
 *   SP2. What the store says of a commit is part of its evidence: a notice or a
 *       warning with it (PostgreSQL's "might not have been replicated" after a
 *       cancelled synchronous-replication wait), or a COMMIT answered as something
 *       else, makes the write untrusted, as a refused proof does.
 *   SP3. A write whose transaction ends in a COMMIT carries the proof in its first
 *       round trip too (ik__sql_proof_early): a setting already unsafe rolls it back,
 *       nothing committed and no gap. That read is not its evidence (SP1); it only
 *       spares a commit the evidence after it would refuse.
 *   SP4. A write whose evidence is refused, lost or qualified is not trusted: a take
 *       is released, a renewal does not extend the safe window, a fence is not
 *       granted, an advance is never handed out (before the COMMIT: rolled back;
 *       after it: a gap logged at its exact range).
 *   SP5. The tables a transaction wrote keep its writes only if they have
 *       transactions. Where the database said so of every statement of the
 *       transaction as it ran (the driver's tx_tables: MariaDB's transaction state in
 *       each statement's answer), that is the evidence, judged with the proof after
 *       the COMMIT; the table's metadata lock, taken by the statement that used it
 *       and held to the COMMIT, keeps an ALTER TABLE ... ENGINE from landing in
 *       between (SP1's exception). Where it did not say so (tracking off, a proxy
 *       that drops it, a write in autocommit), the table's engine is read after the
 *       COMMIT in its round trip (IK__SQL_TABLE_PROOF): a missing report is never
 *       taken for a safe one.
 */
#include "backend_sql.h"
#include "internal.h"

#include <string.h>

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
                          const char *table, ik__sql_res *res, ik__sql_commit *out)
{
    const ik__sql_driver *d = b->d;
    const char *tp[] = {table};
    ik__sql_call calls[3];
    int n = 0, tr = -1, pr = -1;
    calls[n++] = commit;
    /* SP5: the tables of a transaction as the database said while it ran, else read */
    ik_hazard txrow;
    int tx =
        commit.id == IK__SQL_COMMIT && d->tx_tables ? d->tx_tables(c, &b->base.hz, &txrow) : -1;
    if (table && tx < 0 && d->table_row && d->stmt[IK__SQL_TABLE_PROOF])
        calls[tr = n++] = (ik__sql_call){IK__SQL_TABLE_PROOF, tp, 1};
    if (ik__sql_has_proof(d)) calls[pr = n++] = (ik__sql_call){IK__SQL_PROOF, NULL, 0};
    ik__sql_res r[3];
    int ran = 0;
    char inner[300] = "";
    memset(out, 0, sizeof *out);
    memset(r, 0, sizeof r);
    int rc = ik__sql_exec_pipeline(d, c, calls, n, r, &ran, inner, sizeof inner);
    if (rc && !ik__sql_dead(rc) && ran >= 1 && n > 1) {
        /* committed, and its evidence refused as a statement (PostgreSQL: a name the
         * session lost): read again, once; later than the commit, still after it */
        int again = 0;
        for (int i = 1; i < n; i++)
            ik__sql_res_clear(&r[i]);
        rc = ik__sql_exec_pipeline(d, c, calls + 1, n - 1, r + 1, &again, inner, sizeof inner);
        ran = 1 + again;
    }
    if (res) {
        *res = r[0];
        memset(&r[0], 0, sizeof r[0]);
    }
    if (ran == 0) { /* SP1: the commit point's own answer */
        out->state = rc == IK__SQL_EDOUBT     ? IK__SQL_UNANSWERED
                     : rc == IK__SQL_EFOREIGN ? IK__SQL_UNTRUSTED /* ran in another session */
                                              : IK__SQL_NOT_COMMITTED;
        out->code = "store_unsafe";
        snprintf(out->why, sizeof out->why, "%s", inner);
        if (rc == IK__SQL_EFOREIGN) ik__sql_hazards_foreign(b, c, rc);
    } else if (rc) { /* committed; its evidence lost or refused with the connection */
        out->state = IK__SQL_UNTRUSTED;
        out->code = rc == IK__SQL_EFOREIGN ? "store_unsafe" : "answer_lost";
        snprintf(out->why, sizeof out->why,
                 "its commit was answered, but not the evidence read after it: %s", inner);
        ik__sql_hazards_foreign(b, c, rc);
    } else {
        char words[240] = "";
        ik_hazard rows[IK__SQL_PROOF_MAX + 2];
        size_t k = 0;
        d->proof(c, &b->base.hz, pr >= 0 ? &r[pr] : NULL, 0, rows, &k);
        if (k > IK__SQL_PROOF_MAX) k = IK__SQL_PROOF_MAX;
        if (tr >= 0 && d->table_row(c, &b->base.hz, table, &r[tr], &rows[k])) k++;
        if (tx > 0) rows[k++] = txrow;
        char hz[300] = "";
        int refused = ik__hazards_update(&b->base.hz, rows, k, hz, sizeof hz) == IK_EUNSAFE;
        if (refused) {
            out->state = IK__SQL_UNTRUSTED;
            out->refused = 1;
            out->code = "store_unsafe";
            snprintf(out->why, sizeof out->why, "its commit's evidence was refused: %s", hz);
        } else if (d->qualified && d->qualified(c, words, sizeof words)) {
            /* SP2: the store's own answer says the commit may not last */
            out->state = IK__SQL_UNTRUSTED;
            out->code = "store_unsafe";
            snprintf(out->why, sizeof out->why, "%s answered its commit with: %s", d->name, words);
        } else {
            out->state = IK__SQL_COMMITTED;
        }
    }
    for (int i = 0; i < n; i++)
        ik__sql_res_clear(&r[i]);
    return rc;
}
