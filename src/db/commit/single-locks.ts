// The single writers' locks: a funding's key (step 1) and the accounts of a funding or the daily
// close (step 5), each alone and in the lock order (README.md in this folder).
import type { KeyLock } from '../../domain/commit/payout-decision.ts';
import { accountKeyOf, type AccountRef } from '../../domain/commit/keys.ts';
import type { Queryable } from '../database.ts';
import type { Partition } from '../../domain/partition.ts';
import { Params } from '../repositories/sql-params.ts';
import {
  ACCOUNT_CTE,
  ACCOUNT_PART,
  assertSorted,
  IDEMPOTENCY_CTE,
  IDEMPOTENCY_PART,
  IN_FLIGHT_SLOT,
  readAccounts,
  storedKeyOf,
  type LockRow,
} from './lock-rows.ts';
import { assert } from '../../domain/assert.ts';

/**
 * Step 1 alone for a writer that records its answer in its own transaction (a funding): claims the
 * key for `owner` or locks and returns what it holds.
 */
export async function lockIdempotencyKey(
  tx: Queryable,
  partition: Partition,
  claim: { key: string; fingerprint: string; owner: string; now: Date; expiresAt: Date; lockedUntil: Date },
): Promise<KeyLock> {
  const p = new Params();
  const idem = IDEMPOTENCY_CTE({
    tenant: p.add(partition.tenantId),
    mode: p.add(partition.mode),
    now: p.add(claim.now),
    expires: p.add(claim.expiresAt),
    keys: p.add([claim.key]),
    fingerprints: p.add([claim.fingerprint]),
    owners: p.add([claim.owner]),
    // A funding's key names no payment.
    paymentIds: p.add([null]),
    leases: p.add([claim.lockedUntil]),
  });
  const { rows } = await tx.query<LockRow>(`WITH idem AS (${idem}) ${IDEMPOTENCY_PART}`, p.values);
  const row = rows[0];
  assert(row, 'the key lock returned no row');
  return row.owner === claim.owner ? { owned: true } : { owned: false, stored: storedKeyOf(row) };
}

/** Step 5 alone (funding, daily close): balances by account key, created at zero when missing. */
export async function lockAccounts(
  tx: Queryable,
  partition: Partition,
  accounts: readonly AccountRef[],
): Promise<Map<string, bigint>> {
  assertSorted(accounts, accountKeyOf, 'ledger accounts');
  if (accounts.length === 0) return new Map();
  const p = new Params();
  const account = ACCOUNT_CTE({
    tenant: p.add(partition.tenantId),
    mode: p.add(partition.mode),
    assets: p.add(accounts.map((a) => a.asset)),
    kinds: p.add(accounts.map((a) => a.kind)),
    inFlightSlot: IN_FLIGHT_SLOT.payout,
  });
  const { rows } = await tx.query<LockRow>(`WITH account AS (${account}) ${ACCOUNT_PART}`, p.values);
  return readAccounts(rows, accounts);
}
