import { randomUUID } from 'node:crypto';
import { assertBalanced, type AccountKind, type LedgerEntry, type LedgerEntryKind } from '../../domain/ledger.ts';
import type { Asset } from '../../domain/money.ts';
import { accountKeyOf } from '../../domain/payout-decision.ts';
import type { Queryable } from '../database.ts';
import type { Partition } from '../../domain/partition.ts';

/** A posting would overdraw a checked account: the caller maps it to `insufficient_tenant_funds`. */
export class InsufficientFundsError extends Error {
  constructor(
    readonly account: AccountKind,
    readonly asset: string,
    readonly required: bigint,
  ) {
    super(`insufficient funds in ${account} ${asset}`);
    this.name = 'InsufficientFundsError';
  }
}

export interface PostOptions {
  paymentId?: string;
  /** When the entry happened (the service's clock); the database's clock when absent. */
  at?: Date;
  /** Ceiling on credit drawn (credit_receivable balance), null = none. */
  creditLimit?: bigint | null;
}

/**
 * Writes one balanced entry: the transaction row, its postings, then the account balances. The
 * balance updates come last and in a fixed order, so the hot rows are locked for the shortest time
 * and two entries never wait on each other in opposite orders. Overdrafts are refused by the
 * UPDATE's own condition (atomic under concurrency), and again by CHECK constraints.
 */
export async function postEntry(
  tx: Queryable,
  partition: Partition,
  entry: LedgerEntry,
  options: PostOptions = {},
): Promise<string> {
  assertBalanced(entry);
  const id = randomUUID();
  await tx.query(
    `INSERT INTO ledger_transactions (tenant_id, mode, id, kind, payment_id, created_at) VALUES ($1, $2, $3, $4, $5, coalesce($6, now()))`,
    [partition.tenantId, partition.mode, id, entry.kind, options.paymentId ?? null, options.at ?? null],
  );
  const params: unknown[] = [partition.tenantId, id, partition.mode];
  const values = entry.postings.map((p) => {
    params.push(p.asset, p.account, p.amount);
    const n = params.length;
    return `($1, $2, $3, $${n - 2}, $${n - 1}, $${n})`;
  });
  await tx.query(
    `INSERT INTO ledger_postings (tenant_id, transaction_id, mode, asset, account_kind, amount) VALUES ${values.join(', ')}`,
    params,
  );
  const ordered = [...entry.postings].sort((a, b) => (a.asset + a.account < b.asset + b.account ? -1 : 1));
  for (const posting of ordered) await applyToBalance(tx, partition, posting.asset, posting.account, posting.amount, options);
  return id;
}

async function applyToBalance(
  tx: Queryable,
  partition: Partition,
  asset: string,
  account: AccountKind,
  amount: bigint,
  options: PostOptions,
): Promise<void> {
  const key = [partition.tenantId, partition.mode, asset, account];
  if (account === 'prefunding' && amount > 0n) {
    // A debit of prefunding spends the tenant's money: only if it stays covered.
    const { rowCount } = await tx.query(
      `UPDATE ledger_accounts SET balance = balance + $5
        WHERE tenant_id = $1 AND mode = $2 AND asset = $3 AND kind = $4 AND slot = 0 AND balance + $5 <= 0`,
      [...key, amount],
    );
    if (rowCount !== 1) throw new InsufficientFundsError(account, asset, amount);
    return;
  }
  if (account === 'credit_receivable' && amount > 0n) {
    const limit = options.creditLimit ?? null;
    const { rowCount } = await tx.query(
      `INSERT INTO ledger_accounts (tenant_id, mode, asset, kind, balance)
       SELECT $1, $2, $3, $4, $5 WHERE $6::bigint IS NULL OR $5 <= $6::bigint
       ON CONFLICT (tenant_id, mode, asset, kind, slot) DO UPDATE SET balance = ledger_accounts.balance + EXCLUDED.balance
        WHERE $6::bigint IS NULL OR ledger_accounts.balance + EXCLUDED.balance <= $6::bigint`,
      [...key, amount, limit],
    );
    if (rowCount !== 1) throw new InsufficientFundsError(account, asset, amount);
    return;
  }
  // UPDATE first: an INSERT … ON CONFLICT would check the CHECK constraints against the proposed
  // row (the bare delta) before finding the conflict, refusing a legal credit to a receivable.
  const updated = await tx.query(
    `UPDATE ledger_accounts SET balance = balance + $5 WHERE tenant_id = $1 AND mode = $2 AND asset = $3 AND kind = $4 AND slot = 0`,
    [...key, amount],
  );
  if (updated.rowCount === 1) return;
  await tx.query(
    `INSERT INTO ledger_accounts (tenant_id, mode, asset, kind, balance) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id, mode, asset, kind, slot) DO UPDATE SET balance = ledger_accounts.balance + EXCLUDED.balance`,
    [...key, amount],
  );
}

