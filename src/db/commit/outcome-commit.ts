// The write of an outcome commit: every payment's new state, its transitions, ledger entries, limit
// give-backs, outcome events and beneficiary history, in ONE statement after the commit took its locks
// (db/commit/README.md). The beneficiaries (step 6 of the lock order) are locked here, sorted.
import type { Posting } from '../../domain/ledger.ts';
import type { PaymentAfter } from '../../domain/commit/outcome-decision.ts';
import type { AccountRef, CounterKey } from '../../domain/commit/keys.ts';
import type { PaymentStatus, TransitionActor } from '../../domain/payment-state.ts';
import type { TransactionHandle } from '../database.ts';
import { assertSorted, IN_FLIGHT_SLOT } from './lock-rows.ts';
import { accountBalancesSql, ledgerEntriesSql, outboxEventsSql, type WriteScope } from './ledger-sql.ts';
import { Params } from '../repositories/sql-params.ts';
import type { Partition } from '../../domain/partition.ts';

export interface OutcomeCommitWrite {
  now: Date;
  /** The row of each payment as the commit leaves it; `touched` when its state changed (not only its next check). */
  payments: Array<{ id: string; after: PaymentAfter; touched: boolean }>;
  /** In the order they happened (a settlement before the reversal of the same payment). */
  transitions: Array<{
    paymentId: string;
    from: PaymentStatus;
    to: PaymentStatus;
    reason: string | null;
    actor: TransitionActor;
    metadata: Record<string, unknown>;
  }>;
  entries: Array<{ id: string; kind: string; paymentId: string; postings: readonly Posting[] }>;
  accountDeltas: Array<{ account: AccountRef; delta: bigint }>;
  giveBacks: Array<{ day: string; counter: CounterKey; amount: bigint; count: bigint }>;
  events: Array<{ paymentId: string; type: string; payload: Record<string, unknown> }>;
  /** Distinct ids. */
  beneficiaries: Array<{ id: string; successes: number; lastSuccessAt: Date | null; lastFailureReason: string | null }>;
}

// Existing rows are reached by their primary key, joined to the commit's arrays (or by INSERT … ON
// CONFLICT). The payments were locked, in id order, by this transaction's lock statement: updating
// them here waits for nothing.
function paymentsUpdated(p: Params, s: WriteScope, pays: OutcomeCommitWrite['payments']): string {
  const after = p.unnest({
    id: ['uuid', pays.map((x) => x.id)],
    status: ['text', pays.map((x) => x.after.status)],
    status_reason: ['text', pays.map((x) => x.after.status_reason)],
    message: ['text', pays.map((x) => x.after.message)],
    bank_reference: ['text', pays.map((x) => x.after.bank_reference)],
    settled_at: ['timestamptz', pays.map((x) => x.after.settled_at)],
    compensated: ['boolean', pays.map((x) => x.after.compensated)],
    fee_amount: ['bigint', pays.map((x) => x.after.fee_amount.toString())],
    next_check_at: ['timestamptz', pays.map((x) => x.after.next_check_at)],
    parked_at: ['timestamptz', pays.map((x) => x.after.resolution_parked_at)],
    touched: ['boolean', pays.map((x) => x.touched)],
  });
  return `pay AS (
  UPDATE payments p SET
      status = v.status, status_reason = v.status_reason, message = v.message, bank_reference = v.bank_reference,
      settled_at = v.settled_at, compensated = v.compensated, fee_amount = v.fee_amount, next_check_at = v.next_check_at,
      resolution_parked_at = v.parked_at, updated_at = CASE WHEN v.touched THEN ${s.now} ELSE p.updated_at END
    FROM ${after}
   WHERE p.tenant_id = ${s.tenant} AND p.id = v.id
  RETURNING 1
)`;
}

/** The transitions, ledger entries and their postings: new rows only. */
function newHistory(p: Params, s: WriteScope, commit: OutcomeCommitWrite): string {
  const t = commit.transitions;
  return `history AS (
  INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
  SELECT ${s.tenant}, v.payment_id, v.from_status, v.to_status, v.reason, v.actor, v.metadata, ${s.now}
    FROM ${p.unnest(
      {
        payment_id: ['uuid', t.map((x) => x.paymentId)],
        from_status: ['text', t.map((x) => x.from)],
        to_status: ['text', t.map((x) => x.to)],
        reason: ['text', t.map((x) => x.reason)],
        actor: ['text', t.map((x) => x.actor)],
        metadata: ['jsonb', t.map((x) => JSON.stringify(x.metadata))],
      },
      { ordinality: true },
    )}
   ORDER BY v.n
  -- The rail's acceptance is recorded once per payment, whichever path hears it first.
  ON CONFLICT (tenant_id, payment_id) WHERE reason = 'rail_accepted_async' DO NOTHING
), ${ledgerEntriesSql(p, s, commit.entries)}`;
}

