// The payout commit: the committer runs it per tenant, one transaction for up to PAYOUT_COMMIT_MAX
// payouts. It locks (db/commit/payout-locks.ts), lets the domain decide (domain/commit/payout-decision.ts), and writes
// what was decided in one statement: payments, quote consumptions, ledger entries, limit usage, outbox
// events and the answers of the keys.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Queryable, TransactionHandle } from '../../db/database.ts';
import { lockPayoutCommit } from '../../db/commit/payout-locks.ts';
import { sortedIds } from '../../db/commit/lock-rows.ts';
import { StaleCommitRead } from '../../db/commit/transaction.ts';
import { findBeneficiaryIdsByIdentity, identityKeyOf } from '../../db/repositories/beneficiaries.ts';
import {
  writePayoutCommit,
  writePayoutRegistrations,
  type PayoutCommitWrite,
  type PayoutRegistrations,
} from '../../db/commit/payout-commit.ts';
import type { PayoutQuote } from '../../db/repositories/payout-reads.ts';
import {
  insertedPayment,
  type BeneficiarySnapshot,
  type NewPayment,
  type PaymentRow,
} from '../../db/repositories/payments.ts';
import type { BeneficiaryDetails } from '../../domain/beneficiary.ts';
import { businessDate } from '../../domain/caracas-time.ts';
import type { Clock } from '../../domain/clock.ts';
import { creditCeiling } from '../../domain/credit.ts';
import { ApiError } from '../../domain/errors.ts';
import { isStoredStatus, type StoredKey } from '../../domain/idempotency.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { Metadata } from '../../domain/metadata.ts';
import { parseRate, railFloorMinor } from '../../domain/money.ts';
import type { Partition, Mode } from '../../domain/partition.ts';
import { eventPayload, failureMessage, STATUS_MESSAGES } from '../../domain/payment-messages.ts';
import type { LedgerEntry } from '../../domain/ledger.ts';
import {
  decidePayoutCommit,
  lockPlanOf,
  type PayoutCommitDecision,
  type PayoutCommitState,
  type PayoutCandidate,
  type PayoutRefusal,
} from '../../domain/commit/payout-decision.ts';
import type { Sender } from '../../domain/sender.ts';
import { keyHeldMs, type SendTiming } from '../../domain/send-schedule.ts';
import type { CommitLane } from './committer.ts';
import type { LimitRuleSource } from '../limits.ts';
import type { MoneyMetrics } from '../money-metrics.ts';
import { keyInProgress, keyReused, refusalError } from '../payout-refusals.ts';
import type { WriterAnswer } from './writer-answer.ts';
import { payoutAnswerBody } from '../payout-answer.ts';
import { assert } from '../../domain/assert.ts';

/** The most payouts of one tenant in one transaction. */
const PAYOUT_COMMIT_MAX = 128;

/** A payout ready for its commit: everything decided that needs no lock. */
export interface PayoutJob {
  /** Its beneficiary id is the registered one, or resolved in the commit for an inline beneficiary. */
  candidate: PayoutCandidate;
  /** An inline beneficiary, registered (or updated) by the commit if the payout is not refused. */
  inline: { details: BeneficiaryDetails; newId: string } | undefined;
  /** A sender block given with a customerId: stored for the customer by the commit. */
  customerSender: { customerId: string; sender: Sender } | undefined;
  requestId: string;
  /** The API key making the payout. */
  createdByKeyId: string;
  quote: PayoutQuote;
  beneficiary: BeneficiarySnapshot;
  sender: Sender | undefined;
  methodRequested: Instrument;
  methodChanged: boolean;
  /** The instrument used, null when routing failed. */
  methodUsed: Instrument | null;
  routeFailureMessage: string | null;
  rail: string | null;
  /**
   * No rail may take it now (its rails' breakers are open): accepted and charged as any other, it
   * waits `pending` (`awaiting_rail`) and the reaper sends it once its rail admits one.
   */
  waitsForRail: boolean;
  /** The payout's own metadata ({} when none was sent); an inline beneficiary's travels in `inline`. */
  metadata: Metadata;
  /**
   * An item of a payout batch (services/payout-batches.ts): its payment names the batch, the reaper
   * sends it (the batch's answer does not wait for the rail), its key (derived from the item's
   * reference) records the payment at once, and a refusal frees the key, so that the reference can
   * pay once the cause is gone.
   */
  batch?: { id: string; item: number };
}

