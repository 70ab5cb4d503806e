// POST /v1/payouts, the request path: validation, the references a payout names, its route, then the
// payout commit (commit/payout-lane.ts) and, after the commit, the payout's own send to the rail.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { COALESCER_BOUNDS, Coalescer } from '../db/coalescer.ts';
import { pgErrorCode, type Database } from '../db/database.ts';
import { recordPayoutAnswer } from '../db/repositories/payout-answers.ts';
import {
  readPayoutReferences,
  type PayoutBeneficiary,
  type PayoutReads,
  type PayoutReferences,
} from '../db/repositories/payout-reads.ts';
import { findPayment, type BeneficiarySnapshot, type PaymentRow } from '../db/repositories/payments.ts';
import { findRate } from '../db/repositories/rates.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import { checkAccountNumber } from '../domain/account-check.ts';
import { validateBeneficiary, type BeneficiaryDetails, type BeneficiaryInput } from '../domain/beneficiary.ts';
import type { Clock } from '../domain/clock.ts';
import { ApiError, notFound, validationFailed, type FieldError } from '../domain/errors.ts';
import { answerForStoredKey, type StoredKey } from '../domain/idempotency.ts';
import type { Instrument } from '../domain/instrument.ts';
import { NO_METADATA, type Metadata } from '../domain/metadata.ts';
import { unknownReasonOf, type RailReport } from '../domain/commit/outcome-decision.ts';
import type { Partition, Mode } from '../domain/partition.ts';
import { STATUS_MESSAGES } from '../domain/payment-messages.ts';
import { decideRoute } from '../domain/payout-route.ts';
import { validateSender, type Sender, type SenderInput } from '../domain/sender.ts';
import { firstLookMs, sendWindowMs, unknownRecheckMs, type SendTiming } from '../domain/send-schedule.ts';
import type { RoutedBankCatalogue } from './routed-catalogue.ts';
import { movePaymentToRail } from '../db/repositories/rails.ts';
import type { RoutedPayout } from '../domain/rail-routing.ts';
import { callRail, transferOf, type NotReceived } from '../rails/send.ts';
import type { Committer } from './commit/committer.ts';
import type { LimitRuleSource } from './limits.ts';
import type { MoneyMetrics } from './money-metrics.ts';
import { PayoutLane, type PayoutJob } from './commit/payout-lane.ts';
import { payoutAnswerBody } from './payout-answer.ts';
import { keyInProgress, keyReused } from './payout-refusals.ts';
import type { PaymentOutcomes } from './commit/payment-outcomes.ts';
import type { RailRegistry, RegisteredRail } from './rail-registry.ts';
import type { WriterAnswer } from './commit/writer-answer.ts';
import { assert } from '../domain/assert.ts';

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

/** Who asks for a payout: its key (a payout batch's item: one derived from its reference), and its batch. */
export interface PayoutContext {
  key: string;
  fingerprint: string;
  requestId: string;
  createdByKeyId: string;
  /** The payout batch and item it is, if any. */
  batch?: { id: string; item: number };
}

export interface PayoutSettings extends SendTiming {
  idempotencyTtlMs: number;
}

/**
 * Rails a payout may be tried on, at most: the first, and the next ones it moves to when each
 * provably did not receive it. Each try may take the rail timeout, so this bounds the payout call.
 * @internal Exported for its tests, not used elsewhere.
 */
export const RAILS_TRIED_MAX = 3;

/** The instrument a payout takes, or why none can carry it (decided before any money moves). */
interface RouteOutcome {
  /** The rails that may carry it, in the order they are tried (the first is recorded on the payment). */
  rails: RegisteredRail[];
  methodUsed: Instrument | null;
  methodChanged: boolean;
  routeFailure: { reason: string; message: string } | null;
  /** No rail that may carry it admits a payout now (each one's breaker open): it waits for one. */
  waitsForRail: boolean;
}

const INVALID_CHECK_DIGITS_MESSAGE =
  "The account number's check digits do not agree (account_check: invalid_check_digits), so it was not sent to the bank. Register the beneficiary with the corrected number and pay again with a new quote.";