export async function accountBalances(
  db: Queryable,
  partition: Partition,
  asset: string,
): Promise<Record<AccountKind, bigint>> {
  const { rows } = await db.query<{ kind: AccountKind; balance: bigint }>(
    `SELECT kind, sum(balance)::bigint AS balance FROM ledger_accounts WHERE tenant_id = $1 AND mode = $2 AND asset = $3 GROUP BY kind`,
    [partition.tenantId, partition.mode, asset],
  );
  const balances: Record<AccountKind, bigint> = { prefunding: 0n, credit_receivable: 0n, in_flight: 0n, revenue: 0n, treasury: 0n, fx: 0n };
  for (const row of rows) balances[row.kind] = row.balance;
  return balances;
}

/** Sum of every posting per asset across the whole ledger: must be zero (tests assert it). */
export async function ledgerTotals(db: Queryable): Promise<Array<{ asset: string; total: bigint; accounts_total: bigint }>> {
  const { rows } = await db.query<{ asset: string; total: bigint; accounts_total: bigint }>(
    `SELECT p.asset, p.total, coalesce(a.total, 0)::bigint AS accounts_total
       FROM (SELECT asset, sum(amount)::bigint AS total FROM ledger_postings GROUP BY asset) p
       LEFT JOIN (SELECT asset, sum(balance)::bigint AS total FROM ledger_accounts GROUP BY asset) a ON a.asset = p.asset`,
  );
  return rows;
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
export async function paymentLedgerRows(db: Queryable, partition: Partition, paymentId: string): Promise<PaymentLedgerRow[]> {
  const { rows } = await db.query<PaymentLedgerRow>(
    `SELECT t.id AS transaction_id, t.kind, t.created_at, p.asset, p.account_kind, p.amount
       FROM ledger_transactions t
       JOIN ledger_postings p ON p.tenant_id = t.tenant_id AND p.transaction_id = t.id
      WHERE t.tenant_id = $1 AND t.mode = $2 AND t.payment_id = $3
      ORDER BY t.created_at,
               CASE t.kind WHEN 'payout' THEN 0 WHEN 'payout_settlement' THEN 1 WHEN 'payout_failure' THEN 2 ELSE 3 END,
               t.id, p.asset, p.account_kind`,
    [partition.tenantId, partition.mode, paymentId],
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
  const { rows } = await db.query<{ asset: string; account_kind: AccountKind; amount: string }>(
    `SELECT p.asset, p.account_kind, sum(p.amount)::text AS amount
       FROM ledger_transactions t
       JOIN ledger_postings p ON p.tenant_id = t.tenant_id AND p.transaction_id = t.id
      WHERE t.tenant_id = $1 AND t.mode = $2 AND t.created_at >= $3 AND p.account_kind = ANY($4::text[])
      GROUP BY p.asset, p.account_kind`,
    [partition.tenantId, partition.mode, since, kinds],
  );
  return new Map(rows.map((row) => [accountKeyOf({ asset: row.asset, kind: row.account_kind }), BigInt(row.amount)]));
}
