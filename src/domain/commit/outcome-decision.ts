// The decision of an outcome commit, as a pure function: given the payments a commit locked, the
// balances and limit counters it locked, and what the rail said about each payment, decide each
// payment's transitions, ledger entries, give-backs, outcome events and next check. Whoever applies an
// outcome — the payout path after the rail call, the reaper, a rail notification — goes through this,
// so a payment resolves the same way whoever hears about it first. No I/O.

import {
  assertBalanced,
  failureEntry,
  payoutEntry,
  reversalEntry,
  settlementEntry,
  type FundingAccount,
  type LedgerEntry,
} from '../ledger.ts';
import { contradictionOf, evidenceOfPayment, type Contradiction } from '../anomalies.ts';
import { settledAtOf, type Doubt } from '../rail-answer-check.ts';
import type { Metadata } from '../metadata.ts';
import { eventPayload, failureMessage, STATUS_MESSAGES, type OutcomeEventType } from '../payment-messages.ts';
import { assertTransition, type PaymentStatus, type TransitionActor } from '../payment-state.ts';
import { accountKeyOf, counterKeyOf, sortedValues, trackedCounters, type AccountRef, type CounterKey } from './keys.ts';
import type { Instrument } from '../instrument.ts';
import { assert } from '../assert.ts';

/**
 * What the rail said about a payment (at submission, when asked, or by notification). `amountMinor`:
 * the amount the rail says moved, when it says one (compared with ours). A return's bank reference may
 * be missing from a notification: the payment's own is used.
 */
export type RailReport =
  | { status: 'processing'; retryAfterMs?: number; amountMinor?: bigint }
  /** `doubt`: the answer failed the checks against what we sent (rail-answer-check.ts): its anomaly. */
  | { status: 'unconfirmed'; retryAfterMs?: number; doubt?: Doubt }
  | { status: 'timeout' }
  | { status: 'error'; message: string }
  | { status: 'settled'; bankReference: string; settledAt: Date; amountMinor?: bigint }
  | { status: 'failed'; reason: string; amountMinor?: bigint }
  | { status: 'reversed'; bankReference?: string; reason: string; amountMinor?: bigint };

/** The fields of a locked payment the decision reads (and, for those of PaymentAfter, writes). */
export interface OutcomePayment extends PaymentAfter {
  tenant_id: string;
  mode: 'test' | 'live';
  id: string;
  funding_account: FundingAccount | null;
  source_asset: string;
  source_amount: bigint;
  payout_asset: string;
  payout_amount: bigint;
  method: Instrument | null;
  method_requested: Instrument;
  customer_id: string | null;
  beneficiary_id: string | null;
  usage_day: string | null;
  check_attempts: number;
  /** When its commit began, before it was sent: a rail's settlement time before it (less the skew) is the rail's mistake. */
  created_at: Date;
  /** Carried into the outcome events' payloads. */
  metadata: Metadata;
}

export interface OutcomeJob {
  paymentId: string;
  report: RailReport;
  actor: TransitionActor;
  /** Reason recorded on a settlement: rail_settled (payout path), resolved_by_reaper. */
  settledReason: string;
  /**
   * When to ask the rail again if the payment stays unresolved: after a fixed delay (the payout path),
   * or on the per-payment backoff driven by `check_attempts` (the reaper), which ends in a bound.
   */
  recheck: { afterMs: number } | 'backoff';
  /**
   * Applied only to a payment in one of these states, else nothing at all. A rail's reports are
   * applied to whatever state the payment reached (a return of a payment not yet seen settled settles
   * it first); a sandbox simulation asks for exactly one move and must not get another.
   */
  onlyFrom?: readonly PaymentStatus[];
  /**
   * The report came as a rail notification (an event the rail pushed), not as its answer to our send
   * or question: its id and the notification as received, for the anomaly it may open. A notified
   * return of a payment we never saw settle is a contradiction; the rail's answer that a transfer
   * settled and was returned is its whole history, applied as such.
   */
  notification?: { id: string; raw: unknown; occurredAt: Date };
}