/** What a commit decided for one payout, for the log and the metrics once it has committed. */
type PayoutTally =
  | { status: 'submitted'; paymentId: string }
  | { status: 'pending'; paymentId: string }
  | { status: 'failed'; paymentId: string; reason: string }
  | { status: 'refused'; code: string };

type PayoutResult =
  /** Committed and charged: it goes to the rail now. */
  | { kind: 'accepted'; payment: PaymentRow; commitStartedAt: Date }
  /** Its answer is final and stored under the key (a failure before the rail, a refusal). */
  | { kind: 'answered'; answer: WriterAnswer; tally?: PayoutTally }
  /** An error that is not stored (the key stays free, or belongs to another request). */
  | { kind: 'error'; error: ApiError; tally?: PayoutTally }
  /** The key already names another request's outcome. */
  | { kind: 'key_taken'; stored: StoredKey };

/** One payout of a commit, as its decision is recorded. */
interface DecidedPayout {
  partition: Partition;
  job: PayoutJob;
  candidate: PayoutCandidate;
}

/** The status reason of a payout that waits for a rail to admit it (`pending`). */
const AWAITING_RAIL = 'awaiting_rail';

function acceptedTally(payment: PaymentRow): PayoutTally {
  return { status: payment.status === 'pending' ? 'pending' : 'submitted', paymentId: payment.id };
}

/** What a payout's first transition records about its instrument. */
function transitionMetadataOf(job: PayoutJob): Record<string, unknown> {
  return { methodRequested: job.methodRequested, methodUsed: job.methodUsed };
}

/** The payout commit: locks (lock order), decides (domain), writes (one statement). */
export class PayoutLane implements CommitLane<PayoutJob, PayoutResult> {
  readonly name = 'payout';
  readonly commitMax = PAYOUT_COMMIT_MAX;

  constructor(
    private readonly clock: Clock,
    private readonly rules: LimitRuleSource,
    private readonly settings: SendTiming & { idempotencyTtlMs: number },
    /** Per mode, how long after the commit the reaper first asks about an accepted payout (firstLookMs). */
    private readonly firstLook: Readonly<Record<Mode, number>>,
    private readonly log?: FastifyBaseLogger,
    private readonly metrics?: MoneyMetrics,
  ) {}

  /** A transaction of batch items only: a single payout among them makes it a request's. */
  inBackground(jobs: readonly PayoutJob[]): boolean {
    return jobs.every((job) => job.batch !== undefined);
  }

  /**
   * One info line per committed commit, not per payout: at load a commit carries up to PAYOUT_COMMIT_MAX
   * payouts, so the log costs one write per transaction, and every id is still in it. Written after
   * the commit, so it never tells of a payout that was rolled back. Ids and reasons only.
   */
  afterCommit(partition: Partition, _jobs: readonly PayoutJob[], results: readonly PayoutResult[]): void {
    const accepted: string[] = [];
    const failed: Array<{ paymentId: string; reason: string }> = [];
    const refused: Record<string, number> = {};
    for (const result of results) {
      const tally =
        result.kind === 'accepted'
          ? acceptedTally(result.payment)
          : result.kind === 'key_taken'
            ? undefined
            : result.tally;
      if (!tally) continue;
      if (tally.status === 'submitted') {
        accepted.push(tally.paymentId);
        this.metrics?.payoutStatus('submitted', 'ledger_committed');
      } else if (tally.status === 'pending') {
        accepted.push(tally.paymentId);
        this.metrics?.payoutStatus('pending', AWAITING_RAIL);
      } else if (tally.status === 'failed') {
        failed.push({ paymentId: tally.paymentId, reason: tally.reason });
        this.metrics?.payoutStatus('failed', tally.reason);
      } else {
        refused[tally.code] = (refused[tally.code] ?? 0) + 1;
        this.metrics?.payoutStatus('refused', tally.code);
      }
    }
    const refusals = Object.values(refused).reduce((sum, n) => sum + n, 0);
    if (accepted.length + failed.length + refusals === 0) return;
    this.log?.info(
      { tenantId: partition.tenantId, mode: partition.mode, accepted, failed, refused },
      `payouts committed: ${accepted.length} accepted, ${failed.length} failed before the rail, ${refusals} refused`,
    );
  }