/**
 * POST /payouts. One writer: the payout commit (PayoutLane) records everything a payout decides in one
 * transaction — its Idempotency-Key with the payment it created, the payment (accepted, or failed
 * before the rail), the quote's consumption, the ledger entry, the limit usage and the outbox event —
 * so a retry with the same key after any crash finds the payment. Before the commit only what needs no
 * lock is checked (validation 400, unknown references 404, routing); every rule that reads state
 * (quote, limits, funds) is decided by domain/commit/payout-decision.ts under the commit's locks. After the
 * commit the rail is called by our reference, and what it says goes through the outcome commit.
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
    private readonly catalogue: RoutedBankCatalogue,
    private readonly rails: RailRegistry,
    private readonly outcomes: PaymentOutcomes,
    private readonly committer: Committer,
    rules: LimitRuleSource,
    private readonly settings: PayoutSettings,
    private readonly log?: FastifyBaseLogger,
    metrics?: MoneyMetrics,
  ) {
    const resolvesWithinMs = (mode: Mode) => rails.railOf({ rail: null, mode })?.resolvesWithinMs;
    const firstLook = {
      test: firstLookMs(settings, resolvesWithinMs('test')),
      live: firstLookMs(settings, resolvesWithinMs('live')),
    };
    this.unknownRecheck = {
      test: unknownRecheckMs(settings, resolvesWithinMs('test')),
      live: unknownRecheckMs(settings, resolvesWithinMs('live')),
    };
    this.lane = new PayoutLane(clock, rules, settings, firstLook, log, metrics);
    this.reads = new Coalescer((items) => readPayoutReferences(db, items), COALESCER_BOUNDS);
  }

  /** `context.createdByKeyId`: the API key making the payout, stored with the payment. */
  async create(partition: Partition, request: PayoutRequest, context: PayoutContext): Promise<WriterAnswer> {
    const bankCodes = await this.bankCodes(partition);
    const checked = validate(request, bankCodes);
    const reads = await this.reads.submit({
      ...partition,
      key: context.key,
      quoteId: request.quoteId,
      beneficiaryId: request.beneficiaryId,
      customerId: request.customerId,
    });
    if (reads.key) {
      const answer = await this.answerFromKey(partition, reads.key, context.fingerprint);
      if (answer) return answer;
    }
    const { job, rails } = await this.prepare(partition, request, checked, reads, context, bankCodes);
    const result = await this.committer.submit(this.lane, partition, job);
    switch (result.kind) {
      case 'answered':
        return result.answer;
      case 'error':
        throw result.error;
      case 'key_taken': {
        const answer = await this.answerFromKey(partition, result.stored, context.fingerprint);
        assert(answer, 'a key taken in the commit was past its TTL');
        return answer;
      }
      case 'accepted':
        return this.deliver(result.payment, job, result.commitStartedAt, rails);
    }
  }

  /**
   * What a payout decides before its commit, needing no lock: its references exist (404), its user,
   * sender, route and rails. Throws the ApiError a single payout answers with. Shared by the payout
   * batches (services/payout-batches.ts), which read the references of many payouts at once.
   */
  async prepare(
    partition: Partition,
    request: PayoutRequest,
    checked: CheckedPayout,
    reads: PayoutReads,
    context: PayoutContext,
    bankCodes: Record<Instrument, ReadonlySet<string>>,
  ): Promise<{ job: PayoutJob; rails: RegisteredRail[] }> {
    const { inline, blockSender } = checked;
    if (!reads.quote) throw notFound('quote');
    if (request.beneficiaryId && !reads.beneficiary) throw notFound('beneficiary');
    const customerId = customerOf(request.customerId, reads.quote.customer_id);
    const sender = blockSender ?? reads.customerSender ?? reads.defaultSender;
    await this.ensureUsdRate();

    const target = inline ? snapshotOfDetails(inline) : snapshotOf(reads.beneficiary!);
    const quote = reads.quote;
    const routed = await this.route(
      {
        tenantId: partition.tenantId,
        mode: partition.mode,
        bankCode: target.bankCode,
        amountMinor: quote.deliver_amount,
      },
      request,
      target,
      bankCodes,
    );
    const { methodUsed, methodChanged, routeFailure, rails, waitsForRail } = await this.checkAccount(
      partition.tenantId,
      target,
      routed,
    );

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
      rail: rails[0]?.name ?? null,
      waitsForRail,
      metadata: request.metadata ?? NO_METADATA,
      batch: context.batch,
    };
    return { job, rails };
  }

  /** The payout commit (one transaction of many payouts) the payout path and the payout batches share. */
  get payoutLane(): PayoutLane {
    return this.lane;
  }

  /** The bank codes each instrument's catalogue holds for the partition's rail, for `validate`. */
  async bankCodes(partition: Partition): Promise<Record<Instrument, ReadonlySet<string>>> {
    return this.catalogue.codes(partition);
  }

  /**
   * Which instrument can carry the payout, and on which rails, decided before any money moves (or why
   * none can). An instrument is available when a rail that may carry the payout (eligible by its
   * settings and the rules, whatever its breaker) says it can deliver to this beneficiary through it;
   * no rail serving the mode at all is `no_route`. A breaker never decides the instrument: when every
   * rail of the chosen one has its breaker open, the payout is accepted and waits for one
   * (`waitsForRail`), so an outage never fails a payout for a reason that is not true.
   */
  private async route(
    payout: Omit<RoutedPayout, 'instrument'>,
    request: PayoutRequest,
    target: BeneficiarySnapshot,
    bankCodes: Record<Instrument, ReadonlySet<string>>,
  ): Promise<RouteOutcome> {
    const available = async (instrument: Instrument) => {
      const rails = await this.rails.candidates({ ...payout, instrument });
      const answers = await Promise.all(
        rails.map((rail) => rail.adapter.instrumentAvailable(target, instrument, request.method).catch(() => false)),
      );
      return { rails: rails.filter((_, i) => answers[i]), eligible: rails.length > 0 };
    };
    const unrouted = (reason: string, message: string): RouteOutcome => ({
      rails: [],
      methodUsed: null,
      methodChanged: false,
      routeFailure: { reason, message },
      waitsForRail: false,
    });
    const [pagoMovil, transferencia] = [await available('pago_movil'), await available('transferencia')];
    if (!pagoMovil.eligible && !transferencia.eligible && !(await this.rails.servesAny(payout.mode))) {
      return unrouted('no_route', `No rail serves ${payout.mode} payouts in this deployment.`);
    }
    const route = decideRoute({
      requested: request.method,
      policy: request.methodPolicy ?? 'preferred',
      beneficiary: target,
      inCatalogue: (instrument, code) => bankCodes[instrument].has(code),
      railAvailable: { pago_movil: pagoMovil.rails.length > 0, transferencia: transferencia.rails.length > 0 },
    });
    if (!route.ok) return unrouted(route.reason, route.message);
    const rails = route.method === 'pago_movil' ? pagoMovil.rails : transferencia.rails;
    const admitting = await this.rails.admitting(rails);
    return {
      rails: admitting.length > 0 ? admitting : rails,
      methodUsed: route.method,
      methodChanged: route.methodChanged,
      routeFailure: null,
      waitsForRail: admitting.length === 0,
    };
  }

  /**
   * A tenant with `rejectInvalidAccounts` fails a transferencia to an account whose check digits do
   * not agree before the rail, as any route failure (nothing charged). The tenant is read only then.
   */
  private async checkAccount(
    tenantId: string,
    target: BeneficiarySnapshot,
    routed: RouteOutcome,
  ): Promise<RouteOutcome> {
    if (routed.methodUsed !== 'transferencia' || checkAccountNumber(target.accountNumber) !== 'invalid_check_digits')
      return routed;
    if (!(await findTenant(this.db, tenantId))?.reject_invalid_accounts) return routed;
    return {
      rails: [],
      methodUsed: null,
      methodChanged: false,
      routeFailure: { reason: 'invalid_destination_account', message: INVALID_CHECK_DIGITS_MESSAGE },
      waitsForRail: false,
    };
  }

  /** What a key found before or in the commit answers, or undefined when it is past its TTL. */
  private async answerFromKey(
    partition: Partition,
    stored: StoredKey,
    fingerprint: string,
  ): Promise<WriterAnswer | undefined> {
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
        assert(payment, `key names payment ${answer.paymentId}, which does not exist`);
        return { status: 201, body: payoutAnswerBody.payment(payment), replayed: true };
      }
    }
  }

  /**
   * After the commit: the rail is asked to send, by our reference, with a hard timeout; what it says
   * is applied through the outcome commit. The payout path sends only within its window (sendWindowMs);
   * later the reaper sends it.
   */
  private async deliver(
    payment: PaymentRow,
    job: PayoutJob,
    commitStartedAt: Date,
    rails: readonly RegisteredRail[],
  ): Promise<WriterAnswer> {
    let row = payment;
    let accepted = false;
    // A payout waiting for a rail (pending) is not sent here: the reaper sends it once a rail admits it.
    if (payment.status === 'submitted' && this.withinSendWindow(commitStartedAt)) {
      const sent = await this.send(payment, job.sender!, commitStartedAt, rails);
      const outcome = sent.outcome;
      row = sent.payment;
      if (outcome.status === 'processing') accepted = true;
      // No rail received it: it stays submitted on the last rail tried, and the reaper sends it there.
      else if (outcome.status !== 'not_received') {
        const applied = await this.outcomes.apply(payment, outcome, {
          actor: 'api',
          settledReason: 'rail_settled',
          recheck: { afterMs: this.unknownRecheck[payment.mode] },
        });
        row = answerOfSend(sent.payment, outcome, applied);
      }
    }
    const body = payoutAnswerBody.payment(row);
    // The key's answer and the rail's acceptance in one statement, with relaxed durability: the key
    // already names the payment (the commit wrote it), so if a crash loses this answer a retry answers
    // with the payment as it stands, and the reaper records the acceptance when it asks the rail.
    await recordPayoutAnswer(this.db, {
      scope: { tenantId: payment.tenant_id, mode: payment.mode, key: job.candidate.key },
      paymentId: payment.id,
      status: 201,
      body,
      acceptance: accepted
        ? {
            actor: 'api',
            metadata: { methodRequested: payment.method_requested, methodUsed: payment.method },
            at: this.clock.now(),
          }
        : undefined,
    }).catch((error) => this.logLost('the stored answer of the key and the rail acceptance', error));
    return { status: 201, body, replayed: false };
  }

  private logLost(what: string, error: unknown): void {
    this.log?.warn(
      { code: pgErrorCode(error), message: (error as Error)?.message },
      `payout: could not record ${what}; it is recovered later`,
    );
  }

  private withinSendWindow(commitStartedAt: Date): boolean {
    return this.clock.now().getTime() - commitStartedAt.getTime() <= sendWindowMs(this.settings);
  }

  /**
   * Sends the payment to its rail (the first candidate, recorded by the commit). Only when that rail
   * provably did not receive it (`not_received`) does it go to the next candidate whose breaker is
   * not open: its new rail committed first (a crash then leaves the reaper asking the rail that was
   * asked to send), at most RAILS_TRIED_MAX rails, and only within the send window, after which the
   * reaper alone may send it. Any other answer — a timeout, an error, whose fate is unknown — keeps
   * it on its rail: never two rails for one payment.
   */
  private async send(
    payment: PaymentRow,
    sender: Sender,
    commitStartedAt: Date,
    candidates: readonly RegisteredRail[],
  ): Promise<{ outcome: RailReport | NotReceived; payment: PaymentRow }> {
    let row = payment;
    const transfer = transferOf(payment, sender);
    for (let tried = 1; ; tried += 1) {
      const rail = this.rails.railOf(row);
      assert(rail, `payment ${row.id} is on rail ${row.rail}, which this process does not have`);
      const outcome = await callRail(rail, transfer, this.settings.railTimeoutMs);
      this.rails.sent(rail.name, outcome);
      if (outcome.status !== 'not_received') return { outcome, payment: row };
      const next = candidates
        .slice(candidates.findIndex((c) => c.name === rail.name) + 1)
        .find((c) => c.breaker.admits());
      if (!next || tried >= RAILS_TRIED_MAX || !this.withinSendWindow(commitStartedAt))
        return { outcome, payment: row };
      const moved = await movePaymentToRail(this.db, row, row.rail, next.name).catch((error: unknown) => {
        this.logLost(`the move to rail ${next.name} (it stays on ${rail.name} for the reaper)`, error);
        return false;
      });
      if (!moved) return { outcome, payment: row };
      this.rails.failedOver(rail.name, next.name);
      this.log?.warn(
        { paymentId: row.id, from: rail.name, to: next.name },
        'payout: the rail did not receive it; sent to the next rail',
      );
      row = { ...row, rail: next.name };
    }
  }

  /** The rail floor needs a USD rate; the commit reads the current one, this only checks there is one. */
  private async ensureUsdRate(): Promise<void> {
    if (this.usdRateSeen) return;
    if (!(await findRate(this.db, 'USD'))) {
      throw new ApiError('rate_unavailable', 'No USD/BS rate is available to compute the rail floor; retry later.', {
        asset: 'USD',
      });
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
    throw validationFailed([
      {
        field: 'customerId',
        message: `the quote was made for customerId ${quoted}: send that customerId, or leave it out to use the quote's`,
      },
    ]);
  }
  return requested ?? quoted ?? undefined;
}

