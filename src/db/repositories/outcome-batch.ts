// The write of an outcome batch: every payment's new state, its transitions, ledger entries, limit
// give-backs, outcome events and beneficiary history, in ONE statement after the batch took its locks
// (db/lock-order.ts). The beneficiaries (the last step of the lock order) are locked here, sorted.
import type { Posting } from '../../domain/ledger.ts';
import type { PaymentAfter } from '../../domain/outcome-decision.ts';
import type { AccountRef, CounterKey } from '../../domain/payout-decision.ts';
import type { PaymentStatus, TransitionActor } from '../../domain/payment-state.ts';
import type { TransactionHandle } from '../database.ts';
import { assertSorted, IN_FLIGHT_SLOT, slotOf } from '../lock-order.ts';
import type { Partition, Mode } from '../../domain/partition.ts';


export interface OutcomeBatchWrite {
  now: Date;
  /** The row of each payment as the batch leaves it; `touched` when its state changed (not only its next check). */
  payments: Array<{ id: string; after: PaymentAfter; touched: boolean }>;
  /** In the order they happened (a settlement before the reversal of the same payment). */
  transitions: Array<{ paymentId: string; from: PaymentStatus; to: PaymentStatus; reason: string | null; actor: TransitionActor; metadata: Record<string, unknown> }>;
  entries: Array<{ id: string; kind: string; paymentId: string; postings: readonly Posting[] }>;
  accountDeltas: Array<{ account: AccountRef; delta: bigint }>;
  giveBacks: Array<{ day: string; counter: CounterKey; amount: bigint; count: bigint }>;
  events: Array<{ paymentId: string; type: string; payload: Record<string, unknown> }>;
  /** Distinct ids. */
  beneficiaries: Array<{ id: string; successes: number; lastSuccessAt: Date | null; lastFailureReason: string | null }>;
}

// Existing rows are reached by primary key (one probe per row, or ON CONFLICT), never by an UPDATE …
// FROM unnest(…) join or \`id = ANY(…)\`, which a generic plan made while the table was nearly empty
// may run over every row of the tenant. The payments were locked by this transaction's lock statement,
// so the row version each probe finds is the one updated, found by its ctid alone (see the quotes'
// update in payout-batch.ts).
const SQL = `WITH v AS (
  SELECT * FROM unnest($3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::boolean[], $10::bigint[],
                       $11::timestamptz[], $12::timestamptz[], $13::boolean[]) WITH ORDINALITY
    AS v(id, status, status_reason, message, bank_reference, settled_at, compensated, fee_amount, next_check_at, parked_at, touched, n)
), pay AS (
  UPDATE payments p SET
      status = v.status, status_reason = v.status_reason, message = v.message, bank_reference = v.bank_reference,
      settled_at = v.settled_at, compensated = v.compensated, fee_amount = v.fee_amount, next_check_at = v.next_check_at,
      resolution_parked_at = v.parked_at, updated_at = CASE WHEN v.touched THEN $2 ELSE p.updated_at END
    FROM v
   WHERE p.ctid = ANY(ARRAY(
           SELECT l.ctid FROM v
             CROSS JOIN LATERAL (SELECT p.ctid FROM payments p WHERE p.tenant_id = $1 AND p.id = v.id OFFSET 0) l))
     AND v.n = array_position($3::uuid[], p.id)
  RETURNING 1
), history AS (
  INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
  SELECT $1, v.payment_id, v.from_status, v.to_status, v.reason, v.actor, v.metadata, $2
    FROM unnest($14::uuid[], $15::text[], $16::text[], $17::text[], $18::text[], $19::jsonb[]) WITH ORDINALITY
      AS v(payment_id, from_status, to_status, reason, actor, metadata, n)
   ORDER BY v.n
  -- The rail's acceptance is recorded once per payment, whichever path hears it first.
  ON CONFLICT (tenant_id, payment_id) WHERE reason = 'rail_accepted_async' DO NOTHING
), entry AS (
  INSERT INTO ledger_transactions (tenant_id, mode, id, kind, payment_id, created_at)
  SELECT $1, $20, v.id, v.kind, v.payment_id, $2 FROM unnest($21::uuid[], $22::text[], $23::uuid[]) AS v(id, kind, payment_id)
), posting AS (
  INSERT INTO ledger_postings (tenant_id, transaction_id, mode, asset, account_kind, amount)
  SELECT $1, v.transaction_id, $20, v.asset, v.account_kind, v.amount
    FROM unnest($24::uuid[], $25::text[], $26::text[], $27::bigint[]) AS v(transaction_id, asset, account_kind, amount)
), account AS (
  -- A tenant has at most a few dozen accounts, so this join is bounded whatever the plan. (An INSERT
  -- … ON CONFLICT would check the CHECK constraints against the bare delta and refuse a debit.)
  UPDATE ledger_accounts a SET balance = a.balance + v.delta
    FROM unnest($28::text[], $29::text[], $30::bigint[]) AS v(asset, kind, delta)
   WHERE a.tenant_id = $1 AND a.mode = $20 AND a.asset = v.asset AND a.kind = v.kind AND a.slot = ${slotOf('a.kind', IN_FLIGHT_SLOT.outcome)}
  RETURNING 1
), usage AS (
  -- The proposed row is never inserted (the counter was locked, so it exists): the conflict path
  -- subtracts. amount/count of the proposed row are the give-back, positive, so its CHECKs pass.
  INSERT INTO limit_usage AS u (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
  SELECT $1, $20, v.kind, v.subject_id, v.method, v.day, v.amount, v.count
    FROM unnest($31::date[], $32::text[], $33::uuid[], $34::text[], $35::bigint[], $36::bigint[]) AS v(day, kind, subject_id, method, amount, count)
  ON CONFLICT (tenant_id, mode, subject_kind, subject_id, method, business_date)
  DO UPDATE SET amount = u.amount - EXCLUDED.amount, count = u.count - EXCLUDED.count
  RETURNING (xmax <> 0) AS existed
), outbox AS (
  INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, next_attempt_at, created_at)
  SELECT $1, $20, v.event_type, 'payment', v.payment_id, v.payload::jsonb, v.payload, $2, $2
    FROM unnest($37::uuid[], $38::text[], $39::text[]) WITH ORDINALITY AS v(payment_id, event_type, payload, n)
   ORDER BY v.n
  RETURNING 1
), beneficiary_lock AS (
  -- One primary-key probe per beneficiary, in the order of the array, which is sorted by id.
  SELECT b.row_version FROM unnest($40::uuid[]) AS v(id)
    CROSS JOIN LATERAL (
      SELECT b.ctid AS row_version FROM beneficiaries b WHERE b.tenant_id = $1 AND b.id = v.id AND b.mode = $20
      OFFSET 0
         FOR UPDATE) b
), beneficiary AS (
  UPDATE beneficiaries b
     SET payout_count = b.payout_count + ($41::integer[])[array_position($40::uuid[], b.id)],
         last_success_at = coalesce(($42::timestamptz[])[array_position($40::uuid[], b.id)], b.last_success_at),
         last_failure_reason = coalesce(($43::text[])[array_position($40::uuid[], b.id)], b.last_failure_reason)
   WHERE b.ctid = ANY(ARRAY(SELECT row_version FROM beneficiary_lock))
)
-- Every locked row it meant to change was changed, checked here: this statement may go out with the
-- COMMIT, so a failed check must abort the transaction itself.
SELECT bds_invariant(
         s.payments = $44 AND s.accounts = $45 AND s.counters = $46 AND s.events = $47,
         format('the outcome batch wrote %s payments, %s account balances, %s limit counters, %s outcome events; expected %s, %s, %s, %s',
                s.payments, s.accounts, s.counters, s.events, $44, $45, $46, $47)) AS checked
  FROM (SELECT (SELECT count(*) FROM pay)::int AS payments, (SELECT count(*) FROM account)::int AS accounts,
               (SELECT count(*) FROM usage WHERE existed)::int AS counters, (SELECT count(*) FROM outbox)::int AS events) s`;

