import type { Database, Queryable } from '../db/database.ts';
import { recordBeneficiaryFailure, recordBeneficiarySuccess } from '../db/repositories/beneficiary-history.ts';
import { lockedBalance, payoutEntryOf, postEntry } from '../db/repositories/ledger.ts';
import { insertOutboxEvent } from '../db/repositories/outbox.ts';
import { insertTransition, recordRailAcceptances, scheduleCheck, transitionPayment, type PaymentRow, type TransitionChange } from '../db/repositories/payments.ts';
import type { Clock } from '../domain/clock.ts';
import { failureEntry, reversalEntry, settlementEntry, type FundingAccount } from '../domain/ledger.ts';
import type { PaymentStatus, TransitionActor } from '../domain/payment-state.ts';
import type { RailStatus } from '../rails/rail.ts';
import type { PayoutLimitPolicy } from './payout-limits.ts';
import { Coalescer } from '../db/coalescer.ts';

/** Every statement of an outcome finds its rows by key (see TransactionOptions.seqScans). */
const KEYED = { seqScans: false } as const;

/** What the payout answer and the statement say for each state. */
export const STATUS_MESSAGES = {
  submitted: 'Accepted by the rail and settling. Do not retry: the outcome arrives by webhook (payment.settled or payment.failed).',
  settled: 'Settled: the beneficiary has the funds.',
  unknown:
    'The rail did not confirm the send. Do not retry: we are resolving it with the rail using our own reference, and the outcome arrives by webhook.',
  reversed: 'The bank returned this settled disbursement; the delivered amount is back in your balance (the fee is kept).',
} as const;

export const FAILURE_MESSAGES: Record<string, string> = {
  beneficiary_missing_phone: 'The beneficiary has no phone number; both instruments need one. Register it and retry with a new quote.',
  beneficiary_missing_account: 'The beneficiary has no account number, which transferencia needs. Register one, or use pago_movil, with a new quote.',
  beneficiary_mismatch: 'The bank says the name or national id does not match the holder of the account or phone.',
  amount_below_rail_minimum: 'The amount is below the rail floor per operation (1 token at the current rate). Quote a larger amount.',
  sender_required: 'No sender: send a sender block, a customerId with a stored sender, or configure a default sender for the program.',
  instrument_unsupported: 'The requested instrument is not available for this beneficiary.',
  invalid_destination_account: 'The destination account is invalid or closed.',
  bank_unreachable: 'The beneficiary bank did not answer. Retry later with a new quote.',
  rail_rejected: 'The rail rejected the send.',
  rail_insufficient_balance: 'The rail had insufficient balance to send.',
  amount_above_rail_limit: 'The amount is above the rail limit.',
  no_route: 'No rail can deliver this payout.',
};

export function failureMessage(reason: string): string {
  return FAILURE_MESSAGES[reason] ?? 'The disbursement was not executed; nothing was charged.';
}

export type RailOutcome = RailStatus | { status: 'timeout' } | { status: 'error'; message: string };

export interface OutcomeContext {
  actor: TransitionActor;
  /** Reason recorded on the transition when the rail settles (rail_settled from the API, resolved_by_reaper). */
  settledReason: string;
  /** How long to wait before asking the rail again about a still-open payment. */
  recheckAfterMs: number;
}

/**
 * Applies what the rail said to a payment: one conditional transition, its ledger entry, its
 * outcome event and the beneficiary history, all in one transaction. If another process moved the
 * payment first, nothing happens (returns the row unchanged as read).
 */
