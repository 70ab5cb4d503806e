// The write of a payout batch: everything its decision says, in ONE statement, after the batch took
// its locks (db/lock-order.ts). Data-modifying CTEs all run whatever the final SELECT reads; foreign
// keys are checked at the end of the statement and the balanced-entry trigger at commit, so the
// guarantees are those of separate statements at one round trip. Fixed SQL text over unnest() arrays
// keeps one prepared statement whatever the batch's size.
import type { BeneficiaryDetails } from '../../domain/beneficiary.ts';
import type { Sender } from '../../domain/sender.ts';
import type { AccountRef, CounterKey } from '../../domain/payout-decision.ts';
import type { Posting } from '../../domain/ledger.ts';
import type { Queryable, TransactionHandle } from '../database.ts';
import { IN_FLIGHT_SLOT, slotOf } from '../lock-order.ts';
import { identityKeyOf } from './beneficiaries.ts';
import type { NewPayment } from './payments.ts';
import type { Partition, Mode } from '../../domain/partition.ts';


export interface PayoutBatchWrite {
  now: Date;
  /** Quotes the batch consumed, each by the payment that used it (rows locked by the batch). */
  consumedQuotes: Array<{ quoteId: string; paymentId: string }>;
  /** New payments: accepted (submitted) and failed before the rail. */
  payments: NewPayment[];
  /** The first transition of each new payment (null → submitted or null → failed). */
  transitions: Array<{ paymentId: string; to: 'submitted' | 'failed'; reason: string; metadata: Record<string, unknown> }>;
  entries: Array<{ id: string; kind: string; paymentId: string; postings: readonly Posting[] }>;
  /** Increments of the batch day's counters (locked). */
  usage: { day: string; rows: Array<{ counter: CounterKey; amount: bigint; count: bigint }> };
  /** Net change of each locked account. */
  accountDeltas: Array<{ account: AccountRef; delta: bigint }>;
  events: Array<{ paymentId: string; type: string; payload: Record<string, unknown> }>;
  /** Keys whose answer is final now (a failure before the rail, a stored refusal). */
  keyAnswers: Array<{ key: string; status: number; body: string }>;
  /** Keys of refusals that are not stored: the key is free again. */
  keyReleases: string[];
}

