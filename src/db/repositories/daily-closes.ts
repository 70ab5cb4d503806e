// The record of each (tenant, mode, asset, business day) the scheduled close has settled: the row
// makes a day close once however many workers run the close.
import type { Queryable } from '../database.ts';
import type { Mode, Partition } from '../../domain/partition.ts';
import { Params } from './sql-params.ts';

/**
 * Records that `asset` closed for `day` with `drawn` settled; false when another close recorded it
 * first (ON CONFLICT DO NOTHING waits for that one's commit, so a false is final).
 */
export async function claimDailyClose(
  tx: Queryable,
  partition: Partition,
  close: { asset: string; day: string; drawn: bigint },
): Promise<boolean> {
  const p = new Params();
  const claimed = await tx.query(
    `INSERT INTO daily_closes (tenant_id, mode, asset, business_date, amount)
     VALUES (${p.add(partition.tenantId)}, ${p.add(partition.mode)}, ${p.add(close.asset)}, ${p.add(close.day)}, ${p.add(close.drawn)}) ON CONFLICT DO NOTHING`,
    p.values,
  );
  return claimed.rowCount === 1;
}

/** At most `limit` credit tenants and modes with something to settle and an asset not yet closed for `day`. */
export async function dueCloses(db: Queryable, day: string, limit: number): Promise<Partition[]> {
  const p = new Params();
  const { rows } = await db.query<{ tenant_id: string; mode: Mode }>(
    `SELECT DISTINCT a.tenant_id, a.mode FROM ledger_accounts a JOIN tenants t ON t.id = a.tenant_id
      WHERE t.credit_enabled
        AND ((a.kind = 'credit_receivable' AND a.balance > 0) OR (a.kind = 'prefunding' AND a.balance < 0))
        AND NOT EXISTS (SELECT 1 FROM daily_closes c WHERE c.tenant_id = a.tenant_id AND c.mode = a.mode
                         AND c.asset = a.asset AND c.business_date = ${p.add(day)})
      LIMIT ${p.add(limit)}`,
    p.values,
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, mode: r.mode }));
}
