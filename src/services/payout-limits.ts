import type { Queryable } from '../db/database.ts';
import type { Mode } from '../domain/api-keys.ts';
import type { LimitBreach } from '../domain/instrument-caps.ts';
import type { Instrument } from '../domain/payout-route.ts';
import type { UsageRowKey } from '../db/repositories/limit-usage.ts';
import { ApiError } from '../http/errors.ts';

export interface LimitSubject {
  tenantId: string;
  mode: Mode;
  customerId: string | null;
  beneficiaryId: string;
  method: Instrument;
  amount: bigint;
  paymentId: string;
  at: Date;
}

/**
 * The one place payout limits plug into. `check` reads without consuming, so the 422 comes in the
 * order of checks before anything is written; `allocate` runs inside the payout (batch)
 * transaction, so checking and consuming a limit is one atomic step; `release` runs in the
 * transaction that records a failed or reversed outcome.
 */
export interface PayoutLimitPolicy {
  check(db: Queryable, subject: LimitSubject): Promise<void>;
  release(tx: Queryable, payment: ReleasablePayment): Promise<void>;
  /** Group commit: lock once for many payouts, decide each against running totals, write once. */
  prepareAllocation(tx: Queryable, at: Date, subjects: readonly LimitSubject[]): Promise<AllocationPlan>;
}

/** The counters a batch must lock, and how to decide once they are locked. */
export interface AllocationPlan {
  /** The Caracas business day the counters belong to. */
  day: string;
  /** Every counter any payout of the batch touches, sorted: lock them in this order. */
  keys: UsageRowKey[];
  /** Builds the allocator from the locked rows (reading month-to-date totals first when a monthly rule applies). */
  allocator(tx: Queryable, partition: { tenantId: string; mode: Mode }, lockedRows: ReadonlyArray<UsageRowKey & { amount: bigint; count: bigint }>): Promise<LimitAllocator>;
}

export interface LimitAllocator {
  /** The cap or rule this payout would break given the payouts accepted so far, if any. */
  check(subject: LimitSubject): LimitBreach | undefined;
  /** Counts an accepted payout in the running totals. */
  consume(subject: LimitSubject): void;
  /**
   * The accepted payouts' consumption, as increments of one business day's counters (already locked),
   * in lock order; the caller writes them with the rest of the batch.
   */
  increments(): UsageIncrements;
}

/** What a release needs of a payment: whose counters, which day and instrument, how much. */
export interface ReleasablePayment {
  tenant_id: string;
  mode: Mode;
  customer_id: string | null;
  beneficiary_id: string | null;
  method: Instrument | null;
  payout_amount: bigint;
  created_at: Date;
}

export function limitExceeded(breach: LimitBreach): ApiError {
  const where = breach.scope === 'instrument' ? `the ${breach.method} per-operation cap` : `the ${breach.scope} ${breach.rule} limit`;
  return new ApiError('limit_exceeded', `The payout exceeds ${where} of ${breach.cap} minor units by ${breach.exceededBy}.`, {
    rule: breach.rule,
    cap: breach.cap.toString(),
    scope: breach.scope,
    method: breach.method,
    attempted: breach.attempted.toString(),
    exceeded_by: breach.exceededBy.toString(),
    ...(breach.ruleId ? { rule_id: breach.ruleId } : {}),
  });
}

export interface UsageIncrements {
  day: string;
  rows: Array<UsageRowKey & { amount: bigint; count: bigint }>;
}