// Rows that already exist are reached by primary key, one probe per row (LATERAL, OFFSET 0), or by
// INSERT … ON CONFLICT for multi-column keys. An UPDATE … FROM unnest(…) join, or `id = ANY(…)`, may
// instead walk every row of the tenant in a generic plan made while the table was nearly empty, at a
// cost that grows with the table. The quotes were locked by this transaction's lock statement, so the
// row version each probe finds is the one updated, found by its ctid: nothing but the tid scan fits,
// whatever the statistics (a key column beside it lets a plan walk the tenant's rows again).
const SQL = `WITH quote AS (
  UPDATE quotes q SET consumed_at = $3, payment_id = ($5::uuid[])[array_position($4::uuid[], q.id)]
   WHERE q.ctid = ANY(ARRAY(
           SELECT p.ctid FROM unnest($4::uuid[]) AS v(id)
             CROSS JOIN LATERAL (SELECT q.ctid FROM quotes q WHERE q.tenant_id = $1 AND q.id = v.id OFFSET 0) p))
     AND q.mode = $2 AND q.consumed_at IS NULL
  RETURNING 1
), pay AS (
  INSERT INTO payments (tenant_id, mode, id, customer_id, beneficiary_id, quote_id, status, status_reason, message,
    source_asset, source_amount, payout_asset, payout_amount, fee_amount, method, method_requested, method_changed,
    beneficiary, sender, rail, next_check_at, usage_day, funding_account, created_at, updated_at, metadata, created_by_key_id)
  SELECT $1, $2, v.id, v.customer_id, v.beneficiary_id, v.quote_id, v.status, v.status_reason, v.message,
         v.source_asset, v.source_amount, v.payout_asset, v.payout_amount, v.fee_amount, v.method, v.method_requested,
         v.method_changed, v.beneficiary, v.sender, v.rail, v.next_check_at, v.usage_day, v.funding_account, $3, $3, v.metadata,
         v.created_by_key_id
    FROM unnest($6::uuid[], $7::uuid[], $8::uuid[], $9::uuid[], $10::text[], $11::text[], $12::text[], $13::text[],
                $14::bigint[], $15::text[], $16::bigint[], $17::bigint[], $18::text[], $19::text[], $20::boolean[],
                $21::jsonb[], $22::jsonb[], $23::text[], $24::timestamptz[], $25::date[], $26::text[], $54::jsonb[], $61::uuid[])
      AS v(id, customer_id, beneficiary_id, quote_id, status, status_reason, message, source_asset, source_amount,
           payout_asset, payout_amount, fee_amount, method, method_requested, method_changed, beneficiary, sender,
           rail, next_check_at, usage_day, funding_account, metadata, created_by_key_id)
  RETURNING 1
), history AS (
  INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
  SELECT $1, v.id, NULL, v.to_status, v.reason, 'api', v.metadata, $3
    FROM unnest($27::uuid[], $28::text[], $29::text[], $30::jsonb[]) AS v(id, to_status, reason, metadata)
), entry AS (
  INSERT INTO ledger_transactions (tenant_id, mode, id, kind, payment_id, created_at)
  SELECT $1, $2, v.id, v.kind, v.payment_id, $3 FROM unnest($31::uuid[], $32::text[], $33::uuid[]) AS v(id, kind, payment_id)
), posting AS (
  INSERT INTO ledger_postings (tenant_id, transaction_id, mode, asset, account_kind, amount)
  SELECT $1, v.transaction_id, $2, v.asset, v.account_kind, v.amount
    FROM unnest($34::uuid[], $35::text[], $36::text[], $37::bigint[]) AS v(transaction_id, asset, account_kind, amount)
), usage AS (
  INSERT INTO limit_usage AS u (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
  SELECT $1, $2, v.kind, v.subject_id, v.method, $43::date, v.amount, v.count
    FROM unnest($38::text[], $39::uuid[], $40::text[], $41::bigint[], $42::bigint[]) AS v(kind, subject_id, method, amount, count)
  ON CONFLICT (tenant_id, mode, subject_kind, subject_id, method, business_date)
  DO UPDATE SET amount = u.amount + EXCLUDED.amount, count = u.count + EXCLUDED.count
  RETURNING (xmax <> 0) AS existed
), account AS (
  -- A tenant has at most a few dozen accounts, so this join is bounded whatever the plan. (An INSERT
  -- … ON CONFLICT would check the CHECK constraints against the bare delta and refuse a debit.)
  UPDATE ledger_accounts a SET balance = a.balance + v.delta
    FROM unnest($44::text[], $45::text[], $46::bigint[]) AS v(asset, kind, delta)
   WHERE a.tenant_id = $1 AND a.mode = $2 AND a.asset = v.asset AND a.kind = v.kind AND a.slot = ${slotOf('a.kind', IN_FLIGHT_SLOT.payout)}
  RETURNING 1
), outbox AS (
  INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, next_attempt_at, created_at)
  SELECT $1, $2, v.event_type, 'payment', v.payment_id, v.payload::jsonb, v.payload, $3, $3
    FROM unnest($47::uuid[], $48::text[], $49::text[]) AS v(payment_id, event_type, payload)
), answer_row AS (
  -- One probe by the whole primary key per key, then the update by ctid. OFFSET 0 keeps the probe a
  -- subquery run per key: flattened into a join, it was planned as a walk over the tenant's keys
  -- (9.7 ms at 45,000 keys), and so was a plain join or \`key = ANY(…)\` (the key became a filter).
  SELECT k.ctid AS row_id, v.status, v.body
    FROM unnest($50::text[], $51::integer[], $52::text[]) AS v(key, status, body)
    CROSS JOIN LATERAL (SELECT ctid FROM idempotency_keys WHERE tenant_id = $1 AND mode = $2 AND key = v.key OFFSET 0) k
), answer AS (
  UPDATE idempotency_keys k
     SET status = 'completed', owner = NULL, locked_until = NULL, response_status = a.status, response_body = a.body
    FROM answer_row a
   WHERE k.ctid = a.row_id AND k.status = 'in_progress'
  RETURNING 1
), released AS (
  DELETE FROM idempotency_keys k
   USING (SELECT r.ctid AS row_id FROM unnest($53::text[]) AS v(key)
            CROSS JOIN LATERAL (SELECT ctid FROM idempotency_keys WHERE tenant_id = $1 AND mode = $2 AND key = v.key OFFSET 0) r) d
   WHERE k.ctid = d.row_id AND k.status = 'in_progress'
  RETURNING 1
)
-- Every locked row it meant to change was changed, checked here: this statement may go out with the
-- COMMIT, so a failed check must abort the transaction itself.
SELECT bds_invariant(
         s.quotes = $55 AND s.payments = $56 AND s.counters = $57 AND s.accounts = $58 AND s.answers = $59 AND s.released = $60,
         format('the payout batch wrote %s quote consumptions, %s payments, %s limit counters, %s account balances, %s key answers, %s key releases; expected %s, %s, %s, %s, %s, %s',
                s.quotes, s.payments, s.counters, s.accounts, s.answers, s.released, $55, $56, $57, $58, $59, $60)) AS checked
  FROM (SELECT (SELECT count(*) FROM quote)::int AS quotes, (SELECT count(*) FROM pay)::int AS payments,
               (SELECT count(*) FROM usage WHERE existed)::int AS counters, (SELECT count(*) FROM account)::int AS accounts,
               (SELECT count(*) FROM answer)::int AS answers, (SELECT count(*) FROM released)::int AS released) s`;

