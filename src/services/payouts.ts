import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { COALESCER_BOUNDS, Coalescer } from '../db/coalescer.ts';
import { pgErrorCode, type Database, type Queryable, type TransactionHandle } from '../db/database.ts';
import { lockPayoutBatch, sortedIds, StaleBatchRead } from '../db/lock-order.ts';
import { findBeneficiaryIdsByIdentity, identityKeyOf } from '../db/repositories/beneficiaries.ts';
import { recordPayoutAnswer } from '../db/repositories/payout-answers.ts';
import { writePayoutBatch, writePayoutRegistrations, type PayoutBatchWrite, type PayoutRegistrations } from '../db/repositories/payout-batch.ts';
import { readPayoutReferences, type PayoutBeneficiary, type PayoutQuote, type PayoutReads, type PayoutReferences } from '../db/repositories/payout-reads.ts';
import { findPayment, insertedPayment, type BeneficiarySnapshot, type NewPayment, type PaymentRow } from '../db/repositories/payments.ts';
import { findRate } from '../db/repositories/rates.ts';
import { validateBeneficiary, type BeneficiaryDetails, type BeneficiaryInput } from '../domain/beneficiary.ts';
import { businessDate } from '../domain/caracas-time.ts';
import type { Clock } from '../domain/clock.ts';
import { creditCeiling } from '../domain/credit.ts';
import { answerForStoredKey, isStoredStatus, type StoredKey } from '../domain/idempotency.ts';
import { NO_METADATA, type Metadata } from '../domain/metadata.ts';
import { parseRate, railFloorMinor } from '../domain/money.ts';
import { unknownReasonOf, type RailReport } from '../domain/outcome-decision.ts';
import { eventPayload, failureMessage, STATUS_MESSAGES } from '../domain/payment-messages.ts';
import {
  decidePayoutBatch,
  lockPlanOf,
  type PayoutBatchDecision,
  type PayoutBatchState,
  type PayoutCandidate,
  type PayoutRefusal,
} from '../domain/payout-decision.ts';
import { decideRoute } from '../domain/payout-route.ts';
import { validateSender, type Sender, type SenderInput } from '../domain/sender.ts';
import { ApiError, notFound, validationFailed, type FieldError } from '../domain/errors.ts';
import { limitExceeded } from './limit-errors.ts';
import type { BankCatalogue } from '../rails/catalogue.ts';
import type { RailAdapter, RailTransfer } from '../rails/rail.ts';
import type { BatchLane, Committer } from './committer.ts';
import type { LimitRuleSource } from './limits.ts';
import type { MoneyMetrics } from './money-metrics.ts';
import type { PaymentOutcomes } from './payment-outcomes.ts';
import type { WriterAnswer } from './writer-answer.ts';
import type { Partition, Mode } from '../domain/partition.ts';
import type { Instrument } from '../domain/instrument.ts';

/** The most payouts of one tenant in one transaction. */
export const PAYOUT_BATCH_MAX = 128;
/**
 * After the payout's answer should have been recorded, a retry with its key answers with the payment
 * as it stands (the request that held the key died or lost its connection after the commit).
 */
const ANSWER_MARGIN_MS = 5_000;
/** The shortest send window (see `sendWindowMs`). */
const SEND_WINDOW_MIN_MS = 1_000;

/**
 * How long after its batch began the payout path may still ask the rail to send; later (a slow batch,
 * a stalled process) it leaves the send to the reaper, which sends a payment the rail has not heard of
 * only after this window plus the rail's timeout (`sendEndsMs`). Both are measured from the batch's
 * start, so a payment is never sent by both.
 */
function sendWindowMs(settings: Pick<PayoutSettings, 'reaperIntervalMs'>): number {
  return Math.max(settings.reaperIntervalMs, SEND_WINDOW_MIN_MS);
}

/**
 * How long after its batch began (the payment's `created_at`) the payout path's own send may still be
 * running: until then a transfer the rail has not heard of may be on its way, and only the payout path
 * may send it.
 */
export function sendEndsMs(settings: Pick<PayoutSettings, 'reaperIntervalMs' | 'railTimeoutMs'>): number {
  return sendWindowMs(settings) + settings.railTimeoutMs;
}

