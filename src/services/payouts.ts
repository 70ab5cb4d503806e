import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.ts';
import { recordBeneficiaryFailure } from '../db/repositories/beneficiary-history.ts';
import {
  findBeneficiaryByIdentity,
  insertBeneficiaryIfNew,
  type BeneficiaryRow,
} from '../db/repositories/beneficiaries.ts';
import { accountBalances } from '../db/repositories/ledger.ts';
import { insertOutboxEvent } from '../db/repositories/outbox.ts';
import { insertPayment, insertTransition, type BeneficiarySnapshot, type PaymentRow } from '../db/repositories/payments.ts';
import { findCustomerSender, findDefaultSender, setCustomerSender } from '../db/repositories/programs.ts';
import { consumeQuote, findQuote, type QuoteRow } from '../db/repositories/quotes.ts';
import { findRate } from '../db/repositories/rates.ts';
import { findQuotesAndBeneficiaries, type PayoutReferences } from '../db/repositories/payout-reads.ts';
import { Coalescer } from '../db/coalescer.ts';
import type { TenantRow } from '../db/repositories/tenants.ts';
import type { Mode } from '../domain/api-keys.ts';
import { validateBeneficiary, type BeneficiaryDetails, type BeneficiaryInput } from '../domain/beneficiary.ts';
import type { Clock } from '../domain/clock.ts';
import { payoutEntry, type FundingAccount } from '../domain/ledger.ts';
import { parseRate, railFloorMinor } from '../domain/money.ts';
import { decideRoute, type Instrument } from '../domain/payout-route.ts';
import { validateSender, type Sender, type SenderInput } from '../domain/sender.ts';
import { ApiError, notFound, validationFailed, type FieldError } from '../http/errors.ts';
import type { BankCatalogue } from '../rails/catalogue.ts';
import type { RailAdapter, RailTransfer } from '../rails/rail.ts';
import { eventPayload, failureMessage, PaymentOutcomes, STATUS_MESSAGES, type RailOutcome } from './payment-outcomes.ts';
import type { PayoutLimitPolicy } from './payout-limits.ts';
import { PayoutCommitter, quoteError } from './payout-committer.ts';
import type { TenantSettingsCache } from './tenant-settings.ts';
import { quoteStatus } from './quotes.ts';

const SETTINGS_CACHE_TTL_MS = 1000;

export interface PayoutRequest {
  quoteId: string;
  method: Instrument;
  methodPolicy?: 'preferred' | 'strict';
  beneficiaryId?: string;
  beneficiary?: BeneficiaryInput;
  customerId?: string;
  sender?: SenderInput;
}

type Partition = { tenantId: string; mode: Mode };

export interface PayoutSettings {
  railTimeoutMs: number;
  reaperIntervalMs: number;
}

/** Which rail serves each mode. Test mode is always the sandbox; live needs a configured provider. */
export type RailsByMode = { test: RailAdapter; live?: RailAdapter };

/** Everything decided before money moves; built without writing anything. */
interface PayoutPlan {
  paymentId: string;
  quote: QuoteRow;
  tenant: TenantRow;
  beneficiary: BeneficiaryRow | BeneficiaryDetails;
  sender: Sender | undefined;
  storeCustomerSender: boolean;
  method: Instrument | null;
  methodChanged: boolean;
  failure: { reason: string; message: string } | null;
  rail: RailAdapter | undefined;
}

/**
 * POST /payouts: the money path. Checks run in the order of decisions.md §11 — validation (400),
 * referenced objects (404), quote state (409/422), caps and limits (422), funds (422), then the
 * business outcome (201). Money moves in one transaction (quote consumed, payment, ledger entry);
 * the rail is called after it commits, and what the rail says is recorded in a second one.
 */