  async run(tx: TransactionHandle, partition: Partition, jobs: readonly PayoutJob[]): Promise<PayoutResult[]> {
    const now = this.clock.now();
    const { state, candidates } = await this.lock(tx, partition, jobs, now);
    const decided = decidePayoutCommit(state, candidates);
    const { write, registrations, results } = this.record(partition, jobs, candidates, decided, state);
    const registers =
      registrations.beneficiaries.length + registrations.failures.length + registrations.customers.length > 0;
    // Usually the write is the commit's last statement: it then goes out with the COMMIT.
    await writePayoutCommit(tx, partition, write, { last: !registers });
    if (!registers) return results;
    const registered = await writePayoutRegistrations(tx, partition, registrations);
    for (const b of registrations.beneficiaries) {
      // Registered meanwhile by another request: its id is not the one the commit locked counters for.
      if (registered.get(identityKeyOf(b.details)) !== b.expectedId)
        throw new StaleCommitRead(`beneficiary ${identityKeyOf(b.details)}`);
    }
    return results;
  }

  /** Takes the commit's locks (db/commit/payout-locks.ts) and reads what its decision needs. */
  private async lock(
    tx: Queryable,
    partition: Partition,
    jobs: readonly PayoutJob[],
    now: Date,
  ): Promise<{ state: PayoutCommitState; candidates: PayoutCandidate[] }> {
    const day = businessDate(now);
    const { rules, epoch } = await this.rules.ruleSet(tx);
    const inlineIds = await this.resolveInlineBeneficiaries(tx, partition, jobs);
    const candidates = jobs.map((j) =>
      j.inline ? { ...j.candidate, beneficiaryId: inlineIds.get(identityKeyOf(j.inline.details))! } : j.candidate,
    );
    const plan = lockPlanOf(partition.tenantId, rules, candidates);
    // The key is held until the answer is recorded: the send window, the rail's timeout, a margin.
    const lockedUntil = new Date(now.getTime() + keyHeldMs(this.settings));
    const keys = new Map<string, { key: string; fingerprint: string; paymentId: string; lockedUntil: Date }>();
    for (const c of candidates)
      if (!keys.has(c.key))
        keys.set(c.key, { key: c.key, fingerprint: c.fingerprint, paymentId: c.paymentId, lockedUntil });
    const held = await lockPayoutCommit(tx, partition, {
      now,
      expiresAt: new Date(now.getTime() + this.settings.idempotencyTtlMs),
      keys: [...keys.values()].sort((a, b) => (a.key < b.key ? -1 : 1)),
      quoteIds: sortedIds(candidates.map((c) => c.quoteId)),
      day,
      counters: plan.counters,
      accounts: plan.accounts,
      monthly: plan.monthly,
      monthStart: `${day.slice(0, 7)}-01`,
    });
    const tenant = held.tenant;
    assert(tenant, `tenant ${partition.tenantId} has no row`);
    if (held.ruleEpoch !== epoch) {
      // A rule changed since these were read: decide again with the current ones.
      this.rules.forget();
      throw new StaleCommitRead('limit rules');
    }
    if (held.usdMarket === undefined)
      throw new ApiError('rate_unavailable', 'No USD/BS rate is available to compute the rail floor; retry later.', {
        asset: 'USD',
      });
    const state: PayoutCommitState = {
      tenantId: partition.tenantId,
      now,
      day,
      funding: tenant.creditEnabled ? 'credit_receivable' : 'prefunding',
      creditLimitOf: (asset) => creditCeiling(tenant.creditLimit, tenant.creditLimits, asset),
      floorMinor: railFloorMinor(parseRate(held.usdMarket)),
      rules,
      keys: held.keys,
      quotes: held.quotes,
      counters: held.counters,
      pastMonth: held.pastMonth,
      balances: held.balances,
    };
    return { state, candidates };
  }

  /** What the decisions write, register and answer (no I/O). */
  private record(
    partition: Partition,
    jobs: readonly PayoutJob[],
    candidates: readonly PayoutCandidate[],
    decided: PayoutCommitDecision,
    state: PayoutCommitState,
  ): { write: PayoutCommitWrite; registrations: PayoutRegistrations; results: PayoutResult[] } {
    const write: PayoutCommitWrite = {
      now: state.now,
      consumedQuotes: [],
      payments: [],
      transitions: [],
      entries: [],
      usage: { day: state.day, rows: [...decided.usage.values()] },
      accountDeltas: [...decided.accountDeltas.values()],
      events: [],
      keyAnswers: [],
      keyReleases: [],
    };
    const registrations = new Registrations();
    const results = decided.decisions.map((decision, i): PayoutResult => {
      const payout = { partition, job: jobs[i]!, candidate: candidates[i]! };
      switch (decision.kind) {
        case 'accept':
          registrations.add(payout.job, payout.candidate.beneficiaryId, null);
          return this.recordAccepted(write, payout, decision.entry, state);
        case 'fail':
          registrations.add(payout.job, payout.candidate.beneficiaryId, decision.reason);
          return this.recordFailed(write, payout, decision, state.now);
        case 'refuse':
          return this.recordRefused(write, payout, decision.refusal);
        case 'key_taken':
          return { kind: 'key_taken', stored: decision.stored };
        case 'duplicate':
          return { kind: 'error', error: decision.sameRequest ? keyInProgress() : keyReused() };
      }
    });
    return { write, registrations: registrations.build(), results };
  }

