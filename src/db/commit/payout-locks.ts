// The payout commit's locks: keys → quotes → counters → accounts (steps 1, 2, 4 and 5 of the lock
// order, README.md in this folder), plus what its decision reads unlocked, in one statement.
import type { KeyLock, QuoteLock } from '../../domain/commit/payout-decision.ts';
import {
  accountKeyOf,
  counterKeyOf,
  type AccountRef,
  type CounterKey,
  type CounterKind,
} from '../../domain/commit/keys.ts';
import type { Queryable } from '../database.ts';
import type { Partition } from '../../domain/partition.ts';
import { Params } from '../repositories/sql-params.ts';
import {
  ACCOUNT_CTE,
  ACCOUNT_PART,
  assertSorted,
  IDEMPOTENCY_CTE,
  IDEMPOTENCY_PART,
  IN_COMMIT_TRANSACTION,
  IN_FLIGHT_SLOT,
  part,
  readAccounts,
  readUsage,
  storedKeyOf,
  USAGE_CTE,
  USAGE_PART,
  type LockRow,
} from './lock-rows.ts';

export interface PayoutCommitLocks {
  now: Date;
  expiresAt: Date;
  /** One per distinct key, sorted by key; `owner` and `paymentId` identify this commit's claim. */
  keys: ReadonlyArray<{ key: string; fingerprint: string; paymentId: string; lockedUntil: Date }>;
  /** Sorted, distinct. */
  quoteIds: readonly string[];
  day: string;
  /** Sorted by counter key, distinct. */
  counters: readonly CounterKey[];
  /** Sorted by account key, distinct. */
  accounts: readonly AccountRef[];
  /** Subjects whose month-to-date consumption the decision needs (monthly rules). */
  monthly: ReadonlyArray<{ kind: CounterKind; subjectId: string }>;
  monthStart: string;
}

export interface PayoutCommitHeld {
  keys: Map<string, KeyLock>;
  quotes: Map<string, QuoteLock>;
  /** By counter key (the commit's day). */
  counters: Map<string, { amount: bigint; count: bigint }>;
  pastMonth: Map<string, bigint>;
  balances: Map<string, bigint>;
  tenant:
    { creditEnabled: boolean; creditLimit: bigint | null; creditLimits: Record<string, string | null> } | undefined;
  usdMarket: string | undefined;
  /** The current version of the limit rules. */
  ruleEpoch: bigint;
}

/** The payout commit's lock statement (see lockPayoutCommit), its parameters added to `p` by name. */
function payoutLockSql(p: Params, partition: Partition, locks: PayoutCommitLocks): string {
  const tenant = p.add(partition.tenantId);
  const mode = p.add(partition.mode);
  // The commit claims a new key with the payment's id as its owner.
  const claims = p.add(locks.keys.map((k) => k.paymentId));
  const idem = IDEMPOTENCY_CTE({
    tenant,
    mode,
    now: p.add(locks.now),
    expires: p.add(locks.expiresAt),
    keys: p.add(locks.keys.map((k) => k.key)),
    fingerprints: p.add(locks.keys.map((k) => k.fingerprint)),
    owners: claims,
    paymentIds: claims,
    leases: p.add(locks.keys.map((k) => k.lockedUntil)),
    guard: IN_COMMIT_TRANSACTION,
  });
  const day = p.add(locks.day);
  const usage = USAGE_CTE({
    tenant,
    mode,
    days: p.add(locks.counters.map(() => locks.day)),
    kinds: p.add(locks.counters.map((c) => c.kind)),
    subjects: p.add(locks.counters.map((c) => c.subjectId)),
    methods: p.add(locks.counters.map((c) => c.method)),
    guard: IN_COMMIT_TRANSACTION,
  });
  const assets = p.add(locks.accounts.map((a) => a.asset));
  const kinds = p.add(locks.accounts.map((a) => a.kind));
  const account = ACCOUNT_CTE({
    tenant,
    mode,
    assets,
    kinds,
    inFlightSlot: IN_FLIGHT_SLOT.payout,
    guard: IN_COMMIT_TRANSACTION,
  });
  const subjects = p.unnest(
    { kind: ['text', locks.monthly.map((m) => m.kind)], subject_id: ['uuid', locks.monthly.map((m) => m.subjectId)] },
    { alias: 's' },
  );
  return `WITH idem AS (${idem}),
quote AS (
  -- By primary key, locked in id order (ORDER BY … FOR UPDATE locks the rows in that order).
  SELECT q.id, q.consumed_at, q.expires_at FROM quotes q
   WHERE q.tenant_id = ${tenant} AND q.id = ANY(${p.add(locks.quoteIds)}::uuid[]) AND q.mode = ${mode}
   ORDER BY q.id
     FOR UPDATE
), usage AS (${usage}),
account AS (${account}),
month AS (
  -- Per subject, a range of its own rows (LATERAL keeps it on the primary key, never the tenant's rows).
  SELECT s.kind AS subject_kind, s.subject_id, m.method, m.amount
    FROM ${subjects}
    CROSS JOIN LATERAL (
      SELECT u.method, sum(u.amount)::bigint AS amount FROM limit_usage u
       WHERE u.tenant_id = ${tenant} AND u.mode = ${mode} AND u.subject_kind = s.kind AND u.subject_id = s.subject_id
         AND u.business_date >= ${p.add(locks.monthStart)}::date AND u.business_date < ${day}::date
       GROUP BY u.method
    ) m
)
${payoutLockResultRows(tenant)}`;
}