/**
 * The reaper's first question after the rail's usual resolution time comes this much later: the rail
 * counts from its receipt of the transfer, a little after our commit. Asked too early, the rail answers
 * "processing" and the next question waits a whole reaper interval.
 */
export const FIRST_LOOK_MARGIN_MS = 250;

/**
 * How long after its batch began the reaper first asks the rail about an accepted payout: as soon as
 * the rail usually has the outcome (`resolvesWithinMs`), so that a short sandbox settle delay is a
 * short wait, and at the latest one reaper interval after the payout path's send has ended. A look
 * that comes while the send may still be running only asks: it never sends (see Reaper.ask).
 */
export function firstLookMs(settings: PayoutSettings, resolvesWithinMs?: number): number {
  return lookAfterResolution(resolvesWithinMs, sendEndsMs(settings) + settings.reaperIntervalMs);
}

/**
 * When the reaper next asks about a payout the rail answered without an outcome (`unknown`): one
 * reaper interval later, or sooner when the rail usually has the outcome by then. The rail has the
 * transfer, so an early question is only a question.
 */
export function unknownRecheckMs(settings: Pick<PayoutSettings, 'reaperIntervalMs'>, resolvesWithinMs?: number): number {
  return lookAfterResolution(resolvesWithinMs, settings.reaperIntervalMs);
}

/** Just after the rail usually has the outcome, and never later than `latestMs`. */
function lookAfterResolution(resolvesWithinMs: number | undefined, latestMs: number): number {
  return resolvesWithinMs === undefined ? latestMs : Math.min(resolvesWithinMs + FIRST_LOOK_MARGIN_MS, latestMs);
}

export interface PayoutRequest {
  quoteId: string;
  method: Instrument;
  methodPolicy?: 'preferred' | 'strict';
  beneficiaryId?: string;
  beneficiary?: BeneficiaryInput;
  customerId?: string;
  sender?: SenderInput;
  metadata?: Metadata;
}


export interface PayoutSettings {
  railTimeoutMs: number;
  reaperIntervalMs: number;
  idempotencyTtlMs: number;
}

/** Which rail serves each mode. Test mode is always the sandbox; live needs a configured provider. */
export type RailsByMode = { test: RailAdapter; live?: RailAdapter };

/** How answers are written: the bytes sent are the bytes stored under the key. */
export interface PayoutAnswers {
  payment(row: PaymentRow): string;
  error(error: ApiError, requestId: string): string;
}

/** A payout ready for its batch: everything decided that needs no lock. */
interface PayoutJob {
  /** Its beneficiary id is the registered one, or resolved in the batch for an inline beneficiary. */
  candidate: PayoutCandidate;
  /** An inline beneficiary, registered (or updated) by the batch if the payout is not refused. */
  inline: { details: BeneficiaryDetails; newId: string } | undefined;
  /** A sender block given with a customerId: stored for the customer by the batch. */
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
  /** The payout's own metadata ({} when none was sent); an inline beneficiary's travels in `inline`. */
  metadata: Metadata;
}

/** What a batch decided for one payout, for the log and the metrics once it has committed. */
type PayoutTally =
  | { status: 'submitted'; paymentId: string }
  | { status: 'failed'; paymentId: string; reason: string }
  | { status: 'refused'; code: string };

type PayoutResult =
  /** Committed and charged: it goes to the rail now. */
  | { kind: 'accepted'; payment: PaymentRow; batchStartedAt: Date }
  /** Its answer is final and stored under the key (a failure before the rail, a refusal). */
  | { kind: 'answered'; answer: WriterAnswer; tally?: PayoutTally }
  /** An error that is not stored (the key stays free, or belongs to another request). */
  | { kind: 'error'; error: ApiError; tally?: PayoutTally }
  /** The key already names another request's outcome. */
  | { kind: 'key_taken'; stored: StoredKey };

