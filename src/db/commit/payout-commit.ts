// The write of a payout commit: everything its decision says, in ONE statement, after the commit took
// its locks (db/commit/README.md). Data-modifying CTEs all run whatever the final SELECT reads; foreign
// keys are checked at the end of the statement and the balanced-entry trigger at commit, so the
// guarantees are those of separate statements at one round trip. The same SQL text at every call
// (parameters added by name, in a fixed order, Params) over unnest() arrays keeps one prepared
// statement whatever the commit's size.
import type { BeneficiaryDetails } from '../../domain/beneficiary.ts';
import type { Sender } from '../../domain/sender.ts';
import type { AccountRef, CounterKey } from '../../domain/commit/keys.ts';
import type { Posting } from '../../domain/ledger.ts';
import type { Queryable, TransactionHandle } from '../database.ts';
import { IN_FLIGHT_SLOT } from './lock-rows.ts';
import { accountBalancesSql, ledgerEntriesSql, outboxEventsSql, type WriteScope } from './ledger-sql.ts';
import { identityKeyOf } from '../repositories/beneficiaries.ts';
import type { NewPayment } from '../repositories/payments.ts';
import { Params } from '../repositories/sql-params.ts';
import type { Partition } from '../../domain/partition.ts';

export interface PayoutCommitWrite {
  now: Date;
  /** Quotes the commit consumed, each by the payment that used it (rows locked by the commit). */
  consumedQuotes: Array<{ quoteId: string; paymentId: string }>;
  /** New payments: accepted (submitted) and failed before the rail. */
  payments: NewPayment[];
  /** The first transition of each new payment (null → submitted or null → failed). */
  transitions: Array<{
    paymentId: string;
    to: 'pending' | 'submitted' | 'failed';
    reason: string;
    metadata: Record<string, unknown>;
  }>;
  entries: Array<{ id: string; kind: string; paymentId: string; postings: readonly Posting[] }>;
  /** Increments of the commit day's counters (locked). */
  usage: { day: string; rows: Array<{ counter: CounterKey; amount: bigint; count: bigint }> };
  /** Net change of each locked account. */
  accountDeltas: Array<{ account: AccountRef; delta: bigint }>;
  events: Array<{ paymentId: string; type: string; payload: Record<string, unknown> }>;
  /** Keys whose answer is final now (a failure before the rail, a stored refusal). */
  keyAnswers: Array<{ key: string; status: number; body: string }>;
  /** Keys of refusals that are not stored: the key is free again. */
  keyReleases: string[];
}

// Existing rows are reached by their primary key, joined to the commit's arrays (or by INSERT … ON
// CONFLICT for multi-column keys). The quotes were locked, in id order, by this transaction's lock
// statement: updating them here waits for nothing.
function quotesConsumed(p: Params, s: WriteScope, quotes: PayoutCommitWrite['consumedQuotes']): string {
  const consumed = p.unnest({
    id: ['uuid', quotes.map((q) => q.quoteId)],
    payment_id: ['uuid', quotes.map((q) => q.paymentId)],
  });
  return `
  UPDATE quotes q SET consumed_at = ${s.now}, payment_id = v.payment_id
    FROM ${consumed}
   WHERE q.tenant_id = ${s.tenant} AND q.id = v.id AND q.mode = ${s.mode} AND q.consumed_at IS NULL
  RETURNING 1`;
}

