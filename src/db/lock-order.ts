// THE lock order. Every transaction that writes money-related rows takes its row locks here, in this
// order, each kind sorted by its key — so two writers can wait for each other but never in a cycle:
//
//   1. idempotency_keys  (tenant, mode, key)                        payout batch, funding
//   2. quotes            (tenant, mode, id)                         payout batch
//   3. payments          (tenant, id)                               outcome batch (payout path, reaper, notifications)
//   4. limit_usage       (tenant, mode, kind, subject, method, day) payout batch, outcome batch (give-back)
//   5. ledger_accounts   (tenant, mode, asset, kind, slot)          payout batch, outcome batch, funding, daily close, sandbox funding
//   6. beneficiaries     (tenant, mode, …)                          outcome batch (history), payout batch (inline registration, history)
//   7. customers         (tenant, mode, id)                         payout batch (a customer's stored sender)
//   8. sandbox_rail_transfers (reference)                           outcome batch (a sandbox simulation rewrites the rail's record)
//
// A tenant's in-flight account has two rows (IN_FLIGHT_SLOT): payout batches lock slot 0, outcome
// batches slot 1. So a payout batch and an outcome batch of one tenant run side by side, meeting only
// on rows both really change (a rejection's refund to the prefunding account), which they lock in this
// order like everyone else. Steps 6 and 7 may therefore have a payout batch and an outcome batch in
// them at once: each locks its rows there in sorted order, and after step 6 they part ways (customers
// are a payout batch's, the sandbox rail's transfers an outcome batch's), so they never wait in a
// cycle.
//
// Every balance changes under these locks: a payout or outcome batch writes its entries after its lock statement,
// and every other entry (a funding, the daily close, the sandbox tenant's first funding) goes through
// lockAndPostEntry, which takes step 5 for the accounts it posts to. Nothing else writes a ledger row.
// The scheduled close records each (asset, day) it closes in daily_closes after step 5, INSERT … ON
// CONFLICT DO NOTHING: only another close of the same tenant and mode inserts that row, and it waits
// at step 5 first.
//
// A writer may skip steps, never go back to an earlier one. A row that may not exist yet is created at
// its place in the order, so a missing row is never a gap another writer can slip through: a limit
// counter by INSERT … ON CONFLICT DO UPDATE (locked whether it was there or not); a ledger account by
// locking the existing ones (sorted) and then inserting the missing ones (sorted) — one that another
// transaction created after this statement's snapshot makes the batch run again (StaleBatchRead).
// Rows a transaction inserts that nobody else can know yet (a new payment, its transitions, ledger
// entries, outbox events, audit rows) are not locks anyone waits for.
//
// Anomalies (a rail report that contradicts a payment) are new rows an outcome batch inserts after its
// write, before step 8, INSERT … ON CONFLICT (dedup_key) DO NOTHING in key order: such an insert waits
// only for another transaction inserting the same key, and a payment's keys name that payment, whose
// row (step 3) the other transaction would hold first. An operator's resolution locks one anomaly and
// nothing else; an insert that meets an existing row does not wait for it.
//
// The audit archive (services/audit-archive.ts) is a separate domain too: its transaction locks its
// one app_state row, then deletes the audit rows it archived; no other writer locks either (audit rows
// are only ever inserted), so it waits for nothing but another archiving.
//
// Limit rules are a separate domain: a rule write locks limit_rule_epoch, then the rules; batches
// only read the epoch (no lock) and decide again when it moved.
//
// Statements outside a transaction lock one kind of row only, in sorted order, and wait for nothing
// else while holding it: the payout's answer after the rail call (its own idempotency key, and its
// payment FOR SHARE for the acceptance record: nobody holding a payment waits for a key), the reaper's claim
// (payments, SKIP LOCKED: never waits) and its deferral of one claimed payment (one row), beneficiary
// registration and a customer's stored sender (one row each), and the sandbox rail's own writes (its transfers, by reference: a submission, an
// acknowledged return). A payout batch's own rows (repositories/payout-batches.ts) are written the same
// way: its claim takes a transaction advisory lock on its tenant and mode (the in-progress bound: the
// count and the insert as one step; nothing else takes it) and then inserts its one payout_batches
// row; its takeover or release locks that one row; its items are inserted, with
// that row, by one statement of the request holding the batch; their quotes are new rows. Its payouts
// go through the payout batches above like any payout. So step 8 can come last: besides an outcome batch, only those statements,
// which hold nothing else, ever take its rows.
//
// Steps 1–5 of a batch are taken by ONE statement (one round trip); PostgreSQL runs the parts of a
// UNION ALL in order, and each part locks its rows through ORDER BY … FOR UPDATE or an ordered
// INSERT … ON CONFLICT, so the order above is the order the locks are taken in.
//
// A rail statement's matching (services/rail-statements.ts) takes none of these locks either: it reads
// payments without locking them and writes its own rows and anomalies of its own kinds (statement_*,
// which no outcome batch inserts). Two statements of one rail and day insert the same anomaly keys
// batch after batch, so each first takes a transaction advisory lock on its rail and day
// (beginStatementMatch): they run one after the other, never waiting for each other in a cycle.
//
// Reconciliation (services/reconciliation-run.ts) takes none of these locks: it reads the money tables in
// READ ONLY snapshots, which writers never wait for, and writes only its own run rows (its queue claims
// them with SKIP LOCKED), never together with any row above.
//
// The report fold (db/repositories/report-rollups.ts) takes none of these locks: it reads payments,
// their transitions and webhook attempts without locking them, locks its one report_fold row (SKIP
// LOCKED: a second fold skips its turn, never waits) and then writes only the report's rollup rows,
// which nothing else writes.
//
// A deadlock is therefore a bug in this module. `inTransaction` still retries a transaction that
// PostgreSQL aborted as a deadlock or serialization victim (bounded, with jitter), as a safety net.