/**
 * Writes a decided batch; asserts (in SQL) every locked row it meant to change was changed. `last`:
 * nothing follows it in the transaction, so it goes out with the COMMIT (TransactionHandle).
 */
export async function writePayoutBatch(tx: TransactionHandle, partition: Partition, batch: PayoutBatchWrite, options: { last: boolean }): Promise<void> {
  const { payments } = batch;
  const col = <T>(pick: (p: NewPayment) => T) => payments.map(pick);
  const postings = batch.entries.flatMap((e) => e.postings.map((p) => ({ transactionId: e.id, ...p })));
  const run = options.last ? tx.queryAndCommit.bind(tx) : tx.query.bind(tx);
  await run<{ checked: boolean }>(SQL, [
    partition.tenantId,
    partition.mode,
    batch.now,
    batch.consumedQuotes.map((q) => q.quoteId),
    batch.consumedQuotes.map((q) => q.paymentId),
    col((p) => p.id),
    col((p) => p.customer_id),
    col((p) => p.beneficiary_id),
    col((p) => p.quote_id),
    col((p) => p.status),
    col((p) => p.status_reason),
    col((p) => p.message),
    col((p) => p.source_asset),
    col((p) => p.source_amount.toString()),
    col((p) => p.payout_asset),
    col((p) => p.payout_amount.toString()),
    col((p) => p.fee_amount.toString()),
    col((p) => p.method),
    col((p) => p.method_requested),
    col((p) => p.method_changed),
    col((p) => JSON.stringify(p.beneficiary)),
    col((p) => (p.sender ? JSON.stringify(p.sender) : null)),
    col((p) => p.rail),
    col((p) => p.next_check_at),
    col((p) => p.usage_day),
    col((p) => p.funding_account),
    batch.transitions.map((t) => t.paymentId),
    batch.transitions.map((t) => t.to),
    batch.transitions.map((t) => t.reason),
    batch.transitions.map((t) => JSON.stringify(t.metadata)),
    batch.entries.map((e) => e.id),
    batch.entries.map((e) => e.kind),
    batch.entries.map((e) => e.paymentId),
    postings.map((p) => p.transactionId),
    postings.map((p) => p.asset),
    postings.map((p) => p.account),
    postings.map((p) => p.amount.toString()),
    batch.usage.rows.map((u) => u.counter.kind),
    batch.usage.rows.map((u) => u.counter.subjectId),
    batch.usage.rows.map((u) => u.counter.method),
    batch.usage.rows.map((u) => u.amount.toString()),
    batch.usage.rows.map((u) => u.count.toString()),
    batch.usage.day,
    batch.accountDeltas.map((d) => d.account.asset),
    batch.accountDeltas.map((d) => d.account.kind),
    batch.accountDeltas.map((d) => d.delta.toString()),
    batch.events.map((e) => e.paymentId),
    batch.events.map((e) => e.type),
    batch.events.map((e) => JSON.stringify(e.payload)),
    batch.keyAnswers.map((a) => a.key),
    batch.keyAnswers.map((a) => a.status),
    batch.keyAnswers.map((a) => a.body),
    batch.keyReleases,
    col((p) => JSON.stringify(p.metadata)),
    batch.consumedQuotes.length,
    payments.length,
    batch.usage.rows.length,
    batch.accountDeltas.length,
    batch.keyAnswers.length,
    batch.keyReleases.length,
    col((p) => p.created_by_key_id),
  ]);
}

/** What a batch registers for the payouts it accepted or failed (never for a refused one). */
export interface PayoutRegistrations {
  /** Inline beneficiaries as sent, each with the id the batch expects it to have; distinct identities, sorted. */
  beneficiaries: Array<{ expectedId: string; details: BeneficiaryDetails; failureReason: string | null }>;
  /** History of failures before the rail of registered beneficiaries not in `beneficiaries`; distinct ids, sorted. */
  failures: Array<{ beneficiaryId: string; reason: string }>;
  /** Senders stored for customers (a payout with customerId and a sender block); distinct ids, sorted. */
  customers: Array<{ customerId: string; sender: Sender }>;
}