function newPayments(p: Params, s: WriteScope, payments: readonly NewPayment[]): string {
  const col = <T>(pick: (payment: NewPayment) => T) => payments.map(pick);
  const rows = p.unnest({
    id: ['uuid', col((x) => x.id)],
    customer_id: ['uuid', col((x) => x.customer_id)],
    beneficiary_id: ['uuid', col((x) => x.beneficiary_id)],
    quote_id: ['uuid', col((x) => x.quote_id)],
    status: ['text', col((x) => x.status)],
    status_reason: ['text', col((x) => x.status_reason)],
    message: ['text', col((x) => x.message)],
    source_asset: ['text', col((x) => x.source_asset)],
    source_amount: ['bigint', col((x) => x.source_amount.toString())],
    payout_asset: ['text', col((x) => x.payout_asset)],
    payout_amount: ['bigint', col((x) => x.payout_amount.toString())],
    fee_amount: ['bigint', col((x) => x.fee_amount.toString())],
    method: ['text', col((x) => x.method)],
    method_requested: ['text', col((x) => x.method_requested)],
    method_changed: ['boolean', col((x) => x.method_changed)],
    beneficiary: ['jsonb', col((x) => JSON.stringify(x.beneficiary))],
    sender: ['jsonb', col((x) => (x.sender ? JSON.stringify(x.sender) : null))],
    rail: ['text', col((x) => x.rail)],
    next_check_at: ['timestamptz', col((x) => x.next_check_at)],
    usage_day: ['date', col((x) => x.usage_day)],
    funding_account: ['text', col((x) => x.funding_account)],
    metadata: ['jsonb', col((x) => JSON.stringify(x.metadata))],
    created_by_key_id: ['uuid', col((x) => x.created_by_key_id)],
    batch_id: ['uuid', col((x) => x.batch_id)],
  });
  return `
  INSERT INTO payments (tenant_id, mode, id, customer_id, beneficiary_id, quote_id, status, status_reason, message,
    source_asset, source_amount, payout_asset, payout_amount, fee_amount, method, method_requested, method_changed,
    beneficiary, sender, rail, next_check_at, usage_day, funding_account, created_at, updated_at, metadata, created_by_key_id, batch_id)
  SELECT ${s.tenant}, ${s.mode}, v.id, v.customer_id, v.beneficiary_id, v.quote_id, v.status, v.status_reason, v.message,
         v.source_asset, v.source_amount, v.payout_asset, v.payout_amount, v.fee_amount, v.method, v.method_requested,
         v.method_changed, v.beneficiary, v.sender, v.rail, v.next_check_at, v.usage_day, v.funding_account, ${s.now}, ${s.now}, v.metadata,
         v.created_by_key_id, v.batch_id
    FROM ${rows}
  RETURNING 1`;
}

/** The payments' first transitions, ledger entries and their postings, and outbox events: new rows only. */
function newHistory(p: Params, s: WriteScope, commit: PayoutCommitWrite): string {
  return `history AS (
  INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
  SELECT ${s.tenant}, v.id, NULL, v.to_status, v.reason, 'api', v.metadata, ${s.now}
    FROM ${p.unnest({
      id: ['uuid', commit.transitions.map((t) => t.paymentId)],
      to_status: ['text', commit.transitions.map((t) => t.to)],
      reason: ['text', commit.transitions.map((t) => t.reason)],
      metadata: ['jsonb', commit.transitions.map((t) => JSON.stringify(t.metadata))],
    })}
), ${ledgerEntriesSql(p, s, commit.entries)}, ${outboxEventsSql(p, s, commit.events)}`;
}

/** The commit day's counters and the locked accounts, changed by what the commit consumed and posted. */
function balances(p: Params, s: WriteScope, commit: PayoutCommitWrite): string {
  const usage = commit.usage.rows;
  return `usage AS (
  INSERT INTO limit_usage AS u (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
  SELECT ${s.tenant}, ${s.mode}, v.kind, v.subject_id, v.method, ${p.add(commit.usage.day)}::date, v.amount, v.count
    FROM ${p.unnest({
      kind: ['text', usage.map((u) => u.counter.kind)],
      subject_id: ['uuid', usage.map((u) => u.counter.subjectId)],
      method: ['text', usage.map((u) => u.counter.method)],
      amount: ['bigint', usage.map((u) => u.amount.toString())],
      count: ['bigint', usage.map((u) => u.count.toString())],
    })}
  ON CONFLICT (tenant_id, mode, subject_kind, subject_id, method, business_date)
  DO UPDATE SET amount = u.amount + EXCLUDED.amount, count = u.count + EXCLUDED.count
  RETURNING (xmax <> 0) AS existed
), ${accountBalancesSql(p, s, commit.accountDeltas, IN_FLIGHT_SLOT.payout)}`;
}

/** Keys whose answer is final now, and keys of refusals not stored (free again). */
function keyOutcomes(p: Params, s: WriteScope, commit: PayoutCommitWrite): string {
  return `answer AS (
  -- Each key by its primary key; the commit's lock statement locked them all (step 1).
  UPDATE idempotency_keys k
     SET status = 'completed', owner = NULL, locked_until = NULL, response_status = v.status, response_body = v.body
    FROM ${p.unnest({
      key: ['text', commit.keyAnswers.map((a) => a.key)],
      status: ['integer', commit.keyAnswers.map((a) => a.status)],
      body: ['text', commit.keyAnswers.map((a) => a.body)],
    })}
   WHERE k.tenant_id = ${s.tenant} AND k.mode = ${s.mode} AND k.key = v.key AND k.status = 'in_progress'
  RETURNING 1
), released AS (
  DELETE FROM idempotency_keys k
   WHERE k.tenant_id = ${s.tenant} AND k.mode = ${s.mode} AND k.key = ANY(${p.add(commit.keyReleases)}::text[]) AND k.status = 'in_progress'
  RETURNING 1
)`;
}

