// The outcome commit's locks: payments → counters → accounts (steps 3, 4 and 5 of the lock order,
// README.md in this folder), in one statement.
import type { PaymentStatus } from '../../domain/payment-state.ts';
import { accountKeyOf, type AccountRef, type CounterKey } from '../../domain/commit/keys.ts';
import type { Queryable } from '../database.ts';
import type { Partition } from '../../domain/partition.ts';
import { Params } from '../repositories/sql-params.ts';
import {
  ACCOUNT_CTE,
  ACCOUNT_PART,
  assertSorted,
  counterLockKey,
  IN_COMMIT_TRANSACTION,
  IN_FLIGHT_SLOT,
  part,
  readAccounts,
  readUsage,
  USAGE_CTE,
  USAGE_PART,
  type LockRow,
} from './lock-rows.ts';

/** The mutable fields of a locked payment (its immutable ones travel with the job). */
export interface LockedPaymentState {
  status: PaymentStatus;
  status_reason: string | null;
  message: string | null;
  bank_reference: string | null;
  fee_amount: bigint;
  settled_at: Date | null;
  next_check_at: Date | null;
  resolution_parked_at: Date | null;
  compensated: boolean;
  check_attempts: number;
}

export interface OutcomeCommitLocks {
  /** Sorted, distinct. */
  paymentIds: readonly string[];
  /** Sorted by `${day}|${counter key}`, distinct: counters to give usage back to (a missing one is created at zero). */
  counters: ReadonlyArray<{ day: string; counter: CounterKey }>;
  /** Sorted by account key, distinct. */
  accounts: readonly AccountRef[];
}

const OUTCOME_PAYMENT_PART = part(
  'payment',
  {
    id: 'id::text',
    status: 'status',
    status_reason: 'status_reason',
    message: 'message',
    bank_reference: 'bank_reference',
    fee_amount: 'fee_amount',
    settled_at: 'settled_at',
    next_check_at: 'next_check_at',
    resolution_parked_at: 'resolution_parked_at',
    compensated: 'compensated',
    check_attempts: 'check_attempts',
  },
  'pay',
);

/** The outcome commit's lock statement (see lockOutcomeCommit), its parameters added to `p` by name. */
function outcomeLockSql(p: Params, partition: Partition, locks: OutcomeCommitLocks): string {
  const tenant = p.add(partition.tenantId);
  const mode = p.add(partition.mode);
  const usage = USAGE_CTE({
    tenant,
    mode,
    days: p.add(locks.counters.map((c) => c.day)),
    kinds: p.add(locks.counters.map((c) => c.counter.kind)),
    subjects: p.add(locks.counters.map((c) => c.counter.subjectId)),
    methods: p.add(locks.counters.map((c) => c.counter.method)),
    guard: IN_COMMIT_TRANSACTION,
  });
  const assets = p.add(locks.accounts.map((a) => a.asset));
  const kinds = p.add(locks.accounts.map((a) => a.kind));
  const account = ACCOUNT_CTE({
    tenant,
    mode,
    assets,
    kinds,
    inFlightSlot: IN_FLIGHT_SLOT.outcome,
    guard: IN_COMMIT_TRANSACTION,
  });
  return `WITH pay AS (
  -- By primary key, locked in id order, as the payout commit's quotes.
  SELECT p.id, p.status, p.status_reason, p.message, p.bank_reference, p.fee_amount, p.settled_at, p.next_check_at,
         p.resolution_parked_at, p.compensated, p.check_attempts
    FROM payments p
   WHERE p.tenant_id = ${tenant} AND p.id = ANY(${p.add(locks.paymentIds)}::uuid[])
   ORDER BY p.id
     FOR UPDATE
), usage AS (${usage}
), account AS (${account})
${OUTCOME_PAYMENT_PART}
UNION ALL ${USAGE_PART}
UNION ALL ${ACCOUNT_PART}`;
}

/** Steps 3, 4 and 5 for an outcome commit of one tenant and mode, in one round trip. */
export async function lockOutcomeCommit(
  tx: Queryable,
  partition: Partition,
  locks: OutcomeCommitLocks,
): Promise<{
  payments: Map<string, LockedPaymentState>;
  counters: Map<string, { amount: bigint; count: bigint }>;
  balances: Map<string, bigint>;
}> {
  assertSorted(locks.paymentIds, (id) => id, 'payments');
  assertSorted(locks.counters, counterLockKey, 'limit counters');
  assertSorted(locks.accounts, accountKeyOf, 'ledger accounts');
  const p = new Params();
  const { rows } = await tx.query<LockRow>(outcomeLockSql(p, partition, locks), p.values);
  const payments = new Map<string, LockedPaymentState>();
  for (const r of rows) {
    if (r.part !== 'payment') continue;
    payments.set(r.id!, {
      status: r.status as PaymentStatus,
      status_reason: r.status_reason,
      message: r.message,
      bank_reference: r.bank_reference,
      fee_amount: r.fee_amount!,
      settled_at: r.settled_at,
      next_check_at: r.next_check_at,
      resolution_parked_at: r.resolution_parked_at,
      compensated: r.compensated!,
      check_attempts: r.check_attempts!,
    });
  }
  return { payments, counters: readUsage(rows), balances: readAccounts(rows, locks.accounts) };
}