export interface ResolutionSchedule {
  /** REAPER_INTERVAL_MS: the first wait of the backoff. */
  intervalMs: number;
  /** The longest wait between two questions to the rail. */
  backoffMaxMs: number;
  /** After this many questions the reaper stops asking (the payment stays unresolved, flagged). */
  attemptsMax: number;
  /** The longest a rail's own "ask me again in" hint is honoured. */
  hintMaxMs: number;
}

/**
 * Wait before the next question to the rail, after `attempts` questions (≥ 1).
 * @internal Exported for its tests, not used elsewhere.
 */
export function backoffDelayMs(schedule: ResolutionSchedule, attempts: number, hintMs = 0): number {
  const exponent = Math.min(Math.max(attempts - 1, 0), 30);
  const backoff = Math.min(schedule.intervalMs * 2 ** exponent, schedule.backoffMaxMs);
  return Math.max(backoff, Math.min(Math.max(hintMs, 0), schedule.hintMaxMs));
}

export interface OutcomeCommitState {
  now: Date;
  schedule: ResolutionSchedule;
  payments: ReadonlyMap<string, OutcomePayment>;
  /** Locked balances by account key. */
  balances: ReadonlyMap<string, bigint>;
  /** Locked counters by `${day}|${counterKey}` (a missing one is zero). */
  counters: ReadonlyMap<string, { amount: bigint; count: bigint }>;
}

interface TransitionRecord {
  from: PaymentStatus;
  to: PaymentStatus;
  reason: string | null;
  actor: TransitionActor;
}

/** The payment row after the decision: every column the commit writes. */
export interface PaymentAfter {
  status: PaymentStatus;
  status_reason: string | null;
  message: string | null;
  bank_reference: string | null;
  settled_at: Date | null;
  compensated: boolean;
  fee_amount: bigint;
  next_check_at: Date | null;
  resolution_parked_at: Date | null;
}

interface OutcomeDecision {
  /** The row as it stands after this job (unchanged fields included); undefined: nothing written. */
  after?: PaymentAfter;
  transitions: TransitionRecord[];
  entries: LedgerEntry[];
  events: Array<{ type: OutcomeEventType; payload: Record<string, unknown> }>;
  /** Give the usage back (a failure or reversal of a payout that consumed limits). */
  giveBack: boolean;
  /** Beneficiary history: a success at this time, or this failure reason. */
  beneficiary?: { successAt?: Date; failureReason?: string };
  /** The reaper asked for the last time: logged once and counted. */
  parkedNow: boolean;
  /**
   * The report contradicts our record (nothing of the payment changes), or failed the answer checks
   * (not believed; or, for a settlement time outside the window, believed at our own time): this
   * anomaly is recorded.
   */
  anomaly?: Contradiction;
}

export interface OutcomeCommitDecision {
  decisions: OutcomeDecision[];
  accountDeltas: Map<string, { account: AccountRef; delta: bigint }>;
  /** Decrements by `${day}|${counterKey}`. */
  giveBacks: Map<string, { day: string; counter: CounterKey; amount: bigint; count: bigint }>;
  /** Counters that held less than what was given back (a bug upstream): clamped at zero, reported. */
  counterShortfalls: string[];
}

const UNRESOLVED: readonly PaymentStatus[] = ['submitted', 'unknown'];

/** The accounts and counters a job may touch, from its payment's immutable fields: locked before deciding. */
export function outcomeLockPlan(jobs: ReadonlyArray<{ job: OutcomeJob; payment: OutcomePayment }>): {
  accounts: AccountRef[];
  counters: Array<{ day: string; counter: CounterKey }>;
} {
  const accounts = new Map<string, AccountRef>();
  const counters = new Map<string, { day: string; counter: CounterKey }>();
  const add = (asset: string, kind: AccountRef['kind']) => accounts.set(accountKeyOf({ asset, kind }), { asset, kind });
  for (const { job, payment } of jobs) {
    const status = job.report.status;
    if (status !== 'settled' && status !== 'failed' && status !== 'reversed') continue;
    add(payment.payout_asset, 'in_flight');
    add(payment.payout_asset, 'treasury');
    if (status === 'settled' || !payment.funding_account) continue;
    if (status === 'failed') {
      // The accounts of the payout entry's mirror, named from immutable fields only (a failed
      // payment's fee reads 0, so the entry cannot be rebuilt from a row that already failed).
      add(payment.source_asset, payment.funding_account);
      add(payment.source_asset, 'prefunding');
      add(payment.payout_asset, 'revenue');
      if (payment.source_asset !== payment.payout_asset) {
        add(payment.source_asset, 'fx');
        add(payment.payout_asset, 'fx');
      }
    } else {
      add(payment.payout_asset, payment.funding_account);
      add(payment.payout_asset, 'prefunding');
    }
    for (const c of giveBackCounters(payment)) counters.set(`${c.day}|${counterKeyOf(c.counter)}`, c);
  }
  return { accounts: sortedValues(accounts), counters: sortedValues(counters) };
}