/**
 * Every locked row it meant to change was changed, checked here: the statement may go out with the
 * COMMIT, so a failed check must abort the transaction itself.
 */
function checked(p: Params, commit: PayoutCommitWrite): string {
  const expected = {
    quotes: p.add(commit.consumedQuotes.length),
    payments: p.add(commit.payments.length),
    counters: p.add(commit.usage.rows.length),
    accounts: p.add(commit.accountDeltas.length),
    answers: p.add(commit.keyAnswers.length),
    released: p.add(commit.keyReleases.length),
  };
  const e = expected;
  return `
SELECT bds_invariant(
         s.quotes = ${e.quotes} AND s.payments = ${e.payments} AND s.counters = ${e.counters} AND s.accounts = ${e.accounts} AND s.answers = ${e.answers} AND s.released = ${e.released},
         format('the payout commit wrote %s quote consumptions, %s payments, %s limit counters, %s account balances, %s key answers, %s key releases; expected %s, %s, %s, %s, %s, %s',
                s.quotes, s.payments, s.counters, s.accounts, s.answers, s.released, ${e.quotes}, ${e.payments}, ${e.counters}, ${e.accounts}, ${e.answers}, ${e.released})) AS checked
  FROM (SELECT (SELECT count(*) FROM quote)::int AS quotes, (SELECT count(*) FROM pay)::int AS payments,
               (SELECT count(*) FROM usage WHERE existed)::int AS counters, (SELECT count(*) FROM account)::int AS accounts,
               (SELECT count(*) FROM answer)::int AS answers, (SELECT count(*) FROM released)::int AS released) s`;
}

/**
 * Writes a decided commit; asserts (in SQL) every locked row it meant to change was changed. `last`:
 * nothing follows it in the transaction, so it goes out with the COMMIT (TransactionHandle).
 */
export async function writePayoutCommit(
  tx: TransactionHandle,
  partition: Partition,
  commit: PayoutCommitWrite,
  options: { last: boolean },
): Promise<void> {
  const p = new Params();
  const s: WriteScope = { tenant: p.add(partition.tenantId), mode: p.add(partition.mode), now: p.add(commit.now) };
  const sql = `WITH quote AS (${quotesConsumed(p, s, commit.consumedQuotes)}
), pay AS (${newPayments(p, s, commit.payments)}
), ${newHistory(p, s, commit)},
${balances(p, s, commit)},
${keyOutcomes(p, s, commit)}${checked(p, commit)}`;
  const run = options.last ? tx.queryAndCommit.bind(tx) : tx.query.bind(tx);
  await run<{ checked: boolean }>(sql, p.values);
}

/** What a commit registers for the payouts it accepted or failed (never for a refused one). */
export interface PayoutRegistrations {
  /** Inline beneficiaries as sent, each with the id the commit expects it to have; distinct identities, sorted. */
  beneficiaries: Array<{ expectedId: string; details: BeneficiaryDetails; failureReason: string | null }>;
  /** History of failures before the rail of registered beneficiaries not in `beneficiaries`; distinct ids, sorted. */
  failures: Array<{ beneficiaryId: string; reason: string }>;
  /** Senders stored for customers (a payout with customerId and a sender block); distinct ids, sorted. */
  customers: Array<{ customerId: string; sender: Sender }>;
}

/**
 * Steps 6 and 7 of the lock order's statement for the registrations (see writePayoutRegistrations).
 * Metadata not sent is NULL and keeps what is stored. EXCLUDED.metadata cannot say so (the column is
 * NOT NULL, checked before the conflict), so the update finds the item by the id it proposed.
 */
