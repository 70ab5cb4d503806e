// The outbox as its dispatchers read it; events are written by the commits (db/commit/ledger-sql.ts).
import type { Queryable } from '../database.ts';
import { Params } from './sql-params.ts';

/**
 * true when no pending event is due at `now` and unleased: nothing a dispatcher pass could claim
 * (`dispatchDue` stops on it).
 */
export async function nothingClaimable(db: Queryable, now: Date): Promise<boolean> {
  const p = new Params();
  const at = p.add(now);
  const { rows } = await db.query<{ n: bigint }>(
    `SELECT count(*)::bigint AS n FROM outbox_events
      WHERE status = 'pending' AND next_attempt_at <= ${at} AND (locked_until IS NULL OR locked_until <= ${at})`,
    p.values,
  );
  return rows[0]!.n === 0n;
}