export class PaymentOutcomes {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly limits: PayoutLimitPolicy,
  ) {
    this.acceptances = new Coalescer(
      // Relaxed durability: a crash can lose this history row only; the payment is still resolved by
      // the reaper, which asks the rail by our reference.
      (items) => recordRailAcceptances(this.db.relaxed, items, this.clock.now()),
      { batchMax: 256, inFlightMax: 2 },
    );
  }

  /** Concurrent "accepted, settling" answers of the rail are recorded together. */
  private readonly acceptances: Coalescer<Parameters<typeof recordRailAcceptances>[1][number], boolean>;

  async apply(payment: PaymentRow, outcome: RailOutcome, context: OutcomeContext): Promise<PaymentRow> {
    const wantedCheckAt = outcome.status === 'processing' ? this.clock.now().getTime() + Math.max(outcome.retryAfterMs ?? 0, context.recheckAfterMs) : 0;
    if (outcome.status === 'processing' && payment.status === 'submitted' && context.actor === 'api' && (payment.next_check_at?.getTime() ?? 0) >= wantedCheckAt) {
      // The usual answer of the payout path: one history row, no ledger entry, no event, and no change
      // to the payment row, whose first check (scheduled at commit) already falls late enough.
      await this.acceptances.submit({
        tenantId: payment.tenant_id,
        id: payment.id,
        actor: context.actor,
        metadata: { methodRequested: payment.method_requested, methodUsed: payment.method },
      });
      return payment;
    }
    return this.db.transaction(async (tx) => (await this.applyIn(tx, payment, outcome, context)) ?? payment, KEYED);
  }

  async applyIn(tx: Queryable, payment: PaymentRow, outcome: RailOutcome, context: OutcomeContext): Promise<PaymentRow | undefined> {
    const now = this.clock.now();
    const from = payment.status;
    const metadata = { methodRequested: payment.method_requested, methodUsed: payment.method };
    const move = async (to: PaymentStatus, reason: string | null, change: Omit<TransitionChange, 'to' | 'reason'>) => {
      const moved = await transitionPayment(tx, payment.tenant_id, payment.id, from, { ...change, to, reason }, now);
      if (moved) await insertTransition(tx, payment.tenant_id, payment.id, { from_status: from, to_status: to, reason, actor: context.actor, metadata, created_at: now });
      return moved;
    };
    const recheckAt = (ms?: number) => new Date(now.getTime() + Math.max(ms ?? 0, context.recheckAfterMs));

    switch (outcome.status) {
      case 'processing': {
        // The rail took it and settles asynchronously: recorded once, as submitted → submitted.
        if (from === 'submitted') await recordRailAcceptances(tx, [{ tenantId: payment.tenant_id, id: payment.id, actor: context.actor, metadata }], now);
        return this.recheck(tx, payment, recheckAt(outcome.retryAfterMs));
      }
      case 'unconfirmed':
      case 'timeout':
      case 'error': {
        if (from === 'unknown') return this.recheck(tx, payment, recheckAt('retryAfterMs' in outcome ? outcome.retryAfterMs : undefined));
        const reason = outcome.status === 'unconfirmed' ? 'rail_unconfirmed' : outcome.status === 'timeout' ? 'rail_timeout' : 'rail_error';
        return move('unknown', reason, { message: STATUS_MESSAGES.unknown, nextCheckAt: recheckAt() });
      }
      case 'settled':
        return this.settle(tx, payment, move, outcome.bankReference, outcome.settledAt, context.settledReason);
      case 'failed': {
        const moved = await move('failed', outcome.reason, {
          message: failureMessage(outcome.reason),
          compensated: true,
          feeAmount: 0n,
          nextCheckAt: null,
        });
        if (!moved) return undefined;
        // Limit counters before ledger accounts: the payout transaction locks them in that order too.
        await this.limits.release(tx, moved);
        const commitment = await payoutEntryOf(tx, payment.tenant_id, payment.id);
        if (!commitment) throw new Error(`invariant: payment ${payment.id} failed after the ledger but has no payout entry`);
        await postEntry(tx, partitionOf(payment), failureEntry(commitment), { paymentId: payment.id });
        await this.emit(tx, moved, 'payment.failed', { reason: outcome.reason });
        if (moved.beneficiary_id) await recordBeneficiaryFailure(tx, moved.tenant_id, moved.beneficiary_id, outcome.reason);
        return moved;
      }
      case 'reversed': {
        // The rail reports a reversal of a payment we had not seen settle: settle it first.
        const settled = await this.settle(tx, payment, move, outcome.bankReference, now, context.settledReason);
        return settled ? this.reverseIn(tx, settled, outcome.reason, context.actor) : undefined;
      }
    }
  }

  /** A settled payout returned by the bank: the delivered amount comes back, the fee is kept. */
  async reverse(payment: PaymentRow, reason: string, actor: TransitionActor): Promise<PaymentRow | undefined> {
    return this.db.transaction((tx) => this.reverseIn(tx, payment, reason, actor), KEYED);
  }

  private async reverseIn(tx: Queryable, payment: PaymentRow, reason: string, actor: TransitionActor): Promise<PaymentRow | undefined> {
    const now = this.clock.now();
    const moved = await transitionPayment(tx, payment.tenant_id, payment.id, 'settled', { to: 'reversed', reason, message: STATUS_MESSAGES.reversed }, now);
    if (!moved) return undefined;
    await insertTransition(tx, payment.tenant_id, payment.id, {
      from_status: 'settled',
      to_status: 'reversed',
      reason,
      actor,
      metadata: { methodRequested: payment.method_requested, methodUsed: payment.method },
      created_at: now,
    });
    await this.limits.release(tx, moved);
    const funding = await fundingAccountOf(tx, payment);
    const drawn = funding === 'credit_receivable' ? await lockedBalance(tx, partitionOf(payment), 'BS', 'credit_receivable') : 0n;
    await postEntry(tx, partitionOf(payment), reversalEntry(funding, moved.payout_amount, drawn), { paymentId: payment.id });
    await this.emit(tx, moved, 'payment.reversed', { reason });
    return moved;
  }

  private async settle(
    tx: Queryable,
    payment: PaymentRow,
    move: (to: PaymentStatus, reason: string | null, change: Omit<TransitionChange, 'to' | 'reason'>) => Promise<PaymentRow | undefined>,
    bankReference: string,
    settledAt: Date,
    reason: string,
  ): Promise<PaymentRow | undefined> {
    const moved = await move('settled', reason, {
      message: STATUS_MESSAGES.settled,
      bankReference,
      settledAt,
      nextCheckAt: null,
    });
    if (!moved) return undefined;
    await postEntry(tx, partitionOf(payment), settlementEntry(moved.payout_amount), { paymentId: payment.id });
    await this.emit(tx, moved, 'payment.settled', {});
    if (moved.beneficiary_id) await recordBeneficiarySuccess(tx, moved.tenant_id, moved.beneficiary_id, settledAt);
    return moved;
  }

  private async recheck(tx: Queryable, payment: PaymentRow, at: Date): Promise<PaymentRow | undefined> {
    await scheduleCheck(tx, payment.tenant_id, payment.id, at);
    return undefined;
  }

  async emit(tx: Queryable, payment: PaymentRow, type: 'payment.settled' | 'payment.failed' | 'payment.reversed', extra: { reason?: string }): Promise<void> {
    await insertOutboxEvent(tx, {
      tenantId: payment.tenant_id,
      mode: payment.mode,
      type,
      paymentId: payment.id,
      payload: eventPayload(payment, type, extra.reason),
      at: this.clock.now(),
    });
  }
}

/** Webhook payloads of decisions.md §7. */
export function eventPayload(payment: PaymentRow, type: string, reason?: string): Record<string, unknown> {
  const base = { paymentId: payment.id, asset: payment.payout_asset, amount: payment.payout_amount.toString() };
  if (type === 'payment.settled') return { ...base, bankReference: payment.bank_reference, method: payment.method };
  if (type === 'payment.failed') return { ...base, method: payment.method ?? payment.method_requested, reason: reason ?? payment.status_reason };
  return { ...base, bankReference: payment.bank_reference, method: payment.method, reason: reason ?? payment.status_reason };
}

const partitionOf = (payment: PaymentRow) => ({ tenantId: payment.tenant_id, mode: payment.mode });

async function fundingAccountOf(tx: Queryable, payment: PaymentRow): Promise<FundingAccount> {
  const commitment = await payoutEntryOf(tx, payment.tenant_id, payment.id);
  const charged = commitment?.postings.find((p) => p.amount > 0n && (p.account === 'prefunding' || p.account === 'credit_receivable'));
  if (!charged) throw new Error(`invariant: payment ${payment.id} has no charged funding account`);
  return charged.account as FundingAccount;
}
