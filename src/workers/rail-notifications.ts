// The rail's own notifications (an outcome pushed to us, a settled payout returned by the bank),
// applied through the outcome commits as a rail's answer would be, and acknowledged only once their
// effect — or the anomaly they are — is committed. Run by the reaper at the end of each of its passes.
import type { FastifyBaseLogger } from 'fastify';
import { pgErrorCode, type Database } from '../db/database.ts';
import { openAnomaly } from '../db/repositories/anomalies.ts';
import { findPayment, findPaymentById, type PaymentRow } from '../db/repositories/payments.ts';
import { evidenceOfReport, jsonOf, notificationDedupKey, type FinalReport } from '../domain/anomalies.ts';
import type { Clock } from '../domain/clock.ts';
import type { RailReport } from '../domain/commit/outcome-decision.ts';
import { bounded } from '../rails/questions.ts';
import type { RailAdapter, RailNotification } from '../rails/rail.ts';
import type { RailSet } from '../rails/rail-set.ts';
import { forEachBounded } from '../services/bounded-concurrency.ts';
import type { MoneyMetrics } from '../services/money-metrics.ts';
import type { PaymentOutcomes } from '../services/commit/payment-outcomes.ts';
import { rethrowInvariant } from '../domain/assert.ts';

/** Rail notifications handled per pass and rail, at most. */
export const NOTIFICATIONS_BATCH_MAX = 100;
/** Notifications applied at once, per rail. */
const NOTIFICATIONS_CONCURRENCY = 8;

