import type { Database } from '../db/database.ts';
import { claimUnresolvedPayments, findPaymentById, type PaymentRow } from '../db/repositories/payments.ts';
import type { Clock } from '../domain/clock.ts';
import type { Sender } from '../domain/sender.ts';
import type { RailAdapter, RailTransfer } from '../rails/rail.ts';
import type { PaymentOutcomes, RailOutcome } from '../services/payment-outcomes.ts';
import { callRail, type RailsByMode } from '../services/payouts.ts';

export const REAPER_BATCH_MAX = 100;
export const REAPER_LEASE_MS = 30_000;
const NOTIFICATIONS_BATCH_MAX = 100;

export interface ReaperSettings {
  intervalMs: number;
  railTimeoutMs: number;
}

/**
 * Resolves payments the rail has not closed (`submitted`, `unknown`) by ASKING the rail with our
 * reference: it never re-sends a payout whose outcome is unknown. The one case it submits is a
 * payment the rail has never heard of (a crash between our ledger commit and the rail call); the
 * submit is idempotent at the rail by that same reference. It also consumes rail-side events
 * (reversals of settled payouts).
 */
export class Reaper {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly rails: RailsByMode,
    private readonly outcomes: PaymentOutcomes,
    private readonly settings: ReaperSettings,
  ) {}

  /** One bounded pass; true when the batch was full. */
  async runOnce(): Promise<boolean> {
    const now = this.clock.now();
    const claimed = await this.db.transaction((tx) =>
      claimUnresolvedPayments(tx, now, new Date(now.getTime() + REAPER_LEASE_MS), REAPER_BATCH_MAX),
    );
    // One payment's failure must not stop the others; its lease expires and it is retried.
    const results = await Promise.allSettled(claimed.map((payment) => this.resolve(payment)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    const notified = await this.processNotifications();
    if (failed) throw failed.reason;
    return claimed.length === REAPER_BATCH_MAX || notified === NOTIFICATIONS_BATCH_MAX;
  }

  private railFor(payment: PaymentRow): RailAdapter | undefined {
    return payment.mode === 'test' ? this.rails.test : this.rails.live;
  }

  private async resolve(payment: PaymentRow): Promise<void> {
    const rail = this.railFor(payment);
    if (!rail) return;
    const lookup = await rail.lookup(payment.id, payment.mode);
    let outcome: RailOutcome;
    if (lookup.status === 'not_found') {
      outcome = await callRail(rail, transferOf(payment), this.settings.railTimeoutMs);
    } else {
      outcome = lookup;
    }
    await this.outcomes.apply(payment, outcome, {
      actor: 'reaper',
      settledReason: 'resolved_by_reaper',
      recheckAfterMs: this.settings.intervalMs,
    });
  }

  private async processNotifications(): Promise<number> {
    let handled = 0;
    for (const rail of [this.rails.test, this.rails.live]) {
      if (!rail) continue;
      const notifications = await rail.pendingNotifications(NOTIFICATIONS_BATCH_MAX);
      for (const notification of notifications) {
        const payment = await findPaymentById(this.db, notification.reference);
        if (payment?.status === 'settled') await this.outcomes.reverse(payment, notification.reason, 'provider_event');
        // Acknowledged after our transition commits: a crash in between redelivers, and the
        // conditional transition makes the redelivery a no-op.
        await rail.acknowledgeNotification(notification.id);
        handled += 1;
      }
    }
    return handled;
  }
}

function transferOf(payment: PaymentRow): RailTransfer {
  if (!payment.method || !payment.sender) throw new Error(`invariant: payment ${payment.id} reached the rail without method or sender`);
  const b = payment.beneficiary;
  return {
    reference: payment.id,
    tenantId: payment.tenant_id,
    mode: payment.mode,
    instrument: payment.method,
    amountMinor: payment.payout_amount,
    asset: 'BS',
    beneficiary: { fullName: b.fullName, nationalId: b.nationalId, bankCode: b.bankCode, accountNumber: b.accountNumber, phone: b.phone },
    sender: payment.sender as unknown as Sender,
  };
}