function giveBackCounters(payment: OutcomePayment): Array<{ day: string; counter: CounterKey }> {
  if (!payment.usage_day || !payment.method || !payment.beneficiary_id) return [];
  const day = payment.usage_day;
  return trackedCounters(payment.tenant_id, {
    customerId: payment.customer_id,
    beneficiaryId: payment.beneficiary_id,
    method: payment.method,
  }).map((counter) => ({ day, counter }));
}

/** The payout entry the payment committed, rebuilt from its immutable fields. */
function payoutOf(payment: OutcomePayment): LedgerEntry {
  assert(payment.funding_account, `payment ${payment.id} was never charged`);
  return payoutEntry({
    funding: payment.funding_account,
    sourceAsset: payment.source_asset,
    sourceAmount: payment.source_amount,
    deliverAmount: payment.payout_amount,
    feeAmount: payment.fee_amount,
  });
}

export function decideOutcomeCommit(state: OutcomeCommitState, jobs: readonly OutcomeJob[]): OutcomeCommitDecision {
  const balances = new Map(state.balances);
  const counters = new Map(state.counters);
  const giveBacks = new Map<string, { day: string; counter: CounterKey; amount: bigint; count: bigint }>();
  const counterShortfalls: string[] = [];
  // Jobs for one payment are applied in order against the row as the previous one left it.
  const rows = new Map<string, OutcomePayment>();

  const decisions = jobs.map((job) => {
    const locked = state.payments.get(job.paymentId);
    assert(locked, `payment ${job.paymentId} was not locked`);
    const row = rows.get(job.paymentId) ?? locked;
    const decision = decideOne(state, row, job, balances);
    if (decision.after) rows.set(job.paymentId, { ...row, ...decision.after });
    for (const entry of decision.entries) {
      assertBalanced(entry);
      for (const p of entry.postings) {
        const k = accountKeyOf({ asset: p.asset, kind: p.account });
        balances.set(k, (balances.get(k) ?? 0n) + p.amount);
      }
    }
    if (decision.giveBack) {
      for (const c of giveBackCounters(row)) {
        const k = `${c.day}|${counterKeyOf(c.counter)}`;
        const held = counters.get(k) ?? { amount: 0n, count: 0n };
        let amount = row.payout_amount;
        let count = 1n;
        if (held.amount < amount || held.count < count) {
          counterShortfalls.push(
            `limit counter ${k} holds ${held.amount}/${held.count}, less than the ${amount}/1 given back for payment ${row.id}`,
          );
          amount = held.amount < amount ? held.amount : amount;
          count = held.count < count ? held.count : count;
        }
        counters.set(k, { amount: held.amount - amount, count: held.count - count });
        const total = giveBacks.get(k) ?? { ...c, amount: 0n, count: 0n };
        giveBacks.set(k, { ...total, amount: total.amount + amount, count: total.count + count });
      }
    }
    return decision;
  });

  const accountDeltas = new Map<string, { account: AccountRef; delta: bigint }>();
  for (const [k, balance] of balances) {
    const delta = balance - (state.balances.get(k) ?? 0n);
    if (delta === 0n) continue;
    const [asset, kind] = k.split('/') as [string, AccountRef['kind']];
    assert(kind !== 'prefunding' || balance <= 0n, `an outcome would overdraw ${asset} prefunding`);
    assert(kind !== 'credit_receivable' || balance >= 0n, `an outcome would take ${asset} credit drawn below zero`);
    accountDeltas.set(k, { account: { asset, kind }, delta });
  }
  return { decisions, accountDeltas, giveBacks, counterShortfalls };
}

