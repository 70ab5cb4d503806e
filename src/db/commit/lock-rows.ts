// The parts every lock statement of the commits is built from: the one row shape of a lock
// statement's UNION ALL, the steps shared by several writers (keys, counters, accounts), and reading
// what they locked. The order they are taken in is the lock order (README.md in this folder).
import type { AccountKind } from '../../domain/ledger.ts';
import {
  accountKeyOf,
  counterKeyOf,
  type AccountRef,
  type CounterKey,
  type CounterKind,
} from '../../domain/commit/keys.ts';
import { StaleCommitRead } from './transaction.ts';
import { assert } from '../../domain/assert.ts';

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
type SqlValue<T extends string> = T extends 'text'
  ? string
  : T extends 'integer'
    ? number
    : T extends 'bigint'
      ? bigint
      : T extends 'boolean'
        ? boolean
        : Date;

/** One row of a lock statement: which part it comes from, and that part's columns (every other one NULL). */
export type LockRow = { part: string } & { [C in LockColumn]: SqlValue<(typeof LOCK_COLUMNS)[C]> | null };

/** `SELECT '<part>' AS part, <columns>`: each column given as an expression, every other one a typed NULL. */
export function part(name: string, columns: Partial<Record<LockColumn, string>>, from: string): string {
  const list = (Object.keys(LOCK_COLUMNS) as LockColumn[])
    .map((c) => `${columns[c] ?? `NULL::${LOCK_COLUMNS[c]}`} AS ${c}`)
    .join(', ');
  return `SELECT '${name}'::text AS part, ${list} FROM ${from}`;
}

/**
 * The row of a tenant's in-flight account each writer keeps (migration 018): payout commits credit
 * slot 0, outcome commits debit slot 1, so a tenant's payouts and settlements never queue on one hot
 * row; the account's balance is the sum of both. Every other account has one row, slot 0.
 */
export const IN_FLIGHT_SLOT = { payout: 0, outcome: 1 } as const;
export type InFlightSlot = (typeof IN_FLIGHT_SLOT)[keyof typeof IN_FLIGHT_SLOT];

/** SQL: the slot of the account named by the `kind` expression, for a writer keeping `inFlightSlot`. */
export function slotOf(kind: string, inFlightSlot: InFlightSlot): string {
  return inFlightSlot === 0 ? '0' : `(CASE WHEN ${kind} = 'in_flight' THEN ${inFlightSlot} ELSE 0 END)`;
}

/**
 * SQL, true only inside a commit transaction (TransactionOptions.commit: its BEGIN also sets
 * bolivar.in_commit for the transaction; outside one the setting is unset or empty). On PostgreSQL a
 * commit's BEGIN is pipelined with its first statement, the lock statement, so that statement is on
 * the wire before BEGIN's answer; in the (practically impossible) case that BEGIN failed on a live
 * connection, the lock statement would run on its own, committed at once. Every row it would insert
 * is guarded by this, so it then writes nothing; its caller sees BEGIN's error and the commit runs
 * again.
 */
export const IN_COMMIT_TRANSACTION = "current_setting('bolivar.in_commit', true) = 'on'";

/** Step 1: claim or lock each key (sorted); a key past its TTL is taken over. Keys must be distinct. */
export const IDEMPOTENCY_CTE = (p: {
  tenant: string;
  mode: string;
  now: string;
  expires: string;
  keys: string;
  fingerprints: string;
  owners: string;
  paymentIds: string;
  leases: string;
  guard?: string;
}) => `
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

export const IDEMPOTENCY_PART = part(
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
export const USAGE_CTE = (p: {
  tenant: string;
  mode: string;
  days: string;
  kinds: string;
  subjects: string;
  methods: string;
  guard: string;
}) => `
  INSERT INTO limit_usage AS u (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
  SELECT ${p.tenant}, ${p.mode}, v.kind, v.subject_id, v.method, v.day, 0, 0
    FROM unnest(${p.days}::date[], ${p.kinds}::text[], ${p.subjects}::uuid[], ${p.methods}::text[]) WITH ORDINALITY AS v(day, kind, subject_id, method, n)
   WHERE ${p.guard}
   ORDER BY v.n
  ON CONFLICT (tenant_id, mode, subject_kind, subject_id, method, business_date) DO UPDATE SET amount = u.amount
  RETURNING u.business_date, u.subject_kind, u.subject_id, u.method, u.amount, u.count`;

export const USAGE_PART = part(
  'usage',
  {
    business_date: 'business_date::text',
    subject_kind: 'subject_kind',
    subject_id: 'subject_id::text',
    method: 'method',
    amount: 'amount',
    count: 'count',
  },
  'usage',
);

/**
 * Step 5: the existing accounts locked in the order given (sorted), then the missing ones created at
 * zero, in that order too. Locking instead of upserting the existing ones writes no new version of the
 * hot balance rows. An account another transaction created after this statement's snapshot is neither
 * locked nor created here: `readAccounts` reports it missing and the commit runs again (StaleCommitRead).
 * Two writers creating the same accounts insert them in the same order, so one waits for the other.
 * `inFlightSlot` is the row of the in-flight account this writer keeps (IN_FLIGHT_SLOT); every other
 * account has one row, slot 0.
 */
export const ACCOUNT_CTE = (p: {
  tenant: string;
  mode: string;
  assets: string;
  kinds: string;
  inFlightSlot: InFlightSlot;
  guard?: string;
}) => `
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

export const ACCOUNT_PART = `${part('account', { asset: 'asset', kind: 'kind', balance: 'balance' }, 'account')}
UNION ALL ${part('account', { asset: 'asset', kind: 'kind', balance: 'balance' }, 'account_created')}`;

export function readUsage(rows: readonly LockRow[]): Map<string, { amount: bigint; count: bigint }> {
  const usage = new Map<string, { amount: bigint; count: bigint }>();
  for (const r of rows) {
    if (r.part !== 'usage') continue;
    const key: CounterKey = {
      kind: r.subject_kind as CounterKind,
      subjectId: r.subject_id!,
      method: r.method as CounterKey['method'],
    };
    usage.set(`${r.business_date}|${counterKeyOf(key)}`, { amount: r.amount!, count: r.count! });
  }
  return usage;
}

/** Balances of the accounts locked or created; every requested account must be one or the other. */
export function readAccounts(rows: readonly LockRow[], requested: readonly AccountRef[]): Map<string, bigint> {
  const balances = new Map<string, bigint>();
  for (const r of rows)
    if (r.part === 'account') balances.set(accountKeyOf({ asset: r.asset!, kind: r.kind as AccountKind }), r.balance!);
  for (const a of requested)
    if (!balances.has(accountKeyOf(a))) throw new StaleCommitRead(`account ${accountKeyOf(a)} created meanwhile`);
  return balances;
}

export function assertSorted<T>(items: readonly T[], keyOf: (item: T) => string, what: string): void {
  for (let i = 1; i < items.length; i += 1) {
    assert(keyOf(items[i - 1]!) < keyOf(items[i]!), `${what} must be distinct and sorted before they are locked`);
  }
}

export const counterLockKey = (c: { day: string; counter: CounterKey }) => `${c.day}|${counterKeyOf(c.counter)}`;

export function storedKeyOf(r: LockRow) {
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

/** Sorts and de-duplicates ids, as every lock of this module needs them. */
export function sortedIds(ids: Iterable<string>): string[] {
  return [...new Set(ids)].sort();
}
