// The whole ledger's sums, for the tests' invariant: every asset's postings sum to zero and agree
// with the cached balances.
import type { Queryable } from '../../src/db/database.ts';

/** Sum of every posting per asset across the whole ledger: must be zero (every test of the money path asserts it). */
export async function ledgerTotals(
  db: Queryable,
): Promise<Array<{ asset: string; total: bigint; accounts_total: bigint }>> {
  const { rows } = await db.query<{ asset: string; total: bigint; accounts_total: bigint }>(
    `SELECT p.asset, p.total, coalesce(a.total, 0)::bigint AS accounts_total
       FROM (SELECT asset, sum(amount)::bigint AS total FROM ledger_postings GROUP BY asset) p
       LEFT JOIN (SELECT asset, sum(balance)::bigint AS total FROM ledger_accounts GROUP BY asset) a ON a.asset = p.asset`,
  );
  return rows;
}