import type { AccountKind } from '../domain/ledger.ts';
import type { KeyLock, QuoteLock } from '../domain/payout-decision.ts';
import { accountKeyOf, counterKeyOf, type AccountRef, type CounterKey, type CounterKind } from '../domain/payout-decision.ts';
import type { PaymentStatus } from '../domain/payment-state.ts';
import { isRetryableConflict, type Database, type Queryable, type TransactionHandle, type TransactionOptions } from './database.ts';
import type { Partition } from '../domain/partition.ts';
import { randomUUID } from 'node:crypto';
import { assertBalanced, type LedgerEntry } from '../domain/ledger.ts';
import { sortedValues } from '../domain/payout-decision.ts';
import { Params } from './repositories/sql-params.ts';
import { BALANCE_RETURNING, balanceHistorySql, balanceStampSql } from './balance-history.ts';


/**
 * A batch read something before or outside its locks that turned out stale under them (an inline
 * beneficiary or a ledger account created meanwhile by another transaction, limit rules changed): the
 * transaction rolls back and runs again, reading anew.
 */
export class StaleBatchRead extends Error {
  constructor(what: string) {
    super(`stale read in a batch: ${what}`);
    this.name = 'StaleBatchRead';
  }
}

/** Attempts of one transaction that PostgreSQL aborted as a deadlock or serialization victim. */
const TRANSACTION_ATTEMPTS_MAX = 4;
/** Upper bound of the random pause before attempt n+1 is n times this. */
const RETRY_JITTER_MS = 20;

/**
 * Runs `work` in one transaction; if PostgreSQL aborts it as a deadlock or serialization victim (or
 * it read something stale, StaleBatchRead), runs it again (at most TRANSACTION_ATTEMPTS_MAX times, after a random pause). `work` must be safe to run
 * again: everything it did was rolled back.
 */