/** The status reason of a payment the rail answered without an outcome: it is `unknown`. */
export function unknownReasonOf(report: { status: 'unconfirmed' | 'timeout' | 'error' }): string {
  return report.status === 'unconfirmed'
    ? 'rail_unconfirmed'
    : report.status === 'timeout'
      ? 'rail_timeout'
      : 'rail_error';
}

const NOTHING: OutcomeDecision = { transitions: [], entries: [], events: [], giveBack: false, parkedNow: false };

type ReportOf<S extends RailReport['status']> = Extract<RailReport, { status: S }>;

/** One job against the row as the commit's previous jobs left it: what the rail's report does to it. */
function decideOne(
  state: OutcomeCommitState,
  row: OutcomePayment,
  job: OutcomeJob,
  balances: ReadonlyMap<string, bigint>,
): OutcomeDecision {
  if (job.onlyFrom && !job.onlyFrom.includes(row.status)) return NOTHING;
  const contradiction = contradictionDecision(state, row, job);
  if (contradiction) return contradiction;
  const report = job.report;
  switch (report.status) {
    case 'processing':
    case 'unconfirmed':
    case 'timeout':
    case 'error':
      return decideNoOutcome(state, row, job, report);
    case 'settled':
      return decideSettled(state.now, row, job, report);
    case 'failed':
      return decideFailed(row, job, report, balances);
    case 'reversed':
      return decideReversed(state.now, row, job, report, balances);
  }
}

/** A transition of this job's payment, checked against the state machine. */
function transitionOf(
  job: OutcomeJob,
  from: PaymentStatus,
  to: PaymentStatus,
  reason: string | null,
): TransitionRecord {
  assertTransition(from, to);
  return { from, to, reason, actor: job.actor };
}

function eventOf(type: OutcomeEventType, after: OutcomePayment, reason?: string): OutcomeDecision['events'][number] {
  return { type, payload: eventPayload(after, type, reason) };
}

/**
 * An outcome that contradicts our record, or undefined when the report agrees with it. Our records
 * never change on a contradiction. An answer to the reaper's question still moves the payment's next
 * question along its backoff (and parks it at the end), as any answer does.
 */
function contradictionDecision(
  state: OutcomeCommitState,
  row: OutcomePayment,
  job: OutcomeJob,
): OutcomeDecision | undefined {
  const report = job.report;
  if (report.status !== 'settled' && report.status !== 'failed' && report.status !== 'reversed') return undefined;
  const anomaly = contradictionOf(row, report, job.notification !== undefined);
  if (!anomaly) return undefined;
  if (!UNRESOLVED.includes(row.status) || job.notification) return { ...NOTHING, anomaly };
  const schedule = nextCheck(state, row, job, undefined);
  return { ...NOTHING, after: { ...row, ...schedule.after }, parkedNow: schedule.parkedNow, anomaly };
}

/** The rail answered without an outcome: the payment waits for its next question, `unknown` unless still settling. */
function decideNoOutcome(
  state: OutcomeCommitState,
  row: OutcomePayment,
  job: OutcomeJob,
  report: ReportOf<'processing' | 'unconfirmed' | 'timeout' | 'error'>,
): OutcomeDecision {
  const anomaly = doubtOf(row, report);
  if (!UNRESOLVED.includes(row.status)) return anomaly ? { ...NOTHING, anomaly } : NOTHING;
  const decided = decideNoOutcomeOfUnresolved(state, row, job, report);
  return anomaly ? { ...decided, anomaly } : decided;
}

/**
 * The anomaly an answer without an outcome opens: the doubt the answer checks found, or an amount other
 * than the payment's in a "still processing" answer (a final answer's amount is a contradiction).
 */
