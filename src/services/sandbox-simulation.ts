// Test mode only: a test pushes one of its payments to an outcome now instead of waiting for the
// sandbox rail's schedule. The outcome goes through the same outcome commit as the rail's own reports
// (PaymentOutcomes: lock order, ledger entry, limit give-back, history, one outbox event), and the
// sandbox rail's record of the transfer is rewritten in that same transaction, so the rail can never
// report a second, different outcome later.
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import { findPayment, listTransitions, type PaymentRow, type TransitionRow } from '../db/repositories/payments.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import type { RailReport } from '../domain/commit/outcome-decision.ts';
import { UNRESOLVED, type PaymentStatus } from '../domain/payment-state.ts';
import { ApiError, notFound, overloaded, validationFailed } from '../domain/errors.ts';
import { RAIL_FAILURE_REASONS, type RailFailureReason } from '../domain/failure-reasons.ts';
import {
  newBankReference,
  queueSandboxNotification,
  recordSimulation,
  SANDBOX_REVERSAL_REASON,
  simulatedBankReference,
  type SandboxNotice,
  type SimulatedOutcome,
} from '../rails/sandbox-rail.ts';
import type { PaymentOutcomes } from './commit/payment-outcomes.ts';
import type { Partition } from '../domain/partition.ts';
import { assert } from '../domain/assert.ts';

export const SIMULATED_OUTCOMES = ['settle', 'fail', 'reverse'] as const;
export type SimulatedOutcomeName = (typeof SIMULATED_OUTCOMES)[number];

/** Reasons a simulated failure may carry: the rail's own rejection reasons. */
export const SIMULATED_FAILURE_REASONS: readonly RailFailureReason[] = RAIL_FAILURE_REASONS;
/**
 * Reasons a simulated return may carry: the sandbox's own return reason, or a rail rejection reason.
 * Every reason the call accepts is one of these (a failure accepts all but the first).
 */
export const SIMULATED_REVERSAL_REASONS = [SANDBOX_REVERSAL_REASON, ...RAIL_FAILURE_REASONS] as const;

export const DEFAULT_SIMULATED_FAILURE_REASON: RailFailureReason = 'rail_rejected';
/** A V99990007 return says this too, so a simulated return reads like the scheduled one. */
export const DEFAULT_SIMULATED_REVERSAL_REASON = SANDBOX_REVERSAL_REASON;
/** Status reason of a simulated settlement, as `rail_settled` or `resolved_by_reaper` are of the rail's. */
export const SIMULATED_SETTLEMENT_REASON = 'simulated_settlement';

const APPLIES_TO: Record<SimulatedOutcomeName, readonly PaymentStatus[]> = {
  settle: UNRESOLVED,
  fail: UNRESOLVED,
  reverse: ['settled'],
};

export interface SimulationRequest {
  outcome: SimulatedOutcomeName;
  reason?: string;
}

/** The reason the outcome is recorded with, or a 400 naming `reason`. */
function reasonOf(request: SimulationRequest): string | undefined {
  const { outcome, reason } = request;
  const refuse = (message: string) => validationFailed([{ field: 'reason', message }]);
  if (outcome === 'settle') {
    if (reason !== undefined) throw refuse('is not accepted with outcome settle: a settlement has no reason');
    return undefined;
  }
  const allowed: readonly string[] = outcome === 'fail' ? SIMULATED_FAILURE_REASONS : SIMULATED_REVERSAL_REASONS;
  if (reason === undefined)
    return outcome === 'fail' ? DEFAULT_SIMULATED_FAILURE_REASON : DEFAULT_SIMULATED_REVERSAL_REASON;
  if (!allowed.includes(reason)) throw refuse(`with outcome ${outcome} must be one of: ${allowed.join(', ')}`);
  return reason;
}

function refusal(outcome: SimulatedOutcomeName, status: PaymentStatus): ApiError {
  if (outcome === 'reverse') {
    return new ApiError(
      'payment_not_settled',
      `Only a settled payment can be reversed; this one is ${status}. Nothing changed.`,
      { status },
    );
  }
  return new ApiError(
    'payment_already_resolved',
    `This payment is already ${status}: only a submitted or unknown payment can be settled or failed. Nothing changed.`,
    { status },
  );
}