  /** An accepted payout: its payment (submitted), its quote consumed, its entry; it goes to the rail after the commit. */
  private recordAccepted(
    write: PayoutCommitWrite,
    { partition, job, candidate: c }: DecidedPayout,
    entry: LedgerEntry,
    state: PayoutCommitState,
  ): PayoutResult {
    const { now } = state;
    const waits = job.waitsForRail;
    const payment = newPayment(partition, job, c, now, {
      status: waits ? 'pending' : 'submitted',
      reason: waits ? AWAITING_RAIL : null,
      message: waits ? STATUS_MESSAGES.pending : STATUS_MESSAGES.submitted,
      funding: state.funding,
      usageDay: state.day,
      // The reaper asks once the rail usually has the outcome; a crash between this commit and the
      // rail call is found then too, never before the payout path's own send has ended. A commit's
      // payout has no payout path sending it, and a waiting one none either: the reaper sends it.
      nextCheckAt: job.batch || waits ? now : new Date(now.getTime() + this.firstLook[partition.mode]),
    });
    write.payments.push(payment);
    // Nobody records a batch item's answer after the rail call: its key names the payment now.
    const row = insertedPayment(payment);
    if (job.batch) write.keyAnswers.push({ key: c.key, status: 201, body: payoutAnswerBody.payment(row) });
    write.consumedQuotes.push({ quoteId: c.quoteId, paymentId: c.paymentId });
    write.transitions.push({
      paymentId: c.paymentId,
      to: waits ? 'pending' : 'submitted',
      reason: waits ? AWAITING_RAIL : 'ledger_committed',
      metadata: transitionMetadataOf(job),
    });
    write.entries.push({ id: randomUUID(), kind: entry.kind, paymentId: c.paymentId, postings: entry.postings });
    return { kind: 'accepted', payment: row, commitStartedAt: now };
  }

  /** A payout failed before the rail: its payment (failed), its quote consumed, its event, and its answer stored under the key. */
  private recordFailed(
    write: PayoutCommitWrite,
    { partition, job, candidate: c }: DecidedPayout,
    decision: { reason: string; floorMinor?: bigint },
    now: Date,
  ): PayoutResult {
    const message =
      decision.reason === 'amount_below_rail_minimum'
        ? `${failureMessage(decision.reason)} Floor now: ${decision.floorMinor} minor units.`
        : ((decision.reason === c.routeFailure ? job.routeFailureMessage : null) ?? failureMessage(decision.reason));
    const payment = newPayment(partition, job, c, now, {
      status: 'failed',
      reason: decision.reason,
      message,
      funding: null,
      usageDay: null,
      nextCheckAt: null,
    });
    const row = insertedPayment(payment);
    const body = payoutAnswerBody.payment(row);
    write.payments.push(payment);
    write.consumedQuotes.push({ quoteId: c.quoteId, paymentId: c.paymentId });
    write.transitions.push({
      paymentId: c.paymentId,
      to: 'failed',
      reason: decision.reason,
      metadata: transitionMetadataOf(job),
    });
    write.events.push({
      paymentId: c.paymentId,
      type: 'payment.failed',
      payload: eventPayload(row, 'payment.failed', decision.reason),
    });
    write.keyAnswers.push({ key: c.key, status: 201, body });
    return {
      kind: 'answered',
      answer: { status: 201, body, replayed: false },
      tally: { status: 'failed', paymentId: c.paymentId, reason: decision.reason },
    };
  }

  /** A refused payout: its error stored under the key, or the key freed when that error is not one to store. */
  private recordRefused(
    write: PayoutCommitWrite,
    { job, candidate: c }: DecidedPayout,
    refusal: PayoutRefusal,
  ): PayoutResult {
    const error = refusalError(refusal);
    const tally = { status: 'refused', code: error.code } as const;
    if (!isStoredStatus(error.status) || job.batch) {
      write.keyReleases.push(c.key);
      return { kind: 'error', error, tally };
    }
    const body = payoutAnswerBody.error(error, job.requestId);
    write.keyAnswers.push({ key: c.key, status: error.status, body });
    return { kind: 'answered', answer: { status: error.status, body, replayed: false }, tally };
  }