/**
 * POST /payouts. One writer: the payout batch (PayoutLane) records everything a payout decides in one
 * transaction — its Idempotency-Key with the payment it created, the payment (accepted, or failed
 * before the rail), the quote's consumption, the ledger entry, the limit usage and the outbox event —
 * so a retry with the same key after any crash finds the payment. Before the batch only what needs no
 * lock is checked (validation 400, unknown references 404, routing); every rule that reads state
 * (quote, limits, funds) is decided by domain/payout-decision.ts under the batch's locks. After the
 * commit the rail is called by our reference, and what it says goes through the outcome batch.
 */
export class PayoutService {
  private readonly lane: PayoutLane;
  private readonly reads: Coalescer<PayoutReferences, PayoutReads>;
  /** Per mode, when the reaper next asks about a payout the rail answered without an outcome. */
  private readonly unknownRecheck: Readonly<Record<Mode, number>>;
  private usdRateSeen = false;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly catalogue: BankCatalogue,
    private readonly rails: RailsByMode,
    private readonly outcomes: PaymentOutcomes,
    private readonly committer: Committer,
    rules: LimitRuleSource,
    private readonly settings: PayoutSettings,
    private readonly answers: PayoutAnswers,
    private readonly log?: FastifyBaseLogger,
    metrics?: MoneyMetrics,
  ) {
    const firstLook = { test: firstLookMs(settings, rails.test.resolvesWithinMs), live: firstLookMs(settings, rails.live?.resolvesWithinMs) };
    this.unknownRecheck = { test: unknownRecheckMs(settings, rails.test.resolvesWithinMs), live: unknownRecheckMs(settings, rails.live?.resolvesWithinMs) };
    this.lane = new PayoutLane(clock, rules, settings, firstLook, answers, log, metrics);
    this.reads = new Coalescer((items) => readPayoutReferences(db, items), COALESCER_BOUNDS);
  }

  /** `context.createdByKeyId`: the API key making the payout, stored with the payment. */
  async create(
    partition: Partition,
    request: PayoutRequest,
    context: { key: string; fingerprint: string; requestId: string; createdByKeyId: string },
  ): Promise<WriterAnswer> {
    const bankCodes = await this.bankCodes();
    const { inline, blockSender } = validate(request, bankCodes);

    const reads = await this.reads.submit({ ...partition, key: context.key, quoteId: request.quoteId, beneficiaryId: request.beneficiaryId, customerId: request.customerId });
    if (reads.key) {
      const answer = await this.answerFromKey(partition, reads.key, context.fingerprint);
      if (answer) return answer;
    }
    if (!reads.quote) throw notFound('quote');
    if (request.beneficiaryId && !reads.beneficiary) throw notFound('beneficiary');
    const customerId = customerOf(request.customerId, reads.quote.customer_id);
    const sender = blockSender ?? reads.customerSender ?? reads.defaultSender;
    await this.ensureUsdRate();

    const target = inline ? snapshotOfDetails(inline) : snapshotOf(reads.beneficiary!);
    const { methodUsed, methodChanged, routeFailure, rail } = await this.route(partition.mode, request, target, bankCodes);

    const quote = reads.quote;
    const job: PayoutJob = {
      candidate: {
        key: context.key,
        fingerprint: context.fingerprint,
        paymentId: randomUUID(),
        quoteId: quote.id,
        spend: { asset: quote.spend_asset, amount: quote.spend_amount },
        deliverAmount: quote.deliver_amount,
        feeAmount: quote.fee_amount,
        method: methodUsed ?? request.method,
        routeFailure: routeFailure?.reason ?? null,
        senderMissing: !sender,
        customerId: customerId ?? null,
        beneficiaryId: reads.beneficiary?.id ?? '',
      },
      inline: inline ? { details: inline, newId: randomUUID() } : undefined,
      customerSender: customerId && blockSender ? { customerId, sender: blockSender } : undefined,
      requestId: context.requestId,
      createdByKeyId: context.createdByKeyId,
      quote,
      beneficiary: target,
      sender,
      methodRequested: request.method,
      methodChanged,
      methodUsed,
      routeFailureMessage: routeFailure?.message ?? null,
      rail: rail?.name ?? null,
      metadata: request.metadata ?? NO_METADATA,
    };
    const result = await this.committer.submit(this.lane, partition, job);
    switch (result.kind) {
      case 'answered':
        return result.answer;
      case 'error':
        throw result.error;
      case 'key_taken': {
        const answer = await this.answerFromKey(partition, result.stored, context.fingerprint);
        if (!answer) throw new Error('invariant: a key taken in the batch was past its TTL');
        return answer;
      }
      case 'accepted':
        return this.deliver(result.payment, job, result.batchStartedAt);
    }
  }

  /** Which instrument can carry the payout, decided before any money moves (or why none can). */
  private async route(mode: Mode, request: PayoutRequest, target: BeneficiarySnapshot, bankCodes: Record<Instrument, ReadonlySet<string>>) {
    const rail = this.railFor(mode);
    if (!rail) {
      return { rail, methodUsed: null, methodChanged: false, routeFailure: { reason: 'no_route', message: 'No live rail provider is configured for this deployment.' } };
    }
    const route = decideRoute({
      requested: request.method,
      policy: request.methodPolicy ?? 'preferred',
      beneficiary: target,
      inCatalogue: (instrument, code) => bankCodes[instrument].has(code),
      railAvailable: {
        pago_movil: await rail.instrumentAvailable(target, 'pago_movil', request.method),
        transferencia: await rail.instrumentAvailable(target, 'transferencia', request.method),
      },
    });
    return route.ok
      ? { rail, methodUsed: route.method, methodChanged: route.methodChanged, routeFailure: null }
      : { rail, methodUsed: null, methodChanged: false, routeFailure: { reason: route.reason, message: route.message } };
  }

  /** What a key found before or in the batch answers, or undefined when it is past its TTL. */
  private async answerFromKey(partition: Partition, stored: StoredKey, fingerprint: string): Promise<WriterAnswer | undefined> {
    const answer = answerForStoredKey(stored, fingerprint, this.clock.now());
    switch (answer.kind) {
      case 'absent':
        return undefined;
      case 'mismatch':
        throw keyReused();
      case 'in_progress':
        throw keyInProgress();
      case 'replay':
        return { status: answer.status, body: answer.body, replayed: true };
      case 'payment': {
        const payment = await findPayment(this.db, partition.tenantId, partition.mode, answer.paymentId);
        if (!payment) throw new Error(`invariant: key names payment ${answer.paymentId}, which does not exist`);
        return { status: 201, body: this.answers.payment(payment), replayed: true };
      }
    }
  }

  /**
   * After the commit: the rail is asked to send, by our reference, with a hard timeout; what it says
   * is applied through the outcome batch. The payout path sends only within its window (sendWindowMs);
   * later the reaper sends it.
   */
  private async deliver(payment: PaymentRow, job: PayoutJob, batchStartedAt: Date): Promise<WriterAnswer> {
    let row = payment;
    let accepted = false;
    if (this.clock.now().getTime() - batchStartedAt.getTime() <= sendWindowMs(this.settings)) {
      const outcome = await callRail(this.railFor(payment.mode)!, transferOf(payment, job.sender!), this.settings.railTimeoutMs);
      if (outcome.status === 'processing') accepted = true;
      else {
        const applied = await this.outcomes.apply(payment, outcome, {
          actor: 'api',
          settledReason: 'rail_settled',
          recheck: { afterMs: this.unknownRecheck[payment.mode] },
        });
        row = answerOfSend(payment, outcome, applied);
      }
    }
    const body = this.answers.payment(row);
    // The key's answer and the rail's acceptance in one statement, with relaxed durability: the key
    // already names the payment (the batch wrote it), so if a crash loses this answer a retry answers
    // with the payment as it stands, and the reaper records the acceptance when it asks the rail.
    await recordPayoutAnswer(this.db, {
      scope: { tenantId: payment.tenant_id, mode: payment.mode, key: job.candidate.key },
      paymentId: payment.id,
      status: 201,
      body,
      acceptance: accepted ? { actor: 'api', metadata: { methodRequested: payment.method_requested, methodUsed: payment.method }, at: this.clock.now() } : undefined,
    }).catch((error) => this.logLost('the stored answer of the key and the rail acceptance', error));
    return { status: 201, body, replayed: false };
  }

  private logLost(what: string, error: unknown): void {
    this.log?.warn({ code: pgErrorCode(error), message: (error as Error)?.message }, `payout: could not record ${what}; it is recovered later`);
  }

  private railFor(mode: Mode): RailAdapter | undefined {
    return mode === 'test' ? this.rails.test : this.rails.live;
  }

  private async bankCodes(): Promise<Record<Instrument, ReadonlySet<string>>> {
    const [pagoMovil, transferencia] = await Promise.all([this.catalogue.codes('pago_movil'), this.catalogue.codes('transferencia')]);
    return { pago_movil: pagoMovil, transferencia };
  }

  /** The rail floor needs a USD rate; the batch reads the current one, this only checks there is one. */
  private async ensureUsdRate(): Promise<void> {
    if (this.usdRateSeen) return;
    if (!(await findRate(this.db, 'USD'))) {
      throw new ApiError('rate_unavailable', 'No USD/BS rate is available to compute the rail floor; retry later.', { asset: 'USD' });
    }
    this.usdRateSeen = true;
  }
}