function doubtOf(
  row: OutcomePayment,
  report: ReportOf<'processing' | 'unconfirmed' | 'timeout' | 'error'>,
): Contradiction | undefined {
  const doubt: Doubt | undefined =
    report.status === 'unconfirmed'
      ? report.doubt
      : report.status === 'processing' && report.amountMinor !== undefined && report.amountMinor !== row.payout_amount
        ? { kind: 'amount_mismatch', theirs: { status: 'processing', amount: report.amountMinor.toString() } }
        : undefined;
  return doubt && { kind: doubt.kind, ours: evidenceOfPayment(row), theirs: doubt.theirs };
}

function decideNoOutcomeOfUnresolved(
  state: OutcomeCommitState,
  row: OutcomePayment,
  job: OutcomeJob,
  report: ReportOf<'processing' | 'unconfirmed' | 'timeout' | 'error'>,
): OutcomeDecision {
  const schedule = nextCheck(state, row, job, 'retryAfterMs' in report ? report.retryAfterMs : undefined);
  if (report.status === 'processing' || row.status === 'unknown') {
    // Still settling: the rail's acceptance is recorded once (submitted → submitted), nothing moves.
    const acceptance =
      report.status === 'processing' && row.status === 'submitted'
        ? [transitionOf(job, 'submitted', 'submitted', 'rail_accepted_async')]
        : [];
    return { ...NOTHING, transitions: acceptance, after: { ...row, ...schedule.after }, parkedNow: schedule.parkedNow };
  }
  const reason = unknownReasonOf(report);
  return {
    ...NOTHING,
    transitions: [transitionOf(job, 'submitted', 'unknown', reason)],
    after: { ...row, ...schedule.after, status: 'unknown', status_reason: reason, message: STATUS_MESSAGES.unknown },
    parkedNow: schedule.parkedNow,
  };
}

/**
 * The money reached the beneficiary: the in-flight amount leaves the books, `payment.settled`. A
 * settlement time outside the sane window is replaced by ours, and opens an anomaly beside it.
 */
function decideSettled(now: Date, row: OutcomePayment, job: OutcomeJob, report: ReportOf<'settled'>): OutcomeDecision {
  if (!UNRESOLVED.includes(row.status)) return NOTHING;
  const { settledAt, doubt } = settledAtOf(report.settledAt, row.created_at, now);
  const after = settledRow(row, job.settledReason, report.bankReference, settledAt);
  return {
    ...NOTHING,
    ...(doubt && { anomaly: { kind: doubt.kind, ours: evidenceOfPayment(row), theirs: doubt.theirs } }),
    after,
    transitions: [transitionOf(job, row.status, 'settled', job.settledReason)],
    entries: [settlementEntry(row.payout_amount)],
    events: [eventOf('payment.settled', after)],
    beneficiary: { successAt: settledAt },
  };
}

/** The rail refused the transfer: the payout entry is mirrored (the fee too), the usage given back, `payment.failed`. */
function decideFailed(
  row: OutcomePayment,
  job: OutcomeJob,
  report: ReportOf<'failed'>,
  balances: ReadonlyMap<string, bigint>,
): OutcomeDecision {
  // A payment waiting for a rail (pending) was never sent: only the rail queue's bound fails it,
  // asking for exactly that move (onlyFrom: pending); no rail's report can.
  const waitedTooLong = row.status === 'pending' && job.onlyFrom?.includes('pending') === true;
  if (!UNRESOLVED.includes(row.status) && !waitedTooLong) return NOTHING;
  const funding = chargedAccount(row);
  const drawn = balances.get(accountKeyOf({ asset: row.source_asset, kind: 'credit_receivable' })) ?? 0n;
  const after: OutcomePayment = {
    ...row,
    status: 'failed',
    status_reason: report.reason,
    message: failureMessage(report.reason),
    compensated: true,
    fee_amount: 0n,
    next_check_at: null,
    resolution_parked_at: null,
  };
  return {
    ...NOTHING,
    after,
    transitions: [transitionOf(job, row.status, 'failed', report.reason)],
    entries: [failureEntry(payoutOf(row), funding, funding === 'credit_receivable' ? drawn : 0n)],
    events: [eventOf('payment.failed', after, report.reason)],
    giveBack: true,
    beneficiary: { failureReason: report.reason },
  };
}