export async function inTransaction<T>(db: Database, work: (tx: TransactionHandle) => Promise<T>, options?: TransactionOptions): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await db.transaction(work, options);
    } catch (error) {
      const retryable = isRetryableConflict(error) || error instanceof StaleBatchRead;
      if (!retryable || attempt >= TRANSACTION_ATTEMPTS_MAX) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * RETRY_JITTER_MS * attempt));
    }
  }
}

/**
 * The columns of a lock statement's rows, by name and SQL type. UNION ALL needs one row shape for all
 * its parts, so each part fills the columns it has and leaves the others NULL; a column several parts
 * share means the same in each (a key's and a quote's expiry, a counter's and a month's subject).
 */
const LOCK_COLUMNS = {
  // idempotency key (step 1)
  key: 'text',
  fingerprint: 'text',
  owner: 'text',
  payment_id: 'text',
  response_status: 'integer',
  response_body: 'text',
  locked_until: 'timestamptz',
  expires_at: 'timestamptz',
  // quote (step 2) or payment (step 3): its id; status: a key's or a payment's
  id: 'text',
  status: 'text',
  consumed_at: 'timestamptz',
  // payment (step 3)
  status_reason: 'text',
  message: 'text',
  bank_reference: 'text',
  fee_amount: 'bigint',
  settled_at: 'timestamptz',
  next_check_at: 'timestamptz',
  resolution_parked_at: 'timestamptz',
  compensated: 'boolean',
  check_attempts: 'integer',
  // limit counter (step 4), and a subject's month to date
  business_date: 'text',
  subject_kind: 'text',
  subject_id: 'text',
  method: 'text',
  amount: 'bigint',
  count: 'bigint',
  // ledger account (step 5)
  asset: 'text',
  kind: 'text',
  balance: 'bigint',
  // the tenant's credit settings and the limit rules' version, and the USD rate (read, not locked)
  credit_enabled: 'boolean',
  credit_limit: 'bigint',
  credit_limits: 'text',
  rule_epoch: 'bigint',
  usd_market: 'text',
} as const;

type LockColumn = keyof typeof LOCK_COLUMNS;
type SqlValue<T extends string> = T extends 'text' ? string : T extends 'integer' ? number : T extends 'bigint' ? bigint : T extends 'boolean' ? boolean : Date;

/** One row of a lock statement: which part it comes from, and that part's columns (every other one NULL). */
type LockRow = { part: string } & { [C in LockColumn]: SqlValue<(typeof LOCK_COLUMNS)[C]> | null };

/** `SELECT '<part>' AS part, <columns>`: each column given as an expression, every other one a typed NULL. */
function part(name: string, columns: Partial<Record<LockColumn, string>>, from: string): string {
  const list = (Object.keys(LOCK_COLUMNS) as LockColumn[]).map((c) => `${columns[c] ?? `NULL::${LOCK_COLUMNS[c]}`} AS ${c}`).join(', ');
  return `SELECT '${name}'::text AS part, ${list} FROM ${from}`;
}

/**
 * The row of a tenant's in-flight account each writer keeps (migration 018): payout batches credit
 * slot 0, outcome batches debit slot 1, so a tenant's payouts and settlements never queue on one hot
 * row; the account's balance is the sum of both. Every other account has one row, slot 0.
 */
export const IN_FLIGHT_SLOT = { payout: 0, outcome: 1 } as const;
export type InFlightSlot = (typeof IN_FLIGHT_SLOT)[keyof typeof IN_FLIGHT_SLOT];

/** SQL: the slot of the account named by the `kind` expression, for a writer keeping `inFlightSlot`. */
export function slotOf(kind: string, inFlightSlot: InFlightSlot): string {
  return inFlightSlot === 0 ? '0' : `(CASE WHEN ${kind} = 'in_flight' THEN ${inFlightSlot} ELSE 0 END)`;
}