/**
 * The caller's user a payout is for: the one its quote was made for, unless the payout names one
 * itself. Naming another user than the quote's is refused: limits and the stored sender would
 * belong to one user while the quote's price was asked for another.
 */
function customerOf(requested: string | undefined, quoted: string | null): string | undefined {
  if (requested !== undefined && quoted !== null && requested.toLowerCase() !== quoted.toLowerCase()) {
    throw validationFailed([{ field: 'customerId', message: `the quote was made for customerId ${quoted}: send that customerId, or leave it out to use the quote's` }]);
  }
  return requested ?? quoted ?? undefined;
}

function validate(request: PayoutRequest, bankCodes: Record<Instrument, ReadonlySet<string>>): { inline?: BeneficiaryDetails; blockSender?: Sender } {
  const errors: FieldError[] = [];
  if ((request.beneficiaryId === undefined) === (request.beneficiary === undefined)) {
    errors.push({ field: 'beneficiaryId', message: 'send exactly one of beneficiaryId (a registered beneficiary) or beneficiary (inline)' });
  }
  let inline: BeneficiaryDetails | undefined;
  if (request.beneficiary) {
    const checked = validateBeneficiary(request.beneficiary, bankCodes);
    if (checked.ok) inline = checked.beneficiary;
    else errors.push(...checked.errors.map((e) => ({ field: `beneficiary.${e.field}`, message: e.message })));
  }
  let blockSender: Sender | undefined;
  if (request.sender !== undefined) {
    const checked = validateSender(request.sender);
    if (checked.ok) blockSender = checked.sender;
    else errors.push(...checked.errors);
  }
  if (errors.length > 0) throw validationFailed(errors);
  return { inline, blockSender };
}