/**
 * Writes a decided outcome batch; asserts (in SQL) every locked row it meant to change was changed.
 * `last`: nothing follows it in the transaction, so it goes out with the COMMIT (TransactionHandle).
 */
export async function writeOutcomeBatch(tx: TransactionHandle, partition: Partition, batch: OutcomeBatchWrite, options: { last: boolean }): Promise<void> {
  const pays = batch.payments;
  // Locked one probe each in the array's order (beneficiary_lock): the caller sorted them by id.
  const beneficiaries = batch.beneficiaries;
  assertSorted(beneficiaries, (b) => b.id, 'beneficiaries');
  const postings = batch.entries.flatMap((e) => e.postings.map((p) => ({ transactionId: e.id, ...p })));
  const run = options.last ? tx.queryAndCommit.bind(tx) : tx.query.bind(tx);
  await run<{ checked: boolean }>(SQL, [
    partition.tenantId,
    batch.now,
    pays.map((p) => p.id),
    pays.map((p) => p.after.status),
    pays.map((p) => p.after.status_reason),
    pays.map((p) => p.after.message),
    pays.map((p) => p.after.bank_reference),
    pays.map((p) => p.after.settled_at),
    pays.map((p) => p.after.compensated),
    pays.map((p) => p.after.fee_amount.toString()),
    pays.map((p) => p.after.next_check_at),
    pays.map((p) => p.after.resolution_parked_at),
    pays.map((p) => p.touched),
    batch.transitions.map((t) => t.paymentId),
    batch.transitions.map((t) => t.from),
    batch.transitions.map((t) => t.to),
    batch.transitions.map((t) => t.reason),
    batch.transitions.map((t) => t.actor),
    batch.transitions.map((t) => JSON.stringify(t.metadata)),
    partition.mode,
    batch.entries.map((e) => e.id),
    batch.entries.map((e) => e.kind),
    batch.entries.map((e) => e.paymentId),
    postings.map((p) => p.transactionId),
    postings.map((p) => p.asset),
    postings.map((p) => p.account),
    postings.map((p) => p.amount.toString()),
    batch.accountDeltas.map((d) => d.account.asset),
    batch.accountDeltas.map((d) => d.account.kind),
    batch.accountDeltas.map((d) => d.delta.toString()),
    batch.giveBacks.map((g) => g.day),
    batch.giveBacks.map((g) => g.counter.kind),
    batch.giveBacks.map((g) => g.counter.subjectId),
    batch.giveBacks.map((g) => g.counter.method),
    batch.giveBacks.map((g) => g.amount.toString()),
    batch.giveBacks.map((g) => g.count.toString()),
    batch.events.map((e) => e.paymentId),
    batch.events.map((e) => e.type),
    batch.events.map((e) => JSON.stringify(e.payload)),
    beneficiaries.map((b) => b.id),
    beneficiaries.map((b) => b.successes),
    beneficiaries.map((b) => b.lastSuccessAt),
    beneficiaries.map((b) => b.lastFailureReason),
    pays.length,
    batch.accountDeltas.length,
    batch.giveBacks.length,
    batch.events.length,
  ]);
}
