// The SQL that writes ledger entries with their postings, the locked accounts' new balances, and
// outbox events — written once, for the payout commit, the outcome commit and every single entry. Each returns data-modifying CTEs of new
// rows only (nobody else can know them yet, so they are no lock anyone waits for), to be joined into
// the writer's one statement after it took its locks.
import type { AccountRef } from '../../domain/commit/keys.ts';
import type { Posting } from '../../domain/ledger.ts';
import { BALANCE_RETURNING, balanceHistorySql, balanceStampSql } from '../balance-history.ts';
import { slotOf, type InFlightSlot } from './lock-rows.ts';
import type { Params } from '../repositories/sql-params.ts';

/** The placeholders of the writer's statement these parts share: its tenant, mode and time. */
export interface WriteScope {
  tenant: string;
  mode: string;
  /** SQL: when the rows were written. */
  now: string;
}

/** One ledger entry to write: its transaction's id and kind, the payment it belongs to (if any), its postings. */
export interface EntryRow {
  id: string;
  kind: string;
  paymentId: string | null;
  postings: readonly Posting[];
}

/** One outbox event to write, about a payment. */
export interface EventRow {
  paymentId: string;
  type: string;
  payload: unknown;
}

/** `entry AS (…), posting AS (…)`: the entries' transactions and their postings. */
export function ledgerEntriesSql(p: Params, s: WriteScope, entries: readonly EntryRow[]): string {
  const postings = entries.flatMap((e) => e.postings.map((posting) => ({ transactionId: e.id, ...posting })));
  return `entry AS (
  INSERT INTO ledger_transactions (tenant_id, mode, id, kind, payment_id, created_at)
  SELECT ${s.tenant}, ${s.mode}, v.id, v.kind, v.payment_id, ${s.now}
    FROM ${p.unnest({ id: ['uuid', entries.map((e) => e.id)], kind: ['text', entries.map((e) => e.kind)], payment_id: ['uuid', entries.map((e) => e.paymentId)] })}
), posting AS (
  INSERT INTO ledger_postings (tenant_id, transaction_id, mode, asset, account_kind, amount)
  SELECT ${s.tenant}, v.transaction_id, ${s.mode}, v.asset, v.account_kind, v.amount
    FROM ${p.unnest({
      transaction_id: ['uuid', postings.map((x) => x.transactionId)],
      asset: ['text', postings.map((x) => x.asset)],
      account_kind: ['text', postings.map((x) => x.account)],
      amount: ['bigint', postings.map((x) => x.amount.toString())],
    })}
)`;
}

/**
 * `outbox AS (…)`: the events, inserted in the order given (their ids follow it, as dispatchers read
 * them), each due at once. Returns each event's id. The stored payload is the text sent, byte for byte
 * (payload_text), with its jsonb beside it for queries.
 */
export function outboxEventsSql(p: Params, s: WriteScope, events: readonly EventRow[]): string {
  return `outbox AS (
  INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, next_attempt_at, created_at)
  SELECT ${s.tenant}, ${s.mode}, v.event_type, 'payment', v.payment_id, v.payload::jsonb, v.payload, ${s.now}, ${s.now}
    FROM ${p.unnest(
      {
        payment_id: ['uuid', events.map((e) => e.paymentId)],
        event_type: ['text', events.map((e) => e.type)],
        payload: ['text', events.map((e) => JSON.stringify(e.payload))],
      },
      { ordinality: true },
    )}
   ORDER BY v.n
  RETURNING id
)`;
}

/**
 * `account AS (…)` and the balance history: each locked account (its writer's row of the in-flight
 * account, `inFlightSlot`) changed by its delta. Returns each account's new balance.
 */
export function accountBalancesSql(
  p: Params,
  s: WriteScope,
  deltas: ReadonlyArray<{ account: AccountRef; delta: bigint }>,
  inFlightSlot: InFlightSlot,
): string {
  return `account AS (
  -- A tenant has at most a few dozen accounts, so this join is bounded whatever the plan. (An INSERT
  -- … ON CONFLICT would check the CHECK constraints against the bare delta and refuse a debit.)
  UPDATE ledger_accounts a SET balance = a.balance + v.delta, ${balanceStampSql(s.now)}
    FROM ${p.unnest({
      asset: ['text', deltas.map((d) => d.account.asset)],
      kind: ['text', deltas.map((d) => d.account.kind)],
      delta: ['bigint', deltas.map((d) => d.delta.toString())],
    })}
   WHERE a.tenant_id = ${s.tenant} AND a.mode = ${s.mode} AND a.asset = v.asset AND a.kind = v.kind AND a.slot = ${slotOf('a.kind', inFlightSlot)}
  RETURNING ${BALANCE_RETURNING}
), ${balanceHistorySql(s.tenant, s.mode)}`;
}