// Metadata not sent is NULL in $17 and keeps what is stored. EXCLUDED.metadata cannot say so (the
// column is NOT NULL, checked before the conflict), so the update finds the item by the id it proposed.
const REGISTRATIONS_SQL = `WITH beneficiary_lock AS (
  -- Every existing beneficiary this statement changes, locked first and sorted by id (as an outcome
  -- batch locks them): the registrations' upsert and the failure history then wait for nothing more.
  -- One primary-key probe per beneficiary, in the order of the array, which is sorted by id.
  SELECT b.id, b.row_version FROM unnest($18::uuid[]) AS v(id)
    CROSS JOIN LATERAL (
      SELECT b.id, b.ctid AS row_version FROM beneficiaries b WHERE b.tenant_id = $1 AND b.id = v.id AND b.mode = $2
      OFFSET 0
         FOR UPDATE) b
), registered AS (
  INSERT INTO beneficiaries AS b (tenant_id, mode, id, full_name, national_id, bank_code, account_number, phone, asset, country, instrument, last_failure_reason, metadata)
  SELECT $1, $2, v.id, v.full_name, v.national_id, v.bank_code, v.account_number, v.phone, v.asset, v.country, v.instrument, v.failure,
         coalesce(v.metadata, '{}'::jsonb)
    FROM unnest($3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $17::jsonb[])
      WITH ORDINALITY AS v(id, full_name, national_id, bank_code, account_number, phone, asset, country, instrument, failure, metadata, n)
   WHERE (SELECT count(*) FROM beneficiary_lock) >= 0
   ORDER BY v.n
  ON CONFLICT (tenant_id, mode, national_id, bank_code, instrument) DO UPDATE
     SET full_name = EXCLUDED.full_name, account_number = EXCLUDED.account_number, phone = EXCLUDED.phone,
         last_failure_reason = coalesce(EXCLUDED.last_failure_reason, b.last_failure_reason),
         metadata = coalesce(($17::jsonb[])[array_position($3::uuid[], EXCLUDED.id)], b.metadata)
  RETURNING b.id, b.national_id, b.bank_code, b.instrument
), failure AS (
  UPDATE beneficiaries b SET last_failure_reason = ($14::text[])[array_position($13::uuid[], b.id)]
   WHERE b.ctid = ANY(ARRAY(SELECT row_version FROM beneficiary_lock WHERE id = ANY($13::uuid[])))
), customer AS (
  INSERT INTO customers AS c (tenant_id, mode, id, sender)
  SELECT $1, $2, v.id, v.sender FROM unnest($15::uuid[], $16::jsonb[]) WITH ORDINALITY AS v(id, sender, n) ORDER BY v.n
  ON CONFLICT (tenant_id, mode, id) DO UPDATE SET sender = EXCLUDED.sender, updated_at = now()
)
SELECT id::text, national_id, bank_code, instrument FROM registered`;

/**
 * Steps 6 and 7 of the lock order (beneficiaries sorted by id, then customers): inline beneficiaries registered as sent (details updated, and metadata
 * when sent), failure history, customers' stored senders. Returns the id each inline beneficiary has,
 * by identity key: a caller that expected another one read a stale identity and must run the batch
 * again.
 */
export async function writePayoutRegistrations(tx: Queryable, partition: Partition, r: PayoutRegistrations): Promise<Map<string, string>> {
  if (r.beneficiaries.length === 0 && r.failures.length === 0 && r.customers.length === 0) return new Map();
  const b = r.beneficiaries;
  const { rows } = await tx.query<{ id: string; national_id: string; bank_code: string; instrument: BeneficiaryDetails['instrument'] }>(REGISTRATIONS_SQL, [
    partition.tenantId,
    partition.mode,
    b.map((x) => x.expectedId),
    b.map((x) => x.details.fullName),
    b.map((x) => x.details.nationalId),
    b.map((x) => x.details.bankCode),
    b.map((x) => x.details.accountNumber),
    b.map((x) => x.details.phone),
    b.map((x) => x.details.asset),
    b.map((x) => x.details.country),
    b.map((x) => x.details.instrument),
    b.map((x) => x.failureReason),
    r.failures.map((f) => f.beneficiaryId),
    r.failures.map((f) => f.reason),
    r.customers.map((c) => c.customerId),
    r.customers.map((c) => JSON.stringify(c.sender)),
    b.map((x) => (x.details.metadata === undefined ? null : JSON.stringify(x.details.metadata))),
    [...new Set([...b.map((x) => x.expectedId), ...r.failures.map((f) => f.beneficiaryId)])].sort(),
  ]);
  return new Map(rows.map((row) => [identityKeyOf({ nationalId: row.national_id, bankCode: row.bank_code, instrument: row.instrument }), row.id]));
}