  /**
   * The id of each inline beneficiary: the registered one with its identity, or a new one (the same for
   * every payout of the commit that sends that identity). Read without a lock; a registration racing
   * the commit is caught when the commit registers it (StaleCommitRead: the commit runs again).
   */
  private async resolveInlineBeneficiaries(
    tx: Queryable,
    partition: Partition,
    jobs: readonly PayoutJob[],
  ): Promise<Map<string, string>> {
    const inline = jobs.flatMap((j) => (j.inline ? [j.inline] : []));
    if (inline.length === 0) return new Map();
    const ids = await findBeneficiaryIdsByIdentity(
      tx,
      partition.tenantId,
      partition.mode,
      inline.map((i) => i.details),
    );
    for (const i of inline) if (!ids.has(identityKeyOf(i.details))) ids.set(identityKeyOf(i.details), i.newId);
    return ids;
  }
}

/** What a commit registers for the payouts it accepted or failed, de-duplicated and sorted for the lock order. */
class Registrations {
  private readonly beneficiaries = new Map<string, PayoutRegistrations['beneficiaries'][number]>();
  private readonly failures = new Map<string, string>();
  private readonly customers = new Map<string, PayoutRegistrations['customers'][number]>();

  add(job: PayoutJob, beneficiaryId: string, failureReason: string | null): void {
    if (job.inline) {
      const key = identityKeyOf(job.inline.details);
      const earlier = this.beneficiaries.get(key);
      // The latest details sent win, metadata the latest sent (as one registration after the other
      // would leave it); a failure reason is kept once seen.
      const metadata = job.inline.details.metadata ?? earlier?.details.metadata;
      const details = metadata === undefined ? job.inline.details : { ...job.inline.details, metadata };
      this.beneficiaries.set(key, {
        expectedId: beneficiaryId,
        details,
        failureReason: failureReason ?? earlier?.failureReason ?? null,
      });
    } else if (failureReason) {
      this.failures.set(beneficiaryId, failureReason);
    }
    if (job.customerSender) this.customers.set(job.customerSender.customerId, job.customerSender);
  }

  build(): PayoutRegistrations {
    const sorted = <T>(map: Map<string, T>) => [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const beneficiaries = sorted(this.beneficiaries).map(([, b]) => b);
    const failures: PayoutRegistrations['failures'] = [];
    for (const [beneficiaryId, reason] of sorted(this.failures)) {
      // Also registered inline in this commit: its failure is written with that registration.
      const inline = beneficiaries.find((b) => b.expectedId === beneficiaryId);
      if (inline) inline.failureReason = reason;
      else failures.push({ beneficiaryId, reason });
    }
    return { beneficiaries, failures, customers: sorted(this.customers).map(([, c]) => c) };
  }
}

function newPayment(
  partition: Partition,
  job: PayoutJob,
  c: PayoutCandidate,
  now: Date,
  state: {
    status: 'submitted' | 'pending' | 'failed';
    reason: string | null;
    message: string;
    funding: 'prefunding' | 'credit_receivable' | null;
    usageDay: string | null;
    nextCheckAt: Date | null;
  },
): NewPayment {
  return {
    tenant_id: partition.tenantId,
    mode: partition.mode,
    id: c.paymentId,
    customer_id: c.customerId,
    beneficiary_id: c.beneficiaryId,
    quote_id: c.quoteId,
    status: state.status,
    status_reason: state.reason,
    message: state.message,
    source_asset: job.quote.spend_asset,
    source_amount: job.quote.spend_amount,
    payout_asset: job.quote.deliver_asset,
    payout_amount: job.quote.deliver_amount,
    fee_amount: state.status === 'failed' ? 0n : job.quote.fee_amount,
    method: job.methodUsed,
    method_requested: job.methodRequested,
    method_changed: job.methodChanged,
    beneficiary: job.beneficiary,
    sender: job.sender ? { ...job.sender } : null,
    rail: job.rail,
    next_check_at: state.nextCheckAt,
    usage_day: state.usageDay,
    funding_account: state.funding,
    created_at: now,
    metadata: job.metadata,
    created_by_key_id: job.createdByKeyId,
    batch_id: job.batch?.id ?? null,
  };
}
