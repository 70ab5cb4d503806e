// Test mode only: a test pushes one of its payments to an outcome now instead of waiting for the
// sandbox rail's schedule. The outcome goes through the same outcome batch as the rail's own reports
// (PaymentOutcomes: lock order, ledger entry, limit give-back, history, one outbox event), and the
// sandbox rail's record of the transfer is rewritten in that same transaction, so the rail can never
// report a second, different outcome later.
import type { Database } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import { findPayment, listTransitions, type PaymentRow, type TransitionRow } from '../db/repositories/payments.ts';
import type { Mode } from '../domain/api-keys.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import type { RailReport } from '../domain/outcome-decision.ts';
import { UNRESOLVED, type PaymentStatus } from '../domain/payment-state.ts';
import { ApiError, notFound, validationFailed } from '../http/errors.ts';
import { RAIL_FAILURE_REASONS, type RailFailureReason } from '../rails/rail.ts';
import { recordSimulation, SANDBOX_REVERSAL_REASON, simulatedBankReference, type SimulatedOutcome } from '../rails/sandbox-rail.ts';
import type { PaymentOutcomes } from './payment-outcomes.ts';

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
  if (reason === undefined) return outcome === 'fail' ? DEFAULT_SIMULATED_FAILURE_REASON : DEFAULT_SIMULATED_REVERSAL_REASON;
  if (!allowed.includes(reason)) throw refuse(`with outcome ${outcome} must be one of: ${allowed.join(', ')}`);
  return reason;
}

function refusal(outcome: SimulatedOutcomeName, status: PaymentStatus): ApiError {
  if (outcome === 'reverse') {
    return new ApiError('payment_not_settled', `Only a settled payment can be reversed; this one is ${status}. Nothing changed.`, { status });
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

  /**
   * Applies the outcome now; the payment and its history afterwards, or 400, 404, 409 with nothing
   * changed. The audit row is written in the outcome's transaction, only when the outcome took effect.
   */
  async simulate(
    partition: { tenantId: string; mode: Mode },
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
    let report: RailReport;
    let simulated: (locked: PaymentRow) => SimulatedOutcome;
    switch (request.outcome) {
      case 'settle': {
        const bankReference = await simulatedBankReference(this.db, payment.id, 'test');
        report = { status: 'settled', bankReference, settledAt: at };
        simulated = () => ({ status: 'settled', bankReference });
        break;
      }
      case 'fail': {
        const failure = reason as RailFailureReason;
        report = { status: 'failed', reason: failure };
        simulated = () => ({ status: 'failed', reason: failure });
        break;
      }
      case 'reverse': {
        const returned = reason!;
        // The bank reference is the locked row's: the one the payment settled with.
        report = { status: 'reversed', bankReference: payment.bank_reference ?? '', reason: returned };
        simulated = (locked) => ({ status: 'reversed', bankReference: locked.bank_reference!, reason: returned });
        break;
      }
    }
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
    if (!after) throw new Error(`invariant: payment ${id} vanished after its simulated outcome`);
    return { payment: after, transitions: await listTransitions(this.db, partition.tenantId, id) };
  }
}