/** What a payout's own fields give once checked: its inline beneficiary and its sender block. */
export interface CheckedPayout {
  inline?: BeneficiaryDetails;
  blockSender?: Sender;
}

/** The payout's own fields by the rules (400 `validation_failed` listing every violation). */
export function validate(
  request: Omit<PayoutRequest, 'quoteId'>,
  bankCodes: Record<Instrument, ReadonlySet<string>>,
): CheckedPayout {
  const errors: FieldError[] = [];
  if ((request.beneficiaryId === undefined) === (request.beneficiary === undefined)) {
    errors.push({
      field: 'beneficiaryId',
      message: 'send exactly one of beneficiaryId (a registered beneficiary) or beneficiary (inline)',
    });
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

/**
 * The payout's answer to a send the rail answered without an outcome (it did not confirm, it timed
 * out, the call failed) is `unknown`, whatever has happened to the payment since: the reaper may have
 * asked the rail and resolved it while this send was still waiting for its timeout (a short sandbox
 * settle delay), and the answer must not depend on that race. The payment itself is as the outcome
 * commits left it; GET /v1/payments/{id} and the webhook tell the outcome. Any other answer is the
 * payment as it stands after what the rail said was applied.
 */
function answerOfSend(committed: PaymentRow, outcome: RailReport, applied: PaymentRow): PaymentRow {
  if (outcome.status !== 'unconfirmed' && outcome.status !== 'timeout' && outcome.status !== 'error') return applied;
  return { ...committed, status: 'unknown', status_reason: unknownReasonOf(outcome), message: STATUS_MESSAGES.unknown };
}

function snapshotOf(b: PayoutBeneficiary): BeneficiarySnapshot {
  return {
    fullName: b.full_name,
    nationalId: b.national_id,
    bankCode: b.bank_code,
    accountNumber: b.account_number,
    phone: b.phone,
    instrument: b.instrument,
  };
}

/** An inline beneficiary is paid as sent. */
function snapshotOfDetails(b: BeneficiaryDetails): BeneficiarySnapshot {
  return {
    fullName: b.fullName,
    nationalId: b.nationalId,
    bankCode: b.bankCode,
    accountNumber: b.accountNumber,
    phone: b.phone,
    instrument: b.instrument,
  };
}
