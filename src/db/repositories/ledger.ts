import type { AccountKind, LedgerEntryKind } from '../../domain/ledger.ts';
import type { Asset } from '../../domain/money.ts';
import { accountKeyOf } from '../../domain/commit/keys.ts';
import type { Queryable } from '../database.ts';
import type { Partition } from '../../domain/partition.ts';
import { Params } from './sql-params.ts';

// Reads of the ledger. Entries are written only under their accounts' locks: by the payout and
// outcome commits, and by lockAndPostEntry (db/commit/ledger-entry.ts) for every other entry.

export async function accountBalances(
  db: Queryable,
  partition: Partition,
  asset: string,
): Promise<Record<AccountKind, bigint>> {
  const p = new Params();
  const { rows } = await db.query<{ kind: AccountKind; balance: bigint }>(
    `SELECT kind, sum(balance)::bigint AS balance FROM ledger_accounts
      WHERE tenant_id = ${p.add(partition.tenantId)} AND mode = ${p.add(partition.mode)} AND asset = ${p.add(asset)} GROUP BY kind`,
    p.values,
  );
  const balances: Record<AccountKind, bigint> = {
    prefunding: 0n,
    credit_receivable: 0n,
    in_flight: 0n,
    revenue: 0n,
    treasury: 0n,
    fx: 0n,
  };
  for (const row of rows) balances[row.kind] = row.balance;
  return balances;
}

/** The assets in which a tenant and mode hold a credit draw or prefunding account (what a close looks at), sorted. */
export async function fundedAssets(db: Queryable, partition: Partition): Promise<string[]> {
  const p = new Params();
  const { rows } = await db.query<{ asset: string }>(
    `SELECT DISTINCT asset FROM ledger_accounts
      WHERE tenant_id = ${p.add(partition.tenantId)} AND mode = ${p.add(partition.mode)} AND kind IN ('credit_receivable', 'prefunding') ORDER BY asset`,
    p.values,
  );
  return rows.map((r) => r.asset);
}

export interface PaymentLedgerRow {
  transaction_id: string;
  kind: LedgerEntryKind;
  created_at: Date;
  asset: Asset;
  account_kind: AccountKind;
  amount: bigint;
}

/**
 * The ledger entries that name one payment, postings included: in the order they happened (a
 * payout's entry and its compensation can share a commit, so ties go by the entry's place in a
 * payment's life), postings by asset and account. Found through ledger_transactions_once.
 */
export async function paymentLedgerRows(
  db: Queryable,
  partition: Partition,
  paymentId: string,
): Promise<PaymentLedgerRow[]> {
  const p = new Params();
  const { rows } = await db.query<PaymentLedgerRow>(
    `SELECT t.id AS transaction_id, t.kind, t.created_at, p.asset, p.account_kind, p.amount
       FROM ledger_transactions t
       JOIN ledger_postings p ON p.tenant_id = t.tenant_id AND p.transaction_id = t.id
      WHERE t.tenant_id = ${p.add(partition.tenantId)} AND t.mode = ${p.add(partition.mode)} AND t.payment_id = ${p.add(paymentId)}
      ORDER BY t.created_at,
               CASE t.kind WHEN 'payout' THEN 0 WHEN 'payout_settlement' THEN 1 WHEN 'payout_failure' THEN 2 ELSE 3 END,
               t.id, p.asset, p.account_kind`,
    p.values,
  );
  return rows;
}

/**
 * What the entries of a tenant and mode posted at or after `since` moved, per account (keyed by
 * accountKeyOf; the balance at `since` is the balance now minus this). Only the kinds asked for.
 */
export async function postedSince(
  db: Queryable,
  partition: Partition,
  since: Date,
  kinds: readonly AccountKind[],
): Promise<Map<string, bigint>> {
  const p = new Params();
  const { rows } = await db.query<{ asset: string; account_kind: AccountKind; amount: string }>(
    `SELECT p.asset, p.account_kind, sum(p.amount)::text AS amount
       FROM ledger_transactions t
       JOIN ledger_postings p ON p.tenant_id = t.tenant_id AND p.transaction_id = t.id
      WHERE t.tenant_id = ${p.add(partition.tenantId)} AND t.mode = ${p.add(partition.mode)} AND t.created_at >= ${p.add(since)}
        AND p.account_kind = ANY(${p.add(kinds)}::text[])
      GROUP BY p.asset, p.account_kind`,
    p.values,
  );
  return new Map(rows.map((row) => [accountKeyOf({ asset: row.asset, kind: row.account_kind }), BigInt(row.amount)]));
}