/**
 * SQL, true only inside a batch transaction (TransactionOptions.batch: its BEGIN also sets
 * bolivar.in_batch for the transaction; outside one the setting is unset or empty). On PostgreSQL a
 * batch's BEGIN is pipelined with its first statement, the lock statement, so that statement is on
 * the wire before BEGIN's answer; in the (practically impossible) case that BEGIN failed on a live
 * connection, the lock statement would run on its own, committed at once. Every row it would insert
 * is guarded by this, so it then writes nothing; its caller sees BEGIN's error and the batch runs
 * again.
 */
const IN_BATCH_TRANSACTION = "current_setting('bolivar.in_batch', true) = 'on'";

// ---------------------------------------------------------------------------------------------------
// Shared parts

/** Step 1: claim or lock each key (sorted); a key past its TTL is taken over. Keys must be distinct. */
const IDEMPOTENCY_CTE = (p: { tenant: string; mode: string; now: string; expires: string; keys: string; fingerprints: string; owners: string; paymentIds: string; leases: string; guard?: string }) => `
  INSERT INTO idempotency_keys AS k (tenant_id, mode, key, fingerprint, status, owner, payment_id, locked_until, created_at, expires_at)
  SELECT ${p.tenant}, ${p.mode}, v.key, v.fingerprint, 'in_progress', v.owner, v.payment_id, v.locked_until, ${p.now}, ${p.expires}
    FROM unnest(${p.keys}::text[], ${p.fingerprints}::text[], ${p.owners}::uuid[], ${p.paymentIds}::uuid[], ${p.leases}::timestamptz[])
      AS v(key, fingerprint, owner, payment_id, locked_until)
   WHERE ${p.guard ?? 'true'}
   ORDER BY v.key
  ON CONFLICT (tenant_id, mode, key) DO UPDATE SET
    fingerprint   = CASE WHEN k.expires_at <= ${p.now} THEN EXCLUDED.fingerprint ELSE k.fingerprint END,
    status        = CASE WHEN k.expires_at <= ${p.now} THEN EXCLUDED.status ELSE k.status END,
    owner         = CASE WHEN k.expires_at <= ${p.now} THEN EXCLUDED.owner ELSE k.owner END,
    payment_id    = CASE WHEN k.expires_at <= ${p.now} THEN EXCLUDED.payment_id ELSE k.payment_id END,
    response_status = CASE WHEN k.expires_at <= ${p.now} THEN NULL ELSE k.response_status END,
    response_body = CASE WHEN k.expires_at <= ${p.now} THEN NULL ELSE k.response_body END,
    locked_until  = CASE WHEN k.expires_at <= ${p.now} THEN EXCLUDED.locked_until ELSE k.locked_until END,
    created_at    = CASE WHEN k.expires_at <= ${p.now} THEN EXCLUDED.created_at ELSE k.created_at END,
    expires_at    = CASE WHEN k.expires_at <= ${p.now} THEN EXCLUDED.expires_at ELSE k.expires_at END
  RETURNING k.key, k.fingerprint, k.status, k.owner, k.payment_id, k.response_status, k.response_body, k.locked_until, k.expires_at`;

const IDEMPOTENCY_PART = part(
  'key',
  {
    key: 'key',
    fingerprint: 'fingerprint',
    status: 'status',
    owner: 'owner::text',
    payment_id: 'payment_id::text',
    response_status: 'response_status',
    response_body: 'response_body',
    locked_until: 'locked_until',
    expires_at: 'expires_at',
  },
  'idem',
);

/** Step 4: the day's counters, created at zero when missing, locked in the order given. */
const USAGE_CTE = (p: { tenant: string; mode: string; days: string; kinds: string; subjects: string; methods: string; guard: string }) => `
  INSERT INTO limit_usage AS u (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
  SELECT ${p.tenant}, ${p.mode}, v.kind, v.subject_id, v.method, v.day, 0, 0
    FROM unnest(${p.days}::date[], ${p.kinds}::text[], ${p.subjects}::uuid[], ${p.methods}::text[]) WITH ORDINALITY AS v(day, kind, subject_id, method, n)
   WHERE ${p.guard}
   ORDER BY v.n
  ON CONFLICT (tenant_id, mode, subject_kind, subject_id, method, business_date) DO UPDATE SET amount = u.amount
  RETURNING u.business_date, u.subject_kind, u.subject_id, u.method, u.amount, u.count`;

