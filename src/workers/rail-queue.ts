// The rail queue: payouts accepted and charged while no rail could take them — every rail that may
// carry them had its circuit breaker open — wait `pending` (`awaiting_rail`). Each reaper pass looks
// at the oldest first: one a rail admits now becomes `submitted` on that rail and the reaper sends it
// in the same pass; one that waited RAIL_QUEUE_MAX_AGE_S fails `bank_unreachable` through the outcome
// batch (its money and limits given back, one `payment.failed`). Nothing here ever calls a rail: the
// breakers say whether one is up.
import type { FastifyBaseLogger } from 'fastify';
import { pgErrorCode, type Database } from '../db/database.ts';
import type { PaymentRow } from '../db/repositories/payments.ts';
import { admitWaitingPayment, claimWaitingPayments, nextWaitingDue } from '../db/repositories/payments-waiting.ts';
import type { Clock } from '../domain/clock.ts';
import { STATUS_MESSAGES } from '../domain/payment-messages.ts';
import type { RailSet } from '../rails/rail-set.ts';
import type { PaymentOutcomes } from '../services/commit/payment-outcomes.ts';
import { rethrowInvariant } from '../domain/assert.ts';

/** Waiting payments looked at per pass, at most. */
const RAIL_QUEUE_BATCH_MAX = 200;
/**
 * How long a claimed waiting payment is left alone: its lease, and the pause before a payment whose
 * rail is still down is looked at again (a breaker changes on its own only after RAIL_BREAKER_OPEN_MS).
 */
const RAIL_QUEUE_RECHECK_MS = 1_000;

export interface RailQueuePass {
  /** Admitted now: submitted on their rail and due at once; the reaper sends them this pass. */
  admitted: PaymentRow[];
  /** The claim filled its batch: more are probably waiting. */
  full: boolean;
}

export class RailQueue {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly rails: RailSet,
    private readonly outcomes: PaymentOutcomes,
    private readonly maxAgeMs: number,
    private readonly log?: FastifyBaseLogger,
  ) {}

  async runOnce(): Promise<RailQueuePass> {
    const now = this.clock.now();
    const waiting = await claimWaitingPayments(
      this.db,
      now,
      new Date(now.getTime() + RAIL_QUEUE_RECHECK_MS),
      RAIL_QUEUE_BATCH_MAX,
    );
    const admitted: PaymentRow[] = [];
    // In arrival order, one at a time: an earlier payment is admitted (and so sent) before a later one.
    for (const payment of waiting) {
      try {
        const row = await this.release(payment, now);
        if (row) admitted.push(row);
      } catch (error) {
        rethrowInvariant(error);
        this.log?.warn(
          { paymentId: payment.id, code: pgErrorCode(error), message: (error as Error)?.message },
          'rail queue: could not release a waiting payment; it is looked at again',
        );
      }
    }
    return { admitted, full: waiting.length === RAIL_QUEUE_BATCH_MAX };
  }

  /** When the next waiting payment falls due, if any waits. */
  nextDue(): Promise<Date | undefined> {
    return nextWaitingDue(this.db);
  }

  private async release(payment: PaymentRow, now: Date): Promise<PaymentRow | undefined> {
    if (now.getTime() - payment.created_at.getTime() >= this.maxAgeMs) {
      await this.outcomes.apply(
        payment,
        { status: 'failed', reason: 'bank_unreachable' },
        { actor: 'reaper', settledReason: 'resolved_by_reaper', recheck: 'backoff', onlyFrom: ['pending'] },
      );
      this.log?.warn(
        { paymentId: payment.id, rail: payment.rail, waitedMs: now.getTime() - payment.created_at.getTime() },
        'rail queue: no rail admitted the payout within RAIL_QUEUE_MAX_AGE_S; failed bank_unreachable, its money returned',
      );
      return undefined;
    }
    const rail = await this.rails.railForWaiting(payment);
    if (rail === null) return undefined;
    return admitWaitingPayment(this.db, payment, rail, STATUS_MESSAGES.submitted, now);
  }
}
