import type { FastifyBaseLogger } from 'fastify';
import {
  claimUnresolvedPayments,
  deferResolution,
  nextResolutionDue,
  type PaymentRow,
} from '../db/repositories/payments.ts';
import { pgErrorCode, type Database } from '../db/database.ts';
import type { Clock } from '../domain/clock.ts';
import type { RailReport } from '../domain/commit/outcome-decision.ts';
import { RESEND_QUESTIONS_MAX, sendEndsMs } from '../domain/send-schedule.ts';
import { railOfPayment, railsOfPayments } from '../db/repositories/rails.ts';
import { bounded, RailQuestionTimeout } from '../rails/questions.ts';
import type { RailAdapter, RailLookup } from '../rails/rail.ts';
import { railSetOf, type RailSet } from '../rails/rail-set.ts';
import { callRail, transferOf, type RailsByMode } from '../rails/send.ts';
import { forEachBounded } from '../services/bounded-concurrency.ts';
import type { MoneyMetrics, ResolutionOutcome } from '../services/money-metrics.ts';
import type { PaymentOutcomes } from '../services/commit/payment-outcomes.ts';
import { NOTIFICATIONS_BATCH_MAX, RailNotifications } from './rail-notifications.ts';
import { RailQueue } from './rail-queue.ts';
import type { PassOutcome } from './run-loop.ts';
import { assert } from '../domain/assert.ts';
import { rethrowInvariant } from '../domain/assert.ts';

/** Payments claimed per pass, at most. */
const REAPER_BATCH_MAX = 200;
/**
 * Questions to the rail in flight at once, per pass. With the committer's share (half the pool) this
 * stays within a pool of 20 even when the rail's own state is in our database (the sandbox).
 */
const REAPER_RAIL_CONCURRENCY = 8;
/** A claim outlives the rail's timeout by this much: time to record what the rail said. */
const REAPER_LEASE_MARGIN_MS = 10_000;
/**
 * The shortest pause after a pass that did not fill its batch, when the next payment falls due sooner
 * than the loop's interval: payments falling due meanwhile are asked about together, and the reaper
 * makes at most ten such passes a second.
 * @internal Exported for its tests, not used elsewhere.
 */
export const REAPER_PAUSE_MIN_MS = 100;

export interface ReaperSettings {
  intervalMs: number;
  railTimeoutMs: number;
  /** How long a payout may wait for a rail (RAIL_QUEUE_MAX_AGE_S), in ms. */
  railQueueMaxAgeMs: number;
}

/**
 * Resolves payments the rail has not closed (`submitted`, `unknown`) by ASKING the rail with our
 * reference: it never re-sends a payout whose outcome is unknown. The one case it submits is a payment
 * the rail has never heard of (the process died between our commit and the rail call); the submit is
 * idempotent at the rail by that same reference. Each payment is asked on its own backoff
 * (`check_attempts`), and after REAPER_CHECK_ATTEMPTS_MAX questions it is left unresolved, logged and
 * counted, never invented. What the rail says is applied by the outcome commits (per tenant, in the
 * lock order); one payment's failure never fails the others — its lease, which outlives the rail's
 * timeout by construction, expires and it is asked again.
 *
 * Each payment is asked of ITS rail (the one it records), never of another: the reaper cannot prove
 * after the fact that a rail did not receive a transfer, so it never moves a payment to another rail.
 * A payment whose rail does not answer waits for it (its questions fail and are asked again).
 *
 * At the end of each pass it applies the rail's own notifications (rail-notifications.ts).
 *
 * Every question to the rail is bounded by the rail timeout (`bounded`): a rail that stops answering
 * ends the pass's questions instead of holding the pass, and the payments it did not answer for are
 * asked again when their leases expire.
 */