/** The payout batch: locks (lock order), decides (domain), writes (one statement). */
class PayoutLane implements BatchLane<PayoutJob, PayoutResult> {
  readonly name = 'payout';
  readonly batchMax = PAYOUT_BATCH_MAX;

  constructor(
    private readonly clock: Clock,
    private readonly rules: LimitRuleSource,
    private readonly settings: PayoutSettings,
    /** Per mode, how long after the batch the reaper first asks about an accepted payout (firstLookMs). */
    private readonly firstLook: Readonly<Record<Mode, number>>,
    private readonly answers: PayoutAnswers,
    private readonly log?: FastifyBaseLogger,
    private readonly metrics?: MoneyMetrics,
  ) {}

  /**
   * One info line per committed batch, not per payout: at load a batch carries up to PAYOUT_BATCH_MAX
   * payouts, so the log costs one write per transaction, and every id is still in it. Written after
   * the commit, so it never tells of a payout that was rolled back. Ids and reasons only.
   */
  afterCommit(partition: Partition, _jobs: readonly PayoutJob[], results: readonly PayoutResult[]): void {
    const accepted: string[] = [];
    const failed: Array<{ paymentId: string; reason: string }> = [];
    const refused: Record<string, number> = {};
    for (const result of results) {
      const tally = result.kind === 'accepted' ? ({ status: 'submitted', paymentId: result.payment.id } as const) : result.kind === 'key_taken' ? undefined : result.tally;
      if (!tally) continue;
      if (tally.status === 'submitted') {
        accepted.push(tally.paymentId);
        this.metrics?.payoutStatus('submitted', 'ledger_committed');
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
    const decided = decidePayoutBatch(state, candidates);
    const { write, registrations, results } = this.record(partition, jobs, candidates, decided, state);
    const registers = registrations.beneficiaries.length + registrations.failures.length + registrations.customers.length > 0;
    // Usually the write is the batch's last statement: it then goes out with the COMMIT.
    await writePayoutBatch(tx, partition, write, { last: !registers });
    if (!registers) return results;
    const registered = await writePayoutRegistrations(tx, partition, registrations);
    for (const b of registrations.beneficiaries) {
      // Registered meanwhile by another request: its id is not the one the batch locked counters for.
      if (registered.get(identityKeyOf(b.details)) !== b.expectedId) throw new StaleBatchRead(`beneficiary ${identityKeyOf(b.details)}`);
    }
    return results;
  }

  /** Takes the batch's locks (db/lock-order.ts) and reads what its decision needs. */
  private async lock(tx: Queryable, partition: Partition, jobs: readonly PayoutJob[], now: Date): Promise<{ state: PayoutBatchState; candidates: PayoutCandidate[] }> {
    const day = businessDate(now);
    const { rules, epoch } = await this.rules.ruleSet(tx);
    const inlineIds = await this.resolveInlineBeneficiaries(tx, partition, jobs);
    const candidates = jobs.map((j) => (j.inline ? { ...j.candidate, beneficiaryId: inlineIds.get(identityKeyOf(j.inline.details))! } : j.candidate));
    const plan = lockPlanOf(partition.tenantId, rules, candidates);
    // The key is held until the answer is recorded: the send window, the rail's timeout, a margin.
    const lockedUntil = new Date(now.getTime() + sendWindowMs(this.settings) + this.settings.railTimeoutMs + ANSWER_MARGIN_MS);
    const keys = new Map<string, { key: string; fingerprint: string; paymentId: string; lockedUntil: Date }>();
    for (const c of candidates) if (!keys.has(c.key)) keys.set(c.key, { key: c.key, fingerprint: c.fingerprint, paymentId: c.paymentId, lockedUntil });
    const held = await lockPayoutBatch(tx, partition, {
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
    if (!tenant) throw new Error(`invariant: tenant ${partition.tenantId} has no row`);
    if (held.ruleEpoch !== epoch) {
      // A rule changed since these were read: decide again with the current ones.
      this.rules.forget();
      throw new StaleBatchRead('limit rules');
    }
    if (held.usdMarket === undefined) throw new ApiError('rate_unavailable', 'No USD/BS rate is available to compute the rail floor; retry later.', { asset: 'USD' });
    const state: PayoutBatchState = {
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
    decided: PayoutBatchDecision,
    state: PayoutBatchState,
  ): { write: PayoutBatchWrite; registrations: PayoutRegistrations; results: PayoutResult[] } {
    const { now, day, funding } = state;
    const write: PayoutBatchWrite = {
      now,
      consumedQuotes: [],
      payments: [],
      transitions: [],
      entries: [],
      usage: { day, rows: [...decided.usage.values()] },
      accountDeltas: [...decided.accountDeltas.values()],
      events: [],
      keyAnswers: [],
      keyReleases: [],
    };
    const registrations = new Registrations();
    const results = decided.decisions.map((decision, i): PayoutResult => {
      const job = jobs[i]!;
      const c = candidates[i]!;
      if (decision.kind === 'accept' || decision.kind === 'fail') registrations.add(job, c.beneficiaryId, decision.kind === 'fail' ? decision.reason : null);
      const metadata = { methodRequested: job.methodRequested, methodUsed: job.methodUsed };
      switch (decision.kind) {
        case 'accept': {
          const payment = newPayment(partition, job, c, now, {
            status: 'submitted',
            reason: null,
            message: STATUS_MESSAGES.submitted,
            funding,
            usageDay: day,
            // The reaper asks once the rail usually has the outcome; a crash between this commit and the
            // rail call is found then too, never before the payout path's own send has ended.
            nextCheckAt: new Date(now.getTime() + this.firstLook[partition.mode]),
          });
          write.payments.push(payment);
          write.consumedQuotes.push({ quoteId: c.quoteId, paymentId: c.paymentId });
          write.transitions.push({ paymentId: c.paymentId, to: 'submitted', reason: 'ledger_committed', metadata });
          write.entries.push({ id: randomUUID(), kind: decision.entry.kind, paymentId: c.paymentId, postings: decision.entry.postings });
          return { kind: 'accepted', payment: insertedPayment(payment), batchStartedAt: now };
        }
        case 'fail': {
          const message =
            decision.reason === 'amount_below_rail_minimum'
              ? `${failureMessage(decision.reason)} Floor now: ${decision.floorMinor} minor units.`
              : (decision.reason === c.routeFailure ? job.routeFailureMessage : null) ?? failureMessage(decision.reason);
          const payment = newPayment(partition, job, c, now, { status: 'failed', reason: decision.reason, message, funding: null, usageDay: null, nextCheckAt: null });
          const row = insertedPayment(payment);
          const body = this.answers.payment(row);
          write.payments.push(payment);
          write.consumedQuotes.push({ quoteId: c.quoteId, paymentId: c.paymentId });
          write.transitions.push({ paymentId: c.paymentId, to: 'failed', reason: decision.reason, metadata });
          write.events.push({ paymentId: c.paymentId, type: 'payment.failed', payload: eventPayload(row, 'payment.failed', decision.reason) });
          write.keyAnswers.push({ key: c.key, status: 201, body });
          return { kind: 'answered', answer: { status: 201, body, replayed: false }, tally: { status: 'failed', paymentId: c.paymentId, reason: decision.reason } };
        }
        case 'refuse': {
          const error = refusalError(decision.refusal);
          const tally = { status: 'refused', code: error.code } as const;
          if (!isStoredStatus(error.status)) {
            write.keyReleases.push(c.key);
            return { kind: 'error', error, tally };
          }
          const body = this.answers.error(error, job.requestId);
          write.keyAnswers.push({ key: c.key, status: error.status, body });
          return { kind: 'answered', answer: { status: error.status, body, replayed: false }, tally };
        }
        case 'key_taken':
          return { kind: 'key_taken', stored: decision.stored };
        case 'duplicate':
          return { kind: 'error', error: decision.sameRequest ? keyInProgress() : keyReused() };
      }
    });
    return { write, registrations: registrations.build(), results };
  }


  /**
   * The id of each inline beneficiary: the registered one with its identity, or a new one (the same for
   * every payout of the batch that sends that identity). Read without a lock; a registration racing
   * the batch is caught when the batch registers it (StaleBatchRead: the batch runs again).
   */
  private async resolveInlineBeneficiaries(tx: Queryable, partition: Partition, jobs: readonly PayoutJob[]): Promise<Map<string, string>> {
    const inline = jobs.flatMap((j) => (j.inline ? [j.inline] : []));
    if (inline.length === 0) return new Map();
    const ids = await findBeneficiaryIdsByIdentity(tx, partition.tenantId, partition.mode, inline.map((i) => i.details));
    for (const i of inline) if (!ids.has(identityKeyOf(i.details))) ids.set(identityKeyOf(i.details), i.newId);
    return ids;
  }
}

/** What a batch registers for the payouts it accepted or failed, de-duplicated and sorted for the lock order. */
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
      this.beneficiaries.set(key, { expectedId: beneficiaryId, details, failureReason: failureReason ?? earlier?.failureReason ?? null });
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
      // Also registered inline in this batch: its failure is written with that registration.
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
    status: 'submitted' | 'failed';
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
  };
}

/** The HTTP error of a payout the batch refused. */
function refusalError(refusal: PayoutRefusal): ApiError {
  switch (refusal.code) {
    case 'quote_missing':
      return notFound('quote');
    case 'quote_already_consumed':
      return new ApiError('quote_already_consumed', 'This quote was already used by a payout. Create a new quote.');
    case 'quote_expired':
      return new ApiError('quote_expired', 'This quote has expired. Create a new quote and pay with it.');
    case 'limit_exceeded':
      return limitExceeded(refusal.breach);
    case 'insufficient_tenant_funds': {
      const f = refusal.funds;
      if (f.funding === 'prefunding') {
        return new ApiError('insufficient_tenant_funds', `The prefunding balance does not cover this payout: ${f.required} ${f.asset} minor units needed.`, {
          asset: f.asset,
          required: f.required.toString(),
          available: f.available.toString(),
        });
      }
      return new ApiError('insufficient_tenant_funds', `This payout would take ${f.asset} credit drawn past the credit limit of ${f.creditLimit} minor units.`, {
        asset: f.asset,
        required: f.required.toString(),
        credit_drawn: f.creditDrawn.toString(),
        credit_limit: f.creditLimit.toString(),
      });
    }
  }
}

const keyReused = () =>
  new ApiError('idempotency_key_reused', 'This Idempotency-Key was already used for a different request (another route or body). Use a new key for a new operation.');
const keyInProgress = () =>
  new ApiError(
    'idempotency_request_in_progress',
    'A request with this Idempotency-Key is still being processed. Retry the same request in a moment: you will get its result once it finishes.',
  );

/**
 * The payout's answer to a send the rail answered without an outcome (it did not confirm, it timed
 * out, the call failed) is `unknown`, whatever has happened to the payment since: the reaper may have
 * asked the rail and resolved it while this send was still waiting for its timeout (a short sandbox
 * settle delay), and the answer must not depend on that race. The payment itself is as the outcome
 * batches left it; GET /v1/payments/{id} and the webhook tell the outcome. Any other answer is the
 * payment as it stands after what the rail said was applied.
 */
function answerOfSend(committed: PaymentRow, outcome: RailReport, applied: PaymentRow): PaymentRow {
  if (outcome.status !== 'unconfirmed' && outcome.status !== 'timeout' && outcome.status !== 'error') return applied;
  return { ...committed, status: 'unknown', status_reason: unknownReasonOf(outcome), message: STATUS_MESSAGES.unknown };
}

/** Asks the rail to send, with a hard timeout; never throws (a timeout or error is an outcome). */
export async function callRail(rail: RailAdapter, transfer: RailTransfer, timeoutMs: number): Promise<RailReport> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<RailReport>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ status: 'timeout' });
    }, timeoutMs);
  });
  try {
    return await Promise.race([rail.submit(transfer, controller.signal), timeout]);
  } catch (error) {
    // We cannot know whether the rail got it: unknown, resolved later by asking with our reference.
    return controller.signal.aborted ? { status: 'timeout' } : { status: 'error', message: (error as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

/** What the rail is asked to send for a payment (by our reference, the payment id). */
export function transferOf(payment: PaymentRow, sender: Sender | Record<string, string>): RailTransfer {
  if (!payment.method) throw new Error(`invariant: payment ${payment.id} reached the rail without an instrument`);
  const b = payment.beneficiary;
  return {
    reference: payment.id,
    tenantId: payment.tenant_id,
    mode: payment.mode,
    instrument: payment.method,
    amountMinor: payment.payout_amount,
    asset: 'BS',
    beneficiary: { fullName: b.fullName, nationalId: b.nationalId, bankCode: b.bankCode, accountNumber: b.accountNumber, phone: b.phone },
    sender: sender as RailTransfer['sender'],
  };
}

function snapshotOf(b: PayoutBeneficiary): BeneficiarySnapshot {
  return { fullName: b.full_name, nationalId: b.national_id, bankCode: b.bank_code, accountNumber: b.account_number, phone: b.phone, instrument: b.instrument };
}

/** An inline beneficiary is paid as sent. */
function snapshotOfDetails(b: BeneficiaryDetails): BeneficiarySnapshot {
  return { fullName: b.fullName, nationalId: b.nationalId, bankCode: b.bankCode, accountNumber: b.accountNumber, phone: b.phone, instrument: b.instrument };
}