function registrationsSql(p: Params, partition: Partition, r: PayoutRegistrations): string {
  const b = r.beneficiaries;
  const tenant = p.add(partition.tenantId);
  const mode = p.add(partition.mode);
  const locked = p.add([...new Set([...b.map((x) => x.expectedId), ...r.failures.map((f) => f.beneficiaryId)])].sort());
  const ids = p.add(b.map((x) => x.expectedId));
  const metadata = p.add(b.map((x) => (x.details.metadata === undefined ? null : JSON.stringify(x.details.metadata))));
  return `WITH beneficiary_lock AS (
  -- Every existing beneficiary this statement changes, locked first and sorted by id (as an outcome
  -- commit locks them): the registrations' upsert and the failure history then wait for nothing more.
  -- ORDER BY … FOR UPDATE locks the rows in that order.
  SELECT b.id FROM beneficiaries b
   WHERE b.tenant_id = ${tenant} AND b.id = ANY(${locked}::uuid[]) AND b.mode = ${mode}
   ORDER BY b.id
     FOR UPDATE
), registered AS (
  INSERT INTO beneficiaries AS b (tenant_id, mode, id, full_name, national_id, bank_code, account_number, phone, asset, country, instrument, last_failure_reason, metadata)
  SELECT ${tenant}, ${mode}, v.id, v.full_name, v.national_id, v.bank_code, v.account_number, v.phone, v.asset, v.country, v.instrument, v.failure,
         coalesce(v.metadata, '{}'::jsonb)
    FROM ${p.unnest(
      {
        id: ['uuid', ids],
        full_name: ['text', b.map((x) => x.details.fullName)],
        national_id: ['text', b.map((x) => x.details.nationalId)],
        bank_code: ['text', b.map((x) => x.details.bankCode)],
        account_number: ['text', b.map((x) => x.details.accountNumber)],
        phone: ['text', b.map((x) => x.details.phone)],
        asset: ['text', b.map((x) => x.details.asset)],
        country: ['text', b.map((x) => x.details.country)],
        instrument: ['text', b.map((x) => x.details.instrument)],
        failure: ['text', b.map((x) => x.failureReason)],
        metadata: ['jsonb', metadata],
      },
      { ordinality: true },
    )}
   WHERE (SELECT count(*) FROM beneficiary_lock) >= 0
   ORDER BY v.n
  ON CONFLICT (tenant_id, mode, national_id, bank_code, instrument) DO UPDATE
     SET full_name = EXCLUDED.full_name, account_number = EXCLUDED.account_number, phone = EXCLUDED.phone,
         last_failure_reason = coalesce(EXCLUDED.last_failure_reason, b.last_failure_reason),
         metadata = coalesce((${metadata}::jsonb[])[array_position(${ids}::uuid[], EXCLUDED.id)], b.metadata)
  RETURNING b.id, b.national_id, b.bank_code, b.instrument
), failure AS (
  -- Only rows beneficiary_lock holds (read from it, so it has run first).
  UPDATE beneficiaries b SET last_failure_reason = v.reason
    FROM beneficiary_lock l
    JOIN ${p.unnest({ id: ['uuid', r.failures.map((f) => f.beneficiaryId)], reason: ['text', r.failures.map((f) => f.reason)] })} ON v.id = l.id
   WHERE b.tenant_id = ${tenant} AND b.id = l.id AND b.mode = ${mode}
), customer AS (
  INSERT INTO customers AS c (tenant_id, mode, id, sender)
  SELECT ${tenant}, ${mode}, v.id, v.sender
    FROM ${p.unnest({ id: ['uuid', r.customers.map((c) => c.customerId)], sender: ['jsonb', r.customers.map((c) => JSON.stringify(c.sender))] }, { ordinality: true })}
   ORDER BY v.n
  ON CONFLICT (tenant_id, mode, id) DO UPDATE SET sender = EXCLUDED.sender, updated_at = now()
)
SELECT id::text, national_id, bank_code, instrument FROM registered`;
}

/**
 * Steps 6 and 7 of the lock order (beneficiaries sorted by id, then customers): inline beneficiaries registered as sent (details updated, and metadata
 * when sent), failure history, customers' stored senders. Returns the id each inline beneficiary has,
 * by identity key: a caller that expected another one read a stale identity and must run the commit
 * again.
 */
export async function writePayoutRegistrations(
  tx: Queryable,
  partition: Partition,
  r: PayoutRegistrations,
): Promise<Map<string, string>> {
  if (r.beneficiaries.length === 0 && r.failures.length === 0 && r.customers.length === 0) return new Map();
  const p = new Params();
  const sql = registrationsSql(p, partition, r);
  const { rows } = await tx.query<{
    id: string;
    national_id: string;
    bank_code: string;
    instrument: BeneficiaryDetails['instrument'];
  }>(sql, p.values);
  return new Map(
    rows.map((row) => [
      identityKeyOf({ nationalId: row.national_id, bankCode: row.bank_code, instrument: row.instrument }),
      row.id,
    ]),
  );
}