export class Reaper {
  private readonly leaseMs: number;
  /** From a payment's batch start, how long its payout path may still be sending it. */
  private readonly sendEndsMs: number;
  private readonly rails: RailSet;
  private readonly railQueue: RailQueue;
  private readonly notifications: RailNotifications;
  /** Payments the rail queue admitted this pass: never sent before, so no payout path is sending them. */
  private admittedNow = new Set<string>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    rails: RailsByMode | RailSet,
    private readonly outcomes: PaymentOutcomes,
    private readonly settings: ReaperSettings,
    private readonly log?: FastifyBaseLogger,
    private readonly metrics?: MoneyMetrics,
  ) {
    this.rails = railSetOf(rails);
    this.leaseMs = settings.railTimeoutMs + REAPER_LEASE_MARGIN_MS;
    this.sendEndsMs = sendEndsMs({ reaperIntervalMs: settings.intervalMs, railTimeoutMs: settings.railTimeoutMs });
    this.railQueue = new RailQueue(db, clock, this.rails, outcomes, settings.railQueueMaxAgeMs, log);
    this.notifications = new RailNotifications(db, clock, this.rails, outcomes, settings.railTimeoutMs, log, metrics);
  }

  /**
   * One bounded pass: true when it filled a batch (more work is probably waiting); otherwise how long
   * until the next payment falls due (at least REAPER_PAUSE_MIN_MS; the loop sleeps its interval at
   * most), or false when none will.
   */
  async runOnce(): Promise<PassOutcome> {
    // Waiting payouts a rail admits now become due first, so this pass's claim sends them.
    const queue = await this.railQueue.runOnce();
    this.admittedNow = new Set(queue.admitted.map((payment) => payment.id));
    const now = this.clock.now();
    const claimed = await claimUnresolvedPayments(
      this.db,
      now,
      new Date(now.getTime() + this.leaseMs),
      REAPER_BATCH_MAX,
    );
    // Answers are applied as they come: the outcome commits fill up while other questions are out.
    const applied: Array<Promise<void>> = [];
    const { known, unanswered } = await this.lookUpInBulk(claimed);
    const asked = claimed.filter((payment) => !unanswered.has(payment));
    // The payments a silent bulk lookup left are questions that led nowhere, as a failed single one.
    if (asked.length < claimed.length) this.metrics?.resolution('error', claimed.length - asked.length);
    // The rail each payment the rail has not heard of is on now, read once for the pass: those are the
    // ones it may send (nothing else moves a payment between this read and its send: the payout path
    // moves only a payment it is still sending, which `ask` leaves alone).
    const railsNow = await railsOfPayments(
      this.db,
      asked.filter((payment) => known.get(payment)?.status === 'not_found'),
    );
    await forEachBounded(asked, REAPER_RAIL_CONCURRENCY, async (payment) => {
      const report = await this.ask(payment, known.get(payment), railsNow);
      if (report === undefined) this.metrics?.resolution('error');
      else if ('deferUntil' in report) applied.push(this.defer(payment, report.deferUntil));
      else applied.push(this.apply(payment, report));
    });
    await Promise.all(applied);
    const notified = await this.notifications.runOnce();
    if (claimed.length === REAPER_BATCH_MAX || notified === NOTIFICATIONS_BATCH_MAX || queue.full) return true;
    // Without this, a payment falling due just after a pass waits the whole interval: a payroll's
    // last payouts settled about a second after their first question was due.
    const next = earliest(await nextResolutionDue(this.db), await this.railQueue.nextDue());
    return next === undefined ? false : Math.max(REAPER_PAUSE_MIN_MS, next.getTime() - this.clock.now().getTime());
  }

  /**
   * The statuses a rail can give in one call (RailAdapter.lookupMany), for every claimed payment of
   * that rail and mode: one question per rail per pass instead of one per payment. A payment missing
   * from the answer (no bulk lookup, or the call failed) is asked on its own by `ask`.
   */
  private async lookUpInBulk(
    claimed: readonly PaymentRow[],
  ): Promise<{ known: Map<PaymentRow, RailLookup>; unanswered: Set<PaymentRow> }> {
    const known = new Map<PaymentRow, RailLookup>();
    const unanswered = new Set<PaymentRow>();
    const groups = new Map<RailAdapter, { test: PaymentRow[]; live: PaymentRow[] }>();
    for (const payment of claimed) {
      const rail = this.rails.railOf(payment);
      if (!rail?.lookupMany) continue;
      const group = groups.get(rail) ?? { test: [], live: [] };
      group[payment.mode].push(payment);
      groups.set(rail, group);
    }
    for (const [rail, byMode] of groups) {
      for (const mode of ['test', 'live'] as const) {
        const payments = byMode[mode];
        if (payments.length === 0) continue;
        try {
          const answers = await bounded(
            rail.lookupMany!(
              payments.map((payment) => payment.id),
              mode,
            ),
            this.settings.railTimeoutMs,
            `a bulk lookup of ${payments.length}`,
          );
          assert(
            answers.length === payments.length,
            `the rail answered ${answers.length} of ${payments.length} lookups`,
          );
          this.rails.answered(rail.name);
          payments.forEach((payment, i) => known.set(payment, answers[i]!));
        } catch (error) {
          this.rails.unanswered(rail.name, error);
          if (error instanceof RailQuestionTimeout) {
            // A rail that does not answer one question will not answer 200: this pass leaves them,
            // and each is asked again when its lease expires.
            for (const payment of payments) unanswered.add(payment);
            this.log?.warn(
              { rail: rail.name, mode, payments: payments.length, message: error.message },
              'reaper: the rail did not answer the bulk lookup; asking again later',
            );
          } else {
            this.log?.warn(
              {
                rail: rail.name,
                mode,
                payments: payments.length,
                code: pgErrorCode(error),
                message: (error as Error)?.message,
              },
              'reaper: the bulk lookup failed; asking one by one',
            );
          }
        }
      }
    }
    return { known, unanswered };
  }

  /**
   * What the rail says about a payment (`known`: what a bulk lookup already said); undefined when it
   * could not be asked (asked again later); `deferUntil` when the rail has not heard of a payment the
   * payout path may still be sending (the first look can come before the send has ended: a short
   * sandbox settle delay): only the payout path may send it until then.
   */
  private async ask(
    payment: PaymentRow,
    known: RailLookup | undefined,
    railsNow: ReadonlyMap<string, string | null>,
  ): Promise<RailReport | { deferUntil: Date } | undefined> {
    const rail = this.rails.railOf(payment);
    if (!rail) {
      // Its rail is not configured in this process (removed, or a worker configured unlike the API):
      // asked again later, and never of another rail.
      this.log?.warn(
        { paymentId: payment.id, rail: payment.rail, mode: payment.mode },
        'reaper: the payment is on a rail this process does not have; configure it to resolve the payment',
      );
      return undefined;
    }
    try {
      const lookup = known ?? (await this.lookUp(rail, payment));
      if (lookup.status !== 'not_found') return lookup;
      const sendEnds = payment.created_at.getTime() + this.sendEndsMs;
      // A payout batch's payment has no payout path sending it: the reaper is its sender.
      const beingSent =
        payment.status === 'submitted' &&
        payment.batch_id === null &&
        !this.admittedNow.has(payment.id) &&
        this.clock.now().getTime() < sendEnds;
      if (beingSent) return { deferUntil: new Date(sendEnds) };
      // Committed but never sent (a payout batch's, or the payout path died first): send it now, by the same reference, to
      // the rail it is on now (the payout path may have moved it since this pass claimed it).
      if (payment.check_attempts > RESEND_QUESTIONS_MAX) {
        // The same answer each time: one anomaly per payment (its dedup key is what the rail said).
        return {
          status: 'unconfirmed',
          doubt: {
            kind: 'resend_exhausted',
            theirs: { rail: rail.name, answer: 'not_found', resendsMax: String(RESEND_QUESTIONS_MAX) },
          },
        };
      }
      assert(payment.sender, `payment ${payment.id} reached the rail without a sender`);
      const railNow = railsNow.has(payment.id) ? railsNow.get(payment.id) : await railOfPayment(this.db, payment);
      if (railNow !== payment.rail) return undefined;
      const sent = await callRail(rail, transferOf(payment, payment.sender), this.settings.railTimeoutMs);
      this.rails.sent(rail.name, sent);
      // Provably not received: nothing to record; it is sent again when its rail answers.
      return sent.status === 'not_received' ? undefined : sent;
    } catch (error) {
      this.failed(payment, 'ask the rail about', error);
      return undefined;
    }
  }

  private async lookUp(rail: RailAdapter, payment: PaymentRow): Promise<RailLookup> {
    try {
      const lookup = await bounded(rail.lookup(payment.id, payment.mode), this.settings.railTimeoutMs, 'a lookup');
      this.rails.answered(rail.name);
      return lookup;
    } catch (error) {
      this.rails.unanswered(rail.name, error);
      throw error;
    }
  }

  private async defer(payment: PaymentRow, until: Date): Promise<void> {
    try {
      await deferResolution(this.db, payment, until);
    } catch (error) {
      this.failed(payment, 'defer the question about', error);
    }
  }

  private async apply(payment: PaymentRow, report: RailReport): Promise<void> {
    try {
      const applied = await this.outcomes.applyWithDetail(payment, report, {
        actor: 'reaper',
        settledReason: 'resolved_by_reaper',
        recheck: 'backoff',
      });
      this.metrics?.resolution(resolutionOf(applied.payment.status, applied.moved));
    } catch (error) {
      this.metrics?.resolution('error');
      this.failed(payment, 'record what the rail said about', error);
    }
  }

  private failed(payment: PaymentRow, what: string, error: unknown): void {
    rethrowInvariant(error);
    this.log?.warn(
      { paymentId: payment.id, code: pgErrorCode(error), message: (error as Error)?.message },
      `reaper: could not ${what} a payment; it is asked again when its lease expires`,
    );
  }
}

function earliest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a.getTime() <= b.getTime() ? a : b;
}

function resolutionOf(status: PaymentRow['status'], moved: boolean): ResolutionOutcome {
  if (status === 'submitted' || status === 'unknown') return 'unresolved';
  if (!moved) return 'already_resolved';
  return status === 'settled' || status === 'failed' || status === 'reversed' ? status : 'already_resolved';
}