export class PayoutService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly catalogue: BankCatalogue,
    private readonly rails: RailsByMode,
    private readonly outcomes: PaymentOutcomes,
    private readonly limits: PayoutLimitPolicy,
    private readonly settings: PayoutSettings,
    private readonly tenantSettings: TenantSettingsCache,
  ) {
    this.committer = new PayoutCommitter(db, clock, limits);
    this.references = new Coalescer((items) => findQuotesAndBeneficiaries(db, items), { batchMax: 256, inFlightMax: 2 });
  }

  /** Concurrent payouts read their quotes and beneficiaries together. */
  private readonly references: Coalescer<PayoutReferences, Awaited<ReturnType<typeof findQuotesAndBeneficiaries>>[number]>;

  private readonly committer: PayoutCommitter;

  async create(partition: Partition, request: PayoutRequest): Promise<PaymentRow> {
    const plan = await this.plan(partition, request);
    if (plan.failure) return this.recordFailureBeforeRail(partition, request, plan);
    const payment = await this.commit(partition, request, plan);
    return this.submit(payment, plan);
  }

  private async plan(partition: Partition, request: PayoutRequest): Promise<PayoutPlan> {
    const errors: FieldError[] = [];
    if ((request.beneficiaryId === undefined) === (request.beneficiary === undefined)) {
      errors.push({ field: 'beneficiaryId', message: 'send exactly one of beneficiaryId (a registered beneficiary) or beneficiary (inline)' });
    }
    const bankCodes = await this.bankCodes();
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

    const [{ quote, beneficiary: registered }, tenant] = await Promise.all([
      this.references.submit({ tenantId: partition.tenantId, mode: partition.mode, quoteId: request.quoteId, beneficiaryId: request.beneficiaryId }),
      this.tenantSettings.get(partition.tenantId),
    ]);
    if (!tenant) throw new Error('invariant: authenticated tenant has no row');
    let beneficiary: BeneficiaryRow | BeneficiaryDetails | undefined = inline;
    if (request.beneficiaryId) {
      beneficiary = registered;
      if (!beneficiary) throw notFound('beneficiary');
    } else if (inline) {
      const existing = await findBeneficiaryByIdentity(this.db, partition.tenantId, partition.mode, inline);
      beneficiary = existing ?? inline;
    }
    if (!quote) throw notFound('quote');
    assertQuoteUsable(quote, this.clock.now());

    const sender = blockSender ?? (await this.storedSender(partition, request.customerId));
    const rail = partition.mode === 'test' ? this.rails.test : this.rails.live;
    const target = snapshotOf(beneficiary!);
    const requested = request.method;
    let method: Instrument | null = null;
    let methodChanged = false;
    let failure: PayoutPlan['failure'] = null;
    if (!rail) {
      failure = { reason: 'no_route', message: 'No live rail provider is configured for this deployment.' };
    } else {
      const route = decideRoute({
        requested,
        policy: request.methodPolicy ?? 'preferred',
        beneficiary: target,
        inCatalogue: (instrument, code) => bankCodes[instrument].has(code),
        railAvailable: {
          pago_movil: await rail.instrumentAvailable(target, 'pago_movil', requested),
          transferencia: await rail.instrumentAvailable(target, 'transferencia', requested),
        },
      });
      if (route.ok) {
        method = route.method;
        methodChanged = route.methodChanged;
      } else {
        failure = { reason: route.reason, message: route.message };
      }
    }

    // Caps (422) come before funds and before any business outcome.
    await this.limits.check(this.db, this.limitSubject(partition, request, quote, method ?? requested, beneficiary!, ''));

    const floor = await this.railFloor();
    if (!failure && quote.deliver_amount < floor) {
      failure = { reason: 'amount_below_rail_minimum', message: `${failureMessage('amount_below_rail_minimum')} Floor now: ${floor} minor units.` };
    }
    if (!failure && !sender) failure = { reason: 'sender_required', message: failureMessage('sender_required') };
    if (failure) await this.assertFundsCover(partition, tenant, quote);

    return {
      paymentId: randomUUID(),
      quote,
      tenant,
      beneficiary: beneficiary!,
      sender,
      storeCustomerSender: Boolean(request.customerId && blockSender),
      method,
      methodChanged,
      failure,
      rail,
    };
  }

  private async bankCodes(): Promise<Record<Instrument, ReadonlySet<string>>> {
    const [pagoMovil, transferencia] = await Promise.all([this.catalogue.codes('pago_movil'), this.catalogue.codes('transferencia')]);
    return { pago_movil: pagoMovil, transferencia };
  }

  private async storedSender(partition: Partition, customerId: string | undefined): Promise<Sender | undefined> {
    if (customerId) {
      const stored = await findCustomerSender(this.db, partition.tenantId, partition.mode, customerId);
      if (stored) return stored;
    }
    return findDefaultSender(this.db, partition.tenantId, partition.mode);
  }

  private floorCache: { floor: bigint; expiresAtMs: number } | undefined;

  /**
   * 1 token of the rail at the current USD rate, checked on every submission. Cached for at most
   * 1 s: the rate moves daily, and the hot path saves a round trip per payout.
   */
  private async railFloor(): Promise<bigint> {
    const nowMs = Date.now();
    if (this.floorCache && this.floorCache.expiresAtMs > nowMs) return this.floorCache.floor;
    const usd = await findRate(this.db, 'USD');
    if (!usd) throw new ApiError('rate_unavailable', 'No USD/BS rate is available to compute the rail floor; retry later.', { asset: 'USD' });
    const floor = railFloorMinor(parseRate(usd.market_text));
    this.floorCache = { floor, expiresAtMs: nowMs + SETTINGS_CACHE_TTL_MS };
    return floor;
  }


  /** Funds are checked for failures before the rail too, so the order of checks holds for every payout. */
  private async assertFundsCover(partition: Partition, tenant: TenantRow, quote: QuoteRow): Promise<void> {
    const balances = await accountBalances(this.db, partition, quote.spend_asset);
    if (tenant.credit_enabled) {
      const drawn = balances.credit_receivable;
      if (tenant.credit_limit !== null && drawn + quote.spend_amount > tenant.credit_limit) throw this.insufficientFunds(tenant, quote, -balances.prefunding, drawn);
    } else if (-balances.prefunding < quote.spend_amount) {
      throw this.insufficientFunds(tenant, quote, -balances.prefunding, balances.credit_receivable);
    }
  }

  private insufficientFunds(tenant: TenantRow, quote: QuoteRow, available: bigint, drawn: bigint): ApiError {
    if (tenant.credit_enabled) {
      return new ApiError('insufficient_tenant_funds', `This payout would take credit drawn past the credit limit of ${tenant.credit_limit} minor units.`, {
        asset: quote.spend_asset,
        required: quote.spend_amount.toString(),
        credit_drawn: drawn.toString(),
        credit_limit: tenant.credit_limit?.toString() ?? null,
      });
    }
    return new ApiError('insufficient_tenant_funds', `The prefunding balance does not cover this payout: ${quote.spend_amount} ${quote.spend_asset} minor units needed.`, {
      asset: quote.spend_asset,
      required: quote.spend_amount.toString(),
      available: (available > 0n ? available : 0n).toString(),
    });
  }

  private limitSubject(partition: Partition, request: PayoutRequest, quote: QuoteRow, method: Instrument, beneficiary: BeneficiaryRow | BeneficiaryDetails, paymentId: string) {
    return {
      tenantId: partition.tenantId,
      mode: partition.mode,
      customerId: request.customerId ?? null,
      beneficiaryId: 'id' in beneficiary ? beneficiary.id : '',
      method,
      amount: quote.deliver_amount,
      paymentId,
      at: this.clock.now(),
    };
  }

  /** Consumes the quote atomically; a payout that lost the race gets the right 409/422. */
  private async consume(tx: Queryable, partition: Partition, quoteId: string, paymentId: string): Promise<QuoteRow> {
    const consumed = await consumeQuote(tx, partition.tenantId, partition.mode, quoteId, paymentId, this.clock.now());
    if (consumed) {
      if (consumed.expires_at.getTime() <= this.clock.now().getTime()) throw quoteError('expired');
      return consumed;
    }
    const current = await findQuote(tx, partition.tenantId, partition.mode, quoteId);
    if (!current) throw notFound('quote');
    throw quoteError(quoteStatus(current, this.clock.now()) === 'expired' ? 'expired' : 'consumed');
  }

  private async persistBeneficiary(tx: Queryable, partition: Partition, plan: PayoutPlan): Promise<BeneficiaryRow> {
    if ('id' in plan.beneficiary) return plan.beneficiary;
    const inserted = await insertBeneficiaryIfNew(tx, partition.tenantId, partition.mode, randomUUID(), plan.beneficiary);
    const row = inserted ?? (await findBeneficiaryByIdentity(tx, partition.tenantId, partition.mode, plan.beneficiary));
    if (!row) throw new Error('invariant: inline beneficiary neither inserted nor found');
    return row;
  }

  private newPayment(partition: Partition, request: PayoutRequest, plan: PayoutPlan, beneficiary: BeneficiaryRow, failed: boolean) {
    const now = this.clock.now();
    return {
      tenant_id: partition.tenantId,
      mode: partition.mode,
      id: plan.paymentId,
      customer_id: request.customerId ?? null,
      beneficiary_id: beneficiary.id,
      quote_id: plan.quote.id,
      status: failed ? ('failed' as const) : ('submitted' as const),
      status_reason: failed ? plan.failure!.reason : null,
      message: failed ? plan.failure!.message : STATUS_MESSAGES.submitted,
      source_asset: plan.quote.spend_asset,
      source_amount: plan.quote.spend_amount,
      payout_asset: plan.quote.deliver_asset,
      payout_amount: plan.quote.deliver_amount,
      fee_amount: failed ? 0n : plan.quote.fee_amount,
      method: plan.method,
      method_requested: request.method,
      method_changed: plan.methodChanged,
      beneficiary: snapshotOf(beneficiary),
      sender: plan.sender ? { ...plan.sender } : null,
      rail: plan.rail?.name ?? null,
      // A crash between the ledger commit and the rail call is found here by the reaper.
      next_check_at: failed ? null : new Date(now.getTime() + this.settings.railTimeoutMs + 2 * this.settings.reaperIntervalMs),
      created_at: now,
    };
  }

  /** A failure before the rail: recorded as failed with no ledger entry, the quote consumed, one event. */
  private async recordFailureBeforeRail(partition: Partition, request: PayoutRequest, plan: PayoutPlan): Promise<PaymentRow> {
    return this.db.transaction(async (tx) => {
      await this.consume(tx, partition, plan.quote.id, plan.paymentId);
      const beneficiary = await this.persistBeneficiary(tx, partition, plan);
      if (plan.storeCustomerSender) await setCustomerSender(tx, partition.tenantId, partition.mode, request.customerId!, plan.sender!);
      const payment = await insertPayment(tx, this.newPayment(partition, request, plan, beneficiary, true));
      await insertTransition(tx, partition.tenantId, payment.id, {
        from_status: null,
        to_status: 'failed',
        reason: plan.failure!.reason,
        actor: 'api',
        metadata: { methodRequested: request.method, methodUsed: plan.method },
        created_at: payment.created_at,
      });
      await insertOutboxEvent(tx, {
        tenantId: partition.tenantId,
        mode: partition.mode,
        type: 'payment.failed',
        paymentId: payment.id,
        payload: eventPayload(payment, 'payment.failed', plan.failure!.reason),
        at: payment.created_at,
      });
      await recordBeneficiaryFailure(tx, partition.tenantId, beneficiary.id, plan.failure!.reason);
      return payment;
    });
  }

  /**
   * The money moves: quote consumed, limits reserved, payment and ledger entry written, in one
   * transaction shared with the tenant's other payouts in flight (group commit).
   */
  private commit(partition: Partition, request: PayoutRequest, plan: PayoutPlan): Promise<PaymentRow> {
    const funding: FundingAccount = plan.tenant.credit_enabled ? 'credit_receivable' : 'prefunding';
    return this.committer.commit({
      partition,
      tenant: plan.tenant,
      quote: plan.quote,
      paymentId: plan.paymentId,
      beneficiary: plan.beneficiary,
      customerSender: plan.storeCustomerSender ? { customerId: request.customerId!, sender: plan.sender! } : undefined,
      limitSubject: this.limitSubject(partition, request, plan.quote, plan.method!, plan.beneficiary, plan.paymentId),
      funding,
      entry: payoutEntry({
        funding,
        sourceAsset: plan.quote.spend_asset,
        sourceAmount: plan.quote.spend_amount,
        deliverAmount: plan.quote.deliver_amount,
        feeAmount: plan.quote.fee_amount,
      }),
      payment: (beneficiary) => this.newPayment(partition, request, plan, beneficiary, false),
    });
  }

  /** Calls the rail by our reference with a hard timeout; what it says is recorded, never thrown. */
  private async submit(payment: PaymentRow, plan: PayoutPlan): Promise<PaymentRow> {
    const rail = plan.rail!;
    const transfer: RailTransfer = {
      reference: payment.id,
      tenantId: payment.tenant_id,
      mode: payment.mode,
      instrument: plan.method!,
      amountMinor: payment.payout_amount,
      asset: 'BS',
      beneficiary: snapshotOf(payment.beneficiary),
      sender: plan.sender!,
    };
    const outcome = await callRail(rail, transfer, this.settings.railTimeoutMs);
    return this.outcomes.apply(payment, outcome, {
      actor: 'api',
      settledReason: 'rail_settled',
      recheckAfterMs: this.settings.reaperIntervalMs,
    });
  }
}

export async function callRail(rail: RailAdapter, transfer: RailTransfer, timeoutMs: number): Promise<RailOutcome> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<RailOutcome>((resolve) => {
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

function assertQuoteUsable(quote: QuoteRow, now: Date): void {
  const status = quoteStatus(quote, now);
  if (status === 'consumed') throw quoteError('consumed');
  if (status === 'expired') throw quoteError('expired');
}


function snapshotOf(b: BeneficiaryRow | BeneficiaryDetails | BeneficiarySnapshot): BeneficiarySnapshot {
  if ('full_name' in b) {
    return { fullName: b.full_name, nationalId: b.national_id, bankCode: b.bank_code, accountNumber: b.account_number, phone: b.phone, instrument: b.instrument };
  }
  return { fullName: b.fullName, nationalId: b.nationalId, bankCode: b.bankCode, accountNumber: b.accountNumber, phone: b.phone, instrument: b.instrument };
}