export class SandboxSimulationService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly outcomes: PaymentOutcomes,
  ) {}

  /** Test mode only: queues a notification at the sandbox rail (queueNotification, below). */
  notify(partition: Partition, request: NotificationRequest): Promise<QueuedNotification> {
    return queueNotification(this.db, this.clock, partition, request);
  }

  /**
   * Applies the outcome now; the payment and its history afterwards, or 400, 404, 409 with nothing
   * changed. The audit row is written in the outcome's transaction, only when the outcome took effect.
   */
  async simulate(
    partition: Partition,
    id: string,
    request: SimulationRequest,
    actor: AuditActor,
  ): Promise<{ payment: PaymentRow; transitions: TransitionRow[] }> {
    const reason = reasonOf(request);
    // Live payments are real money: to a live key they do not exist here.
    if (partition.mode !== 'test') throw notFound('payment');
    const payment = await findPayment(this.db, partition.tenantId, 'test', id);
    if (!payment) throw notFound('payment');
    const onlyFrom = APPLIES_TO[request.outcome];
    // A status only moves forward, so a payment that does not fit now never will: refused without a
    // transaction. One that fits is decided again under its lock (another path may move it first).
    if (!onlyFrom.includes(payment.status)) throw refusal(request.outcome, payment.status);

    const at = this.clock.now();
    const { report, simulated } = await this.reportOf(payment, request.outcome, reason, at);
    const applied = await this.outcomes.applyWithDetail(payment, report, {
      actor: 'system',
      settledReason: SIMULATED_SETTLEMENT_REASON,
      recheck: 'backoff',
      onlyFrom,
      alongside: async (tx, locked) => {
        await recordSimulation(
          tx,
          {
            reference: payment.id,
            tenantId: payment.tenant_id,
            mode: payment.mode,
            instrument: payment.method ?? payment.method_requested,
            amountMinor: payment.payout_amount,
            beneficiary: payment.beneficiary,
          },
          simulated(locked),
          at,
        );
        // `before` is the status the request found; under the lock it can only have been another of `onlyFrom`.
        await recordAudit(tx, {
          actor,
          action: 'sandbox.simulate',
          target: { type: 'payment', id: payment.id, tenantId: payment.tenant_id, mode: payment.mode },
          before: { status: payment.status },
          after: { outcome: request.outcome, status: locked.status, reason: reason ?? null },
        });
      },
    });
    if (!applied.moved) throw refusal(request.outcome, applied.payment.status);
    const after = await findPayment(this.db, partition.tenantId, 'test', id);
    assert(after, `payment ${id} vanished after its simulated outcome`);
    return { payment: after, transitions: await listTransitions(this.db, partition.tenantId, id) };
  }

  /**
   * What the rail is taken to have reported, and what the sandbox rail's record of the transfer then
   * says (from the payment as locked by the outcome commit).
   */
  private async reportOf(
    payment: PaymentRow,
    outcome: SimulatedOutcomeName,
    reason: string | undefined,
    at: Date,
  ): Promise<{ report: RailReport; simulated: (locked: PaymentRow) => SimulatedOutcome }> {
    switch (outcome) {
      case 'settle': {
        const bankReference = await simulatedBankReference(this.db, payment.id, 'test');
        return {
          report: { status: 'settled', bankReference, settledAt: at },
          simulated: () => ({ status: 'settled', bankReference }),
        };
      }
      case 'fail': {
        const failure = reason as RailFailureReason;
        return {
          report: { status: 'failed', reason: failure },
          simulated: () => ({ status: 'failed', reason: failure }),
        };
      }
      case 'reverse': {
        const returned = reason!;
        // The bank reference is the locked row's: the one the payment settled with.
        return {
          report: { status: 'reversed', bankReference: payment.bank_reference ?? '', reason: returned },
          simulated: (locked) => ({ status: 'reversed', bankReference: locked.bank_reference!, reason: returned }),
        };
      }
    }
  }
}

/** What a test asks the sandbox rail to notify (POST /v1/sandbox/rail-notifications). */
export interface NotificationRequest {
  /** One of the caller's test payments; absent: a reference nobody has. */
  paymentId?: string;
  status: 'settled' | 'failed' | 'reversed';
  reason?: string;
  /** Minor units; default the payment's amount (none for a reference nobody has). */
  amount?: number;
  /** Default the payment's (or the rail's) bank reference, else a new one. */
  bankReference?: string;
}

export interface QueuedNotification {
  id: string;
  reference: string;
  paymentId: string | null;
  status: NotificationRequest['status'];
  reason: string | null;
  amount: bigint | null;
  bankReference: string | null;
  occurredAt: Date;
}

const OUTCOME_OF_STATUS: Record<NotificationRequest['status'], SimulatedOutcomeName> = {
  settled: 'settle',
  failed: 'fail',
  reversed: 'reverse',
};

/**
 * Test mode only: makes the sandbox rail notify what the request says, as a real rail's webhook
 * might — including what contradicts our records (settled after failed, a return of a failed
 * payment, an amount or bank reference of its own, a reference nobody has). The reaper hears it on its
 * next pass and applies it, or records it as an anomaly; nothing is changed here. 404 for a payment
 * outside the caller's test program, 503 `overloaded` past SANDBOX_NOTICES_PENDING_MAX waiting.
 */
async function queueNotification(
  db: Database,
  clock: Clock,
  partition: Partition,
  request: NotificationRequest,
): Promise<QueuedNotification> {
  const reason = reasonOf({ outcome: OUTCOME_OF_STATUS[request.status], reason: request.reason }) ?? null;
  if (request.status === 'failed' && request.bankReference !== undefined) {
    throw validationFailed([
      {
        field: 'bankReference',
        message: 'is not accepted with status failed: a failed transfer has no bank reference',
      },
    ]);
  }
  if (partition.mode !== 'test')
    throw new ApiError('resource_not_found', 'Live programs have no sandbox rail: use a test key.');
  const payment =
    request.paymentId === undefined ? undefined : await findPayment(db, partition.tenantId, 'test', request.paymentId);
  if (request.paymentId !== undefined && !payment) throw notFound('payment');
  const reference = payment?.id ?? randomUUID();
  const amount = request.amount !== undefined ? BigInt(request.amount) : (payment?.payout_amount ?? null);
  const bankReference =
    request.status === 'failed'
      ? null
      : (request.bankReference ??
        payment?.bank_reference ??
        (payment ? await simulatedBankReference(db, payment.id, 'test') : newBankReference()));
  const notice: SandboxNotice =
    request.status === 'failed'
      ? { kind: 'failed', reason: reason!, amountMinor: amount }
      : request.status === 'settled'
        ? { kind: 'settled', bankReference: bankReference!, amountMinor: amount }
        : { kind: 'reversed', reason: reason!, bankReference, amountMinor: amount };
  const at = clock.now();
  const id = await queueSandboxNotification(db, { tenantId: partition.tenantId, mode: 'test' }, reference, notice, at);
  if (id === undefined) throw overloaded("the sandbox rail's notifications waiting for this program");
  return {
    id,
    reference,
    paymentId: payment?.id ?? null,
    status: request.status,
    reason,
    amount,
    bankReference,
    occurredAt: at,
  };
}
