// Single entries: a funding, the daily close, the sandbox tenant's first funding — every ledger entry
// that is not a payout commit's or an outcome commit's. Nothing else writes a ledger row.
import { randomUUID } from 'node:crypto';
import { accountKeyOf, sortedValues } from '../../domain/commit/keys.ts';
import { assertBalanced, type LedgerEntry, type Posting } from '../../domain/ledger.ts';
import type { Partition } from '../../domain/partition.ts';
import type { Queryable } from '../database.ts';
import { Params } from '../repositories/sql-params.ts';
import { IN_FLIGHT_SLOT } from './lock-rows.ts';
import { lockAccounts } from './single-locks.ts';
import { accountBalancesSql, ledgerEntriesSql, type WriteScope } from './ledger-sql.ts';
import { assert, InvariantError } from '../../domain/assert.ts';

function entrySql(
  p: Params,
  partition: Partition,
  entry: { id: string; kind: string; at: Date | null; postings: readonly Posting[] },
): string {
  const tenant = p.add(partition.tenantId);
  const mode = p.add(partition.mode);
  const at = `coalesce(${p.add(entry.at)}::timestamptz, now())`;
  const scope: WriteScope = { tenant, mode, now: at };
  const deltas = entry.postings.map((posting) => ({
    account: { asset: posting.asset, kind: posting.account },
    delta: posting.amount,
  }));
  // The accounts were locked (or created at zero) just before.
  return `WITH ${ledgerEntriesSql(p, scope, [{ id: entry.id, kind: entry.kind, paymentId: null, postings: entry.postings }])}, ${accountBalancesSql(p, scope, deltas, IN_FLIGHT_SLOT.payout)}
SELECT (SELECT count(*) FROM account)::int AS accounts`;
}

/**
 * The one writer of a single ledger entry: takes step 5 for the accounts `entry` posts to (sorted;
 * created at zero when missing), lets `check` refuse the entry against the balances it locked, then
 * writes the transaction, its postings and the new balances. Returns the entry's id and the balances
 * it found. A transaction that locked these
 * accounts already (the daily close reads every asset's balances first) locks them again here, which
 * waits for nobody. `at` is the service's clock; the database's when absent.
 */
export async function lockAndPostEntry(
  tx: Queryable,
  partition: Partition,
  entry: LedgerEntry,
  options: { at?: Date; check?: (balances: ReadonlyMap<string, bigint>) => void } = {},
): Promise<{ id: string; before: ReadonlyMap<string, bigint> }> {
  assertBalanced(entry);
  const postings = sortedValues(
    new Map(entry.postings.map((p) => [accountKeyOf({ asset: p.asset, kind: p.account }), p])),
  );
  const balances = await lockAccounts(
    tx,
    partition,
    postings.map((p) => ({ asset: p.asset, kind: p.account })),
  );
  options.check?.(balances);
  for (const p of postings) {
    const after = balances.get(accountKeyOf({ asset: p.asset, kind: p.account }))! + p.amount;
    // The database's CHECK constraints say so again; this names the entry that broke it.
    if ((p.account === 'prefunding' && after > 0n) || (p.account === 'credit_receivable' && after < 0n)) {
      throw new InvariantError(`a ${entry.kind} entry would take ${p.asset} ${p.account} to ${after}`);
    }
  }
  const id = randomUUID();
  const params = new Params();
  const sql = entrySql(params, partition, { id, kind: entry.kind, at: options.at ?? null, postings });
  const { rows } = await tx.query<{ accounts: number }>(sql, params.values);
  assert(
    rows[0]?.accounts === postings.length,
    `a ${entry.kind} entry changed ${rows[0]?.accounts} of its ${postings.length} account balances`,
  );
  return { id, before: balances };
}