const USAGE_PART = part(
  'usage',
  { business_date: 'business_date::text', subject_kind: 'subject_kind', subject_id: 'subject_id::text', method: 'method', amount: 'amount', count: 'count' },
  'usage',
);

/**
 * Step 5: the existing accounts locked in the order given (sorted), then the missing ones created at
 * zero, in that order too. Locking instead of upserting the existing ones writes no new version of the
 * hot balance rows. An account another transaction created after this statement's snapshot is neither
 * locked nor created here: `readAccounts` reports it missing and the batch runs again (StaleBatchRead).
 * Two writers creating the same accounts insert them in the same order, so one waits for the other.
 * `inFlightSlot` is the row of the in-flight account this writer keeps (IN_FLIGHT_SLOT); every other
 * account has one row, slot 0.
 */
const ACCOUNT_CTE = (p: { tenant: string; mode: string; assets: string; kinds: string; inFlightSlot: InFlightSlot; guard?: string }) => `
  SELECT a.asset, a.kind, a.balance FROM ledger_accounts a
    JOIN unnest(${p.assets}::text[], ${p.kinds}::text[]) AS v(asset, kind) ON a.asset = v.asset AND a.kind = v.kind
   WHERE a.tenant_id = ${p.tenant} AND a.mode = ${p.mode} AND a.slot = ${slotOf('v.kind', p.inFlightSlot)}
   ORDER BY a.asset, a.kind
     FOR UPDATE OF a
), account_created AS (
  INSERT INTO ledger_accounts AS a (tenant_id, mode, asset, kind, slot, balance)
  SELECT ${p.tenant}, ${p.mode}, v.asset, v.kind, ${slotOf('v.kind', p.inFlightSlot)}, 0
    FROM unnest(${p.assets}::text[], ${p.kinds}::text[]) WITH ORDINALITY AS v(asset, kind, n)
   WHERE ${p.guard ?? 'true'}
   ORDER BY v.n
  ON CONFLICT (tenant_id, mode, asset, kind, slot) DO NOTHING
  RETURNING a.asset, a.kind, a.balance`;

const ACCOUNT_PART = `${part('account', { asset: 'asset', kind: 'kind', balance: 'balance' }, 'account')}
UNION ALL ${part('account', { asset: 'asset', kind: 'kind', balance: 'balance' }, 'account_created')}`;

function readUsage(rows: readonly LockRow[]): Map<string, { amount: bigint; count: bigint }> {
  const usage = new Map<string, { amount: bigint; count: bigint }>();
  for (const r of rows) {
    if (r.part !== 'usage') continue;
    const key: CounterKey = { kind: r.subject_kind as CounterKind, subjectId: r.subject_id!, method: r.method as CounterKey['method'] };
    usage.set(`${r.business_date}|${counterKeyOf(key)}`, { amount: r.amount!, count: r.count! });
  }
  return usage;
}

/** Balances of the accounts locked or created; every requested account must be one or the other. */
function readAccounts(rows: readonly LockRow[], requested: readonly AccountRef[]): Map<string, bigint> {
  const balances = new Map<string, bigint>();
  for (const r of rows) if (r.part === 'account') balances.set(accountKeyOf({ asset: r.asset!, kind: r.kind as AccountKind }), r.balance!);
  for (const a of requested) if (!balances.has(accountKeyOf(a))) throw new StaleBatchRead(`account ${accountKeyOf(a)} created meanwhile`);
  return balances;
}