/**
 * The statement's result: every CTE's rows and the unlocked reads in one row set, each row tagged
 * with its `part` so lockPayoutCommit can tell them apart. Pure text: it adds no parameter, so the
 * statement's parameter order is the CTEs' alone.
 */
function payoutLockResultRows(tenant: string): string {
  return `${IDEMPOTENCY_PART}
UNION ALL ${part('quote', { id: 'id::text', consumed_at: 'consumed_at', expires_at: 'expires_at' }, 'quote')}
UNION ALL ${USAGE_PART}
UNION ALL ${ACCOUNT_PART}
UNION ALL ${part('month', { subject_kind: 'subject_kind', subject_id: 'subject_id::text', method: 'method', amount: 'amount' }, 'month')}
UNION ALL ${part(
    'tenant',
    {
      credit_enabled: 'credit_enabled',
      credit_limit: 'credit_limit',
      credit_limits: 'credit_limits::text',
      rule_epoch: '(SELECT epoch FROM limit_rule_epoch WHERE singleton)',
    },
    `tenants WHERE id = ${tenant}`,
  )}
UNION ALL ${part('rate', { usd_market: 'market_text' }, "fx_rates WHERE asset = 'USD'")}`;
}

/**
 * Steps 1, 2, 4 and 5 for a payout commit in one round trip, plus the unlocked reads its decision
 * needs: the tenant's credit settings, the current USD rate (the rail floor) and month-to-date usage.
 * The commit's claim on a new key is the row it inserts (owner = payment id); an existing key is
 * locked and read back as it stands.
 */
export async function lockPayoutCommit(
  tx: Queryable,
  partition: Partition,
  locks: PayoutCommitLocks,
): Promise<PayoutCommitHeld> {
  assertSorted(locks.keys, (k) => k.key, 'idempotency keys');
  assertSorted(locks.quoteIds, (q) => q, 'quotes');
  assertSorted(locks.counters, counterKeyOf, 'limit counters');
  assertSorted(locks.accounts, accountKeyOf, 'ledger accounts');
  const p = new Params();
  const { rows } = await tx.query<LockRow>(payoutLockSql(p, partition, locks), p.values);
  const claims = new Map(locks.keys.map((k) => [k.key, k.paymentId]));
  const held: PayoutCommitHeld = {
    keys: new Map(),
    quotes: new Map(locks.quoteIds.map((id) => [id, 'missing' as QuoteLock])),
    counters: new Map(),
    pastMonth: new Map(),
    balances: readAccounts(rows, locks.accounts),
    tenant: undefined,
    usdMarket: undefined,
    ruleEpoch: -1n,
  };
  for (const [k, v] of readUsage(rows)) held.counters.set(k.slice(k.indexOf('|') + 1), v);
  for (const r of rows) {
    switch (r.part) {
      case 'key': {
        // Ours when the row's owner is the payment id this commit claimed the key with.
        if (r.owner !== null && r.owner === claims.get(r.key!)) held.keys.set(r.key!, { owned: true });
        else held.keys.set(r.key!, { owned: false, stored: storedKeyOf(r) });
        break;
      }
      case 'quote': {
        const state: QuoteLock =
          r.consumed_at !== null ? 'consumed' : r.expires_at!.getTime() <= locks.now.getTime() ? 'expired' : 'open';
        held.quotes.set(r.id!, state);
        break;
      }
      case 'month': {
        const key: CounterKey = {
          kind: r.subject_kind as CounterKind,
          subjectId: r.subject_id!,
          method: r.method as CounterKey['method'],
        };
        held.pastMonth.set(counterKeyOf(key), r.amount!);
        break;
      }
      case 'tenant':
        held.tenant = {
          creditEnabled: r.credit_enabled!,
          creditLimit: r.credit_limit,
          creditLimits: JSON.parse(r.credit_limits ?? '{}') as Record<string, string | null>,
        };
        held.ruleEpoch = r.rule_epoch!;
        break;
      case 'rate':
        held.usdMarket = r.usd_market!;
        break;
    }
  }
  return held;
}