export class RailNotifications {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly rails: RailSet,
    private readonly outcomes: PaymentOutcomes,
    private readonly railTimeoutMs: number,
    private readonly log?: FastifyBaseLogger,
    private readonly metrics?: MoneyMetrics,
  ) {}

  /** One pass over every rail's pending notifications (at most NOTIFICATIONS_BATCH_MAX each): how many were handled. */
  async runOnce(): Promise<number> {
    let handled = 0;
    let unread: unknown;
    for (const rail of this.rails.all()) {
      let notifications: RailNotification[];
      try {
        notifications = await bounded(
          rail.pendingNotifications(NOTIFICATIONS_BATCH_MAX),
          this.railTimeoutMs,
          'the pending notifications',
        );
      } catch (error) {
        // One rail that does not answer does not keep the others' notifications waiting; the pass
        // still fails (counted by the loop) once they are handled.
        unread ??= error;
        continue;
      }
      await forEachBounded(notifications, NOTIFICATIONS_CONCURRENCY, async (notification) => {
        try {
          await this.applyNotification(rail, notification);
          // Only now: what it said is committed (applied, or stored as an anomaly).
          await bounded(rail.acknowledgeNotification(notification.id), this.railTimeoutMs, 'an acknowledgement');
        } catch (error) {
          rethrowInvariant(error);
          // Not acknowledged: the rail hands it out again on a later pass.
          this.log?.warn(
            {
              rail: rail.name,
              notification: notification.id,
              code: pgErrorCode(error),
              message: (error as Error)?.message,
            },
            'reaper: a rail notification is not applied yet',
          );
        }
      });
      handled += notifications.length;
    }
    if (unread !== undefined) throw unread;
    return handled;
  }

  /**
   * Applies what a notification says through the outcome commits, as an answer of the rail would be:
   * an outcome of an unresolved payment, a return of a settled one. What contradicts our records — a
   * payment already final the other way, a return of a payment we never saw settle, an amount or bank
   * reference other than ours — is stored as an anomaly in the batch's transaction instead, and a
   * reference we have no payment for (on this rail) is stored as one too. Resolves once its effect is
   * committed; the caller acknowledges it then.
   */
  private async applyNotification(rail: RailAdapter, notification: RailNotification): Promise<void> {
    const payment = await this.paymentNamedBy(rail, notification);
    if (!payment) return this.recordUnknownReference(rail, notification);
    const notified = { id: notification.id, raw: jsonOf(notification), occurredAt: notification.occurredAt };
    if (notification.doubt) {
      // Not believed (an amount or bank reference we cannot read): its anomaly is opened, the payment asked about again.
      await this.outcomes.apply(
        payment,
        { status: 'unconfirmed', doubt: notification.doubt },
        { actor: 'provider_event', settledReason: 'resolved_by_reaper', recheck: 'backoff', notification: notified },
      );
      return;
    }
    let current = payment;
    if (notification.kind === 'reversed' && (current.status === 'submitted' || current.status === 'unknown')) {
      // A return of a payment we have not seen settle: the rail's own status first. A transfer it shows
      // settled (or settled and returned) is resolved as such, and the return then applies to it (or
      // repeats it); one it does not show settled leaves the return a contradiction.
      const lookup = await bounded(rail.lookup(current.id, current.mode), this.railTimeoutMs, 'a lookup');
      if (lookup.status === 'settled' || lookup.status === 'failed' || lookup.status === 'reversed') {
        current = await this.outcomes.apply(current, lookup, {
          actor: 'reaper',
          settledReason: 'resolved_by_reaper',
          recheck: 'backoff',
        });
      }
    }
    await this.outcomes.apply(current, reportOfNotification(notification), {
      actor: 'provider_event',
      settledReason: 'resolved_by_reaper',
      recheck: 'backoff',
      notification: notified,
    });
  }

  /**
   * The payment a notification names: by the primary key when the rail says whose transfer it was; by
   * the id alone otherwise, or when that names nothing (a rail's echo is not trusted to be right: a
   * return is never dropped for it). A payment carried by another rail is not this rail's.
   */
  private async paymentNamedBy(rail: RailAdapter, notification: RailNotification): Promise<PaymentRow | undefined> {
    const keyed =
      notification.tenantId && notification.mode
        ? await findPayment(this.db, notification.tenantId, notification.mode, notification.reference)
        : undefined;
    const payment = keyed ?? (await findPaymentById(this.db, notification.reference));
    return payment && this.rails.railOf(payment) === rail ? payment : undefined;
  }

  /**
   * A notification naming a reference we have no payment for on this rail. It has no tenant (a rail's
   * echo of one is not trusted), unless the notification is one a program asked for (the sandbox's):
   * then it is that program's, so test traffic stays in test. Its mode is the one the rail serves
   * (a rail serves one), else the one it names. Its dedup scope is the mode for a mode's default rail
   * (as before rails were many), the rail's name with it for any other (two rails' notification ids
   * are not one space).
   */
  private async recordUnknownReference(rail: RailAdapter, notification: RailNotification): Promise<void> {
    const report = reportOfNotification(notification);
    const kind = 'unknown_reference';
    const owner = notification.requestedBy;
    const mode = owner?.mode ?? (rail.modes?.length === 1 ? rail.modes[0]! : (notification.mode ?? null));
    const scope = mode && this.rails.railOf({ rail: null, mode }) === rail ? mode : `${rail.name}/${mode ?? ''}`;
    const opened = await openAnomaly(
      this.db,
      {
        kind,
        tenantId: owner?.tenantId ?? null,
        mode,
        paymentId: null,
        ours: { payment: null },
        theirs: { reference: notification.reference, rail: rail.name, ...evidenceOfReport(report) },
        raw: jsonOf(notification),
        dedupKey: notificationDedupKey(kind, scope, notification.id),
        reportedAt: notification.occurredAt,
      },
      this.clock.now(),
    );
    if (!opened.created) return;
    this.metrics?.anomalyRecorded(kind);
    const line = { anomalyId: opened.id, kind, mode, rail: rail.name, notification: notification.id };
    const message =
      'anomaly: the rail notified about a reference we have no payment for; it waits for an operator (GET /v1/admin/anomalies)';
    // A test program's own contradiction moves no money: no one is paged for it.
    if (mode === 'test') this.log?.info(line, message);
    else this.log?.error(line, message);
  }
}

/** What a notification says, as the outcome commits take a rail's report. */
function reportOfNotification(notification: RailNotification): RailReport & FinalReport {
  const amount = notification.amountMinor === undefined ? {} : { amountMinor: notification.amountMinor };
  switch (notification.kind) {
    case 'settled':
      return {
        status: 'settled',
        bankReference: notification.bankReference,
        settledAt: notification.settledAt ?? notification.occurredAt,
        ...amount,
      };
    case 'failed':
      return { status: 'failed', reason: notification.reason, ...amount };
    case 'reversed':
      return {
        status: 'reversed',
        reason: notification.reason,
        ...(notification.bankReference === undefined ? {} : { bankReference: notification.bankReference }),
        ...amount,
      };
  }
}