export function assertSorted<T>(items: readonly T[], keyOf: (item: T) => string, what: string): void {
  for (let i = 1; i < items.length; i += 1) {
    if (!(keyOf(items[i - 1]!) < keyOf(items[i]!))) throw new Error(`invariant: ${what} must be distinct and sorted before they are locked`);
  }
}

const counterLockKey = (c: { day: string; counter: CounterKey }) => `${c.day}|${counterKeyOf(c.counter)}`;

// ---------------------------------------------------------------------------------------------------
// Payout batch: keys → quotes → counters → accounts, plus what the decision reads unlocked.

export interface PayoutBatchLocks {
  now: Date;
  expiresAt: Date;
  /** One per distinct key, sorted by key; `owner` and `paymentId` identify this batch's claim. */
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

export interface PayoutBatchHeld {
  keys: Map<string, KeyLock>;
  quotes: Map<string, QuoteLock>;
  /** By counter key (the batch's day). */
  counters: Map<string, { amount: bigint; count: bigint }>;
  pastMonth: Map<string, bigint>;
  balances: Map<string, bigint>;
  tenant: { creditEnabled: boolean; creditLimit: bigint | null; creditLimits: Record<string, string | null> } | undefined;
  usdMarket: string | undefined;
  /** The current version of the limit rules. */
  ruleEpoch: bigint;
}

/** The payout batch's lock statement (see lockPayoutBatch), its parameters added to `p` by name. */
function payoutLockSql(p: Params, partition: Partition, locks: PayoutBatchLocks): string {
  const tenant = p.add(partition.tenantId);
  const mode = p.add(partition.mode);
  // The batch claims a new key with the payment's id as its owner.
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
    guard: IN_BATCH_TRANSACTION,
  });
  const day = p.add(locks.day);
  const usage = USAGE_CTE({
    tenant,
    mode,
    days: p.add(locks.counters.map(() => locks.day)),
    kinds: p.add(locks.counters.map((c) => c.kind)),
    subjects: p.add(locks.counters.map((c) => c.subjectId)),
    methods: p.add(locks.counters.map((c) => c.method)),
    guard: IN_BATCH_TRANSACTION,
  });
  const assets = p.add(locks.accounts.map((a) => a.asset));
  const kinds = p.add(locks.accounts.map((a) => a.kind));
  const account = ACCOUNT_CTE({ tenant, mode, assets, kinds, inFlightSlot: IN_FLIGHT_SLOT.payout, guard: IN_BATCH_TRANSACTION });
  const subjects = p.unnest({ kind: ['text', locks.monthly.map((m) => m.kind)], subject_id: ['uuid', locks.monthly.map((m) => m.subjectId)] }, { alias: 's' });
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
${IDEMPOTENCY_PART}
UNION ALL ${part('quote', { id: 'id::text', consumed_at: 'consumed_at', expires_at: 'expires_at' }, 'quote')}
UNION ALL ${USAGE_PART}
UNION ALL ${ACCOUNT_PART}
UNION ALL ${part('month', { subject_kind: 'subject_kind', subject_id: 'subject_id::text', method: 'method', amount: 'amount' }, 'month')}
UNION ALL ${part(
  'tenant',
  { credit_enabled: 'credit_enabled', credit_limit: 'credit_limit', credit_limits: 'credit_limits::text', rule_epoch: '(SELECT epoch FROM limit_rule_epoch WHERE singleton)' },
  `tenants WHERE id = ${tenant}`,
)}
UNION ALL ${part('rate', { usd_market: 'market_text' }, "fx_rates WHERE asset = 'USD'")}`;
}

/**
 * Steps 1, 2, 4 and 5 for a payout batch in one round trip, plus the unlocked reads its decision
 * needs: the tenant's credit settings, the current USD rate (the rail floor) and month-to-date usage.
 * The batch's claim on a new key is the row it inserts (owner = payment id); an existing key is
 * locked and read back as it stands.
 */
export async function lockPayoutBatch(tx: Queryable, partition: Partition, locks: PayoutBatchLocks): Promise<PayoutBatchHeld> {
  assertSorted(locks.keys, (k) => k.key, 'idempotency keys');
  assertSorted(locks.quoteIds, (q) => q, 'quotes');
  assertSorted(locks.counters, counterKeyOf, 'limit counters');
  assertSorted(locks.accounts, accountKeyOf, 'ledger accounts');
  const p = new Params();
  const { rows } = await tx.query<LockRow>(payoutLockSql(p, partition, locks), p.values);
  const claims = new Map(locks.keys.map((k) => [k.key, k.paymentId]));
  const held: PayoutBatchHeld = {
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
        // Ours when the row's owner is the payment id this batch claimed the key with.
        if (r.owner !== null && r.owner === claims.get(r.key!)) held.keys.set(r.key!, { owned: true });
        else held.keys.set(r.key!, { owned: false, stored: storedKeyOf(r) });
        break;
      }
      case 'quote': {
        const state: QuoteLock = r.consumed_at !== null ? 'consumed' : r.expires_at!.getTime() <= locks.now.getTime() ? 'expired' : 'open';
        held.quotes.set(r.id!, state);
        break;
      }
      case 'month': {
        const key: CounterKey = { kind: r.subject_kind as CounterKind, subjectId: r.subject_id!, method: r.method as CounterKey['method'] };
        held.pastMonth.set(counterKeyOf(key), r.amount!);
        break;
      }
      case 'tenant':
        held.tenant = { creditEnabled: r.credit_enabled!, creditLimit: r.credit_limit, creditLimits: JSON.parse(r.credit_limits ?? '{}') as Record<string, string | null> };
        held.ruleEpoch = r.rule_epoch!;
        break;
      case 'rate':
        held.usdMarket = r.usd_market!;
        break;
    }
  }
  return held;
}

function storedKeyOf(r: LockRow) {
  return {
    fingerprint: r.fingerprint!,
    status: r.status as 'in_progress' | 'completed',
    paymentId: r.payment_id,
    responseStatus: r.response_status,
    responseBody: r.response_body,
    lockedUntil: r.locked_until,
    expiresAt: r.expires_at!,
  };
}

// ---------------------------------------------------------------------------------------------------
// Funding: key → accounts.

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
  if (!row) throw new Error('invariant: the key lock returned no row');
  return row.owner === claim.owner ? { owned: true } : { owned: false, stored: storedKeyOf(row) };
}

/** Step 5 alone (funding, daily close): balances by account key, created at zero when missing. */
export async function lockAccounts(tx: Queryable, partition: Partition, accounts: readonly AccountRef[]): Promise<Map<string, bigint>> {
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

// ---------------------------------------------------------------------------------------------------
// Outcome batch: payments → counters → accounts.

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

export interface OutcomeBatchLocks {
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

/** The outcome batch's lock statement (see lockOutcomeBatch), its parameters added to `p` by name. */
function outcomeLockSql(p: Params, partition: Partition, locks: OutcomeBatchLocks): string {
  const tenant = p.add(partition.tenantId);
  const mode = p.add(partition.mode);
  const usage = USAGE_CTE({
    tenant,
    mode,
    days: p.add(locks.counters.map((c) => c.day)),
    kinds: p.add(locks.counters.map((c) => c.counter.kind)),
    subjects: p.add(locks.counters.map((c) => c.counter.subjectId)),
    methods: p.add(locks.counters.map((c) => c.counter.method)),
    guard: IN_BATCH_TRANSACTION,
  });
  const assets = p.add(locks.accounts.map((a) => a.asset));
  const kinds = p.add(locks.accounts.map((a) => a.kind));
  const account = ACCOUNT_CTE({ tenant, mode, assets, kinds, inFlightSlot: IN_FLIGHT_SLOT.outcome, guard: IN_BATCH_TRANSACTION });
  return `WITH pay AS (
  -- By primary key, locked in id order, as the payout batch's quotes.
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

/** Steps 3, 4 and 5 for an outcome batch of one tenant and mode, in one round trip. */
export async function lockOutcomeBatch(
  tx: Queryable,
  partition: Partition,
  locks: OutcomeBatchLocks,
): Promise<{ payments: Map<string, LockedPaymentState>; counters: Map<string, { amount: bigint; count: bigint }>; balances: Map<string, bigint> }> {
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

/** Sorts and de-duplicates ids, as every lock of this module needs them. */
export function sortedIds(ids: Iterable<string>): string[] {
  return [...new Set(ids)].sort();
}

// ---------------------------------------------------------------------------------------------------
// Single entries: a funding, the daily close, the sandbox tenant's first funding — every ledger entry
// that is not a payout batch's or an outcome batch's.

function entrySql(p: Params, partition: Partition, entry: { id: string; kind: string; at: Date | null; postings: readonly { asset: string; account: string; amount: bigint }[] }): string {
  const tenant = p.add(partition.tenantId);
  const mode = p.add(partition.mode);
  const id = p.add(entry.id);
  const at = p.add(entry.at);
  const assets = p.add(entry.postings.map((posting) => posting.asset));
  const kinds = p.add(entry.postings.map((posting) => posting.account));
  const amounts = p.add(entry.postings.map((posting) => posting.amount));
  const postings = p.unnest({ asset: ['text', assets], account_kind: ['text', kinds], amount: ['bigint', amounts] });
  return `WITH entry AS (
  INSERT INTO ledger_transactions (tenant_id, mode, id, kind, payment_id, created_at)
  VALUES (${tenant}, ${mode}, ${id}, ${p.add(entry.kind)}, NULL, coalesce(${at}::timestamptz, now()))
), posting AS (
  INSERT INTO ledger_postings (tenant_id, transaction_id, mode, asset, account_kind, amount)
  SELECT ${tenant}, ${id}, ${mode}, v.asset, v.account_kind, v.amount
    FROM ${postings}
), account AS (
  -- The rows were locked (or created at zero) just before. (An INSERT … ON CONFLICT would check the
  -- CHECK constraints against the bare delta and refuse a debit.)
  UPDATE ledger_accounts a SET balance = a.balance + v.amount, ${balanceStampSql(`coalesce(${at}::timestamptz, now())`)}
    FROM ${postings}
   WHERE a.tenant_id = ${tenant} AND a.mode = ${mode} AND a.asset = v.asset AND a.kind = v.account_kind AND a.slot = ${slotOf('a.kind', IN_FLIGHT_SLOT.payout)}
  RETURNING ${BALANCE_RETURNING}
), ${balanceHistorySql(tenant, mode)}
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
  const postings = sortedValues(new Map(entry.postings.map((p) => [accountKeyOf({ asset: p.asset, kind: p.account }), p])));
  const balances = await lockAccounts(tx, partition, postings.map((p) => ({ asset: p.asset, kind: p.account })));
  options.check?.(balances);
  for (const p of postings) {
    const after = balances.get(accountKeyOf({ asset: p.asset, kind: p.account }))! + p.amount;
    // The database's CHECK constraints say so again; this names the entry that broke it.
    if ((p.account === 'prefunding' && after > 0n) || (p.account === 'credit_receivable' && after < 0n)) {
      throw new Error(`invariant: a ${entry.kind} entry would take ${p.asset} ${p.account} to ${after}`);
    }
  }
  const id = randomUUID();
  const params = new Params();
  const sql = entrySql(params, partition, { id, kind: entry.kind, at: options.at ?? null, postings });
  const { rows } = await tx.query<{ accounts: number }>(sql, params.values);
  if (rows[0]?.accounts !== postings.length) throw new Error(`invariant: a ${entry.kind} entry changed ${rows[0]?.accounts} of its ${postings.length} account balances`);
  return { id, before: balances };
}