/**
 * The bank returned a settled transfer: the delivered amount goes back to the funding account, the
 * usage is given back, `payment.reversed` (settled first, if we had not yet seen it settle).
 */
function decideReversed(
  now: Date,
  row: OutcomePayment,
  job: OutcomeJob,
  report: ReportOf<'reversed'>,
  balances: ReadonlyMap<string, bigint>,
): OutcomeDecision {
  if (row.status === 'reversed' || row.status === 'failed') return NOTHING;
  const settledFirst = UNRESOLVED.includes(row.status) ? settledBeforeReturn(now, row, job, report) : undefined;
  const settled = settledFirst?.after ?? row;
  const funding = chargedAccount(row);
  const drawnKey = accountKeyOf({ asset: row.payout_asset, kind: 'credit_receivable' });
  // The settlement above does not touch credit drawn: the locked figure still holds.
  const drawn = funding === 'credit_receivable' ? (balances.get(drawnKey) ?? 0n) : 0n;
  const after: OutcomePayment = {
    ...settled,
    status: 'reversed',
    status_reason: report.reason,
    message: STATUS_MESSAGES.reversed,
  };
  return {
    ...NOTHING,
    after,
    transitions: [...(settledFirst?.transitions ?? []), transitionOf(job, 'settled', 'reversed', report.reason)],
    entries: [...(settledFirst?.entries ?? []), reversalEntry(funding, row.payout_asset, row.payout_amount, drawn)],
    events: [...(settledFirst?.events ?? []), eventOf('payment.reversed', after, report.reason)],
    giveBack: true,
    beneficiary: settledFirst?.beneficiary,
  };
}

/**
 * The rail answers that a transfer we had not yet seen settle settled and was returned: it settled
 * first. (Notified of such a return, we record an anomaly instead: see contradictionDecision.)
 */
function settledBeforeReturn(now: Date, row: OutcomePayment, job: OutcomeJob, report: ReportOf<'reversed'>) {
  assert(
    report.bankReference !== undefined,
    `the rail reports a return of payment ${row.id} without its bank reference`,
  );
  const after = settledRow(row, job.settledReason, report.bankReference, now);
  return {
    after,
    transitions: [transitionOf(job, row.status, 'settled', job.settledReason)],
    entries: [settlementEntry(row.payout_amount)],
    events: [eventOf('payment.settled', after)],
    beneficiary: { successAt: now },
  };
}

function chargedAccount(row: OutcomePayment): FundingAccount {
  assert(row.funding_account, `payment ${row.id} reached the rail without a funding account`);
  return row.funding_account;
}

function settledRow(row: OutcomePayment, reason: string, bankReference: string, settledAt: Date): OutcomePayment {
  return {
    ...row,
    status: 'settled',
    status_reason: reason,
    message: STATUS_MESSAGES.settled,
    bank_reference: bankReference,
    settled_at: settledAt,
    next_check_at: null,
    resolution_parked_at: null,
  };
}

/** When an unresolved payment is asked about next, or whether the reaper stops asking. */
function nextCheck(
  state: OutcomeCommitState,
  row: OutcomePayment,
  job: OutcomeJob,
  hintMs: number | undefined,
): { after: Pick<PaymentAfter, 'next_check_at' | 'resolution_parked_at'>; parkedNow: boolean } {
  const { now, schedule } = state;
  if (job.recheck !== 'backoff') {
    return {
      after: {
        next_check_at: new Date(now.getTime() + Math.max(job.recheck.afterMs, hintMs ?? 0)),
        resolution_parked_at: null,
      },
      parkedNow: false,
    };
  }
  if (row.check_attempts >= schedule.attemptsMax)
    return { after: { next_check_at: null, resolution_parked_at: now }, parkedNow: true };
  return {
    after: {
      next_check_at: new Date(now.getTime() + backoffDelayMs(schedule, row.check_attempts, hintMs)),
      resolution_parked_at: null,
    },
    parkedNow: false,
  };
}