/** The locked accounts and counters changed, and the outcome events. */
function balancesAndEvents(p: Params, s: WriteScope, commit: OutcomeCommitWrite): string {
  const g = commit.giveBacks;
  return `${accountBalancesSql(p, s, commit.accountDeltas, IN_FLIGHT_SLOT.outcome)}, usage AS (
  -- The proposed row is never inserted (the counter was locked, so it exists): the conflict path
  -- subtracts. amount/count of the proposed row are the give-back, positive, so its CHECKs pass.
  INSERT INTO limit_usage AS u (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
  SELECT ${s.tenant}, ${s.mode}, v.kind, v.subject_id, v.method, v.day, v.amount, v.count
    FROM ${p.unnest({
      day: ['date', g.map((x) => x.day)],
      kind: ['text', g.map((x) => x.counter.kind)],
      subject_id: ['uuid', g.map((x) => x.counter.subjectId)],
      method: ['text', g.map((x) => x.counter.method)],
      amount: ['bigint', g.map((x) => x.amount.toString())],
      count: ['bigint', g.map((x) => x.count.toString())],
    })}
  ON CONFLICT (tenant_id, mode, subject_kind, subject_id, method, business_date)
  DO UPDATE SET amount = u.amount - EXCLUDED.amount, count = u.count - EXCLUDED.count
  RETURNING (xmax <> 0) AS existed
), ${outboxEventsSql(p, s, commit.events)}`;
}

/** The beneficiaries' history (step 6 of the lock order): locked here, in id order. */
function beneficiariesUpdated(p: Params, s: WriteScope, beneficiaries: OutcomeCommitWrite['beneficiaries']): string {
  const history = p.unnest({
    id: ['uuid', beneficiaries.map((b) => b.id)],
    successes: ['integer', beneficiaries.map((b) => b.successes)],
    last_success_at: ['timestamptz', beneficiaries.map((b) => b.lastSuccessAt)],
    last_failure_reason: ['text', beneficiaries.map((b) => b.lastFailureReason)],
  });
  return `beneficiary_lock AS (
  -- ORDER BY … FOR UPDATE locks the rows in id order.
  SELECT b.id FROM beneficiaries b
   WHERE b.tenant_id = ${s.tenant} AND b.id = ANY(${p.add(beneficiaries.map((b) => b.id))}::uuid[]) AND b.mode = ${s.mode}
   ORDER BY b.id
     FOR UPDATE
), beneficiary AS (
  -- Only rows beneficiary_lock holds (read from it, so it has run first).
  UPDATE beneficiaries b
     SET payout_count = b.payout_count + v.successes,
         last_success_at = coalesce(v.last_success_at, b.last_success_at),
         last_failure_reason = coalesce(v.last_failure_reason, b.last_failure_reason)
    FROM beneficiary_lock l
    JOIN ${history} ON v.id = l.id
   WHERE b.tenant_id = ${s.tenant} AND b.id = l.id AND b.mode = ${s.mode}
)`;
}

/**
 * Every locked row it meant to change was changed, checked here: the statement may go out with the
 * COMMIT, so a failed check must abort the transaction itself.
 */
function checked(p: Params, commit: OutcomeCommitWrite): string {
  const e = {
    payments: p.add(commit.payments.length),
    accounts: p.add(commit.accountDeltas.length),
    counters: p.add(commit.giveBacks.length),
    events: p.add(commit.events.length),
  };
  return `
SELECT bds_invariant(
         s.payments = ${e.payments} AND s.accounts = ${e.accounts} AND s.counters = ${e.counters} AND s.events = ${e.events},
         format('the outcome commit wrote %s payments, %s account balances, %s limit counters, %s outcome events; expected %s, %s, %s, %s',
                s.payments, s.accounts, s.counters, s.events, ${e.payments}, ${e.accounts}, ${e.counters}, ${e.events})) AS checked
  FROM (SELECT (SELECT count(*) FROM pay)::int AS payments, (SELECT count(*) FROM account)::int AS accounts,
               (SELECT count(*) FROM usage WHERE existed)::int AS counters, (SELECT count(*) FROM outbox)::int AS events) s`;
}

/**
 * Writes a decided outcome commit; asserts (in SQL) every locked row it meant to change was changed.
 * `last`: nothing follows it in the transaction, so it goes out with the COMMIT (TransactionHandle).
 */
export async function writeOutcomeCommit(
  tx: TransactionHandle,
  partition: Partition,
  commit: OutcomeCommitWrite,
  options: { last: boolean },
): Promise<void> {
  // Distinct, sorted by id: the order beneficiary_lock locks them in.
  assertSorted(commit.beneficiaries, (b) => b.id, 'beneficiaries');
  const p = new Params();
  const s: WriteScope = { tenant: p.add(partition.tenantId), mode: p.add(partition.mode), now: p.add(commit.now) };
  const sql = `WITH ${paymentsUpdated(p, s, commit.payments)},
${newHistory(p, s, commit)},
${balancesAndEvents(p, s, commit)},
${beneficiariesUpdated(p, s, commit.beneficiaries)}${checked(p, commit)}`;
  const run = options.last ? tx.queryAndCommit.bind(tx) : tx.query.bind(tx);
  await run<{ checked: boolean }>(sql, p.values);
}
