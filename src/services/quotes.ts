import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { findQuote, insertQuote, type NewQuote, type QuoteRow } from '../db/repositories/quotes.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import type { Clock } from '../domain/clock.ts';
import { NO_METADATA, type Metadata } from '../domain/metadata.ts';
import { MoneyError, computeQuote, type Quote } from '../domain/money.ts';
import { planQuote, type QuoteRequestInput } from '../domain/quote-request.ts';
import { notFound, validationFailed } from '../domain/errors.ts';
import type { RateService } from './rates.ts';
import type { Partition } from '../domain/partition.ts';
import { assert } from '../domain/assert.ts';

export type QuoteStatus = 'open' | 'consumed' | 'expired';

export function quoteStatus(row: Pick<QuoteRow, 'consumed_at' | 'expires_at'>, now: Date): QuoteStatus {
  if (row.consumed_at) return 'consumed';
  return now.getTime() >= row.expires_at.getTime() ? 'expired' : 'open';
}

/** Quotes are free: they reserve no balance and consume no limit; they only fix the numbers. */
export class QuoteService {
  constructor(
    private readonly db: Database,
    private readonly rates: RateService,
    private readonly clock: Clock,
    private readonly ttlSeconds: number,
  ) {}

  async create(
    partition: Partition,
    request: QuoteRequestInput & { customerId?: string; metadata?: Metadata },
  ): Promise<QuoteRow> {
    const plan = planQuote(request);
    if (!plan.ok) throw validationFailed(plan.errors);
    const tenant = await findTenant(this.db, partition.tenantId);
    assert(tenant, 'authenticated tenant has no row');
    const fee = { feeBps: tenant.fee_bps, feeFixed: tenant.fee_fixed };

    let quote: Quote;
    try {
      if (plan.mode === 'deliver') {
        quote = computeQuote({ mode: 'deliver', deliverAmount: plan.deliverAmount, ...fee });
      } else {
        const rate = await this.rates.freshMarketRate(plan.spendAsset);
        quote = computeQuote({
          mode: 'spend',
          spendAsset: plan.spendAsset,
          spendAmount: plan.spendAmount,
          market: rate.market,
          spreadBps: tenant.spread_bps,
          ...fee,
        });
      }
    } catch (error) {
      if (error instanceof MoneyError) {
        const field = plan.mode === 'deliver' ? 'deliver.amount' : 'spend.amount';
        throw validationFailed([{ field, message: error.message }]);
      }
      throw error;
    }

    const now = this.clock.now();
    return insertQuote(this.db, this.rowOf(partition, quote, request.customerId, request.metadata ?? NO_METADATA, now));
  }

  /** The row a computed quote is stored as, expiring QUOTE_TTL_SECONDS from `now`. */
  private rowOf(
    partition: Partition,
    quote: Quote,
    customerId: string | undefined,
    metadata: Metadata,
    now: Date,
  ): NewQuote {
    return {
      tenant_id: partition.tenantId,
      mode: partition.mode,
      id: randomUUID(),
      customer_id: customerId ?? null,
      fixed: quote.fixed,
      spend_asset: quote.spend.asset,
      spend_amount: quote.spend.amount,
      deliver_asset: quote.deliver.asset,
      deliver_amount: quote.deliver.amount,
      fee_amount: quote.fee.amount,
      rate_value: quote.rate?.value ?? null,
      rate_market: quote.rate?.market ?? null,
      spread_bps: quote.rate?.spread_bps ?? null,
      expires_at: new Date(now.getTime() + this.ttlSeconds * 1000),
      created_at: now,
      metadata,
    };
  }

  /**
   * Deliver-mode quotes for many amounts at once (a payout batch's `deliver` items), computed exactly as
   * `create` computes one, with the tenant's fee; not written (the batch writes them in one statement).
   * An amount no quote can be made for is a field error at its index.
   */
  async deliverQuotes(
    partition: Partition,
    requests: ReadonlyArray<{ amount: number; customerId?: string } | undefined>,
  ): Promise<{ quotes: Array<NewQuote | undefined>; errors: Array<{ index: number; message: string }> }> {
    const tenant = await findTenant(this.db, partition.tenantId);
    assert(tenant, 'authenticated tenant has no row');
    const now = this.clock.now();
    const errors: Array<{ index: number; message: string }> = [];
    const quotes = requests.map((request, index): NewQuote | undefined => {
      if (!request) return undefined;
      let quote: Quote;
      try {
        quote = computeQuote({
          mode: 'deliver',
          deliverAmount: BigInt(request.amount),
          feeBps: tenant.fee_bps,
          feeFixed: tenant.fee_fixed,
        });
      } catch (error) {
        if (!(error instanceof MoneyError)) throw error;
        errors.push({ index, message: error.message });
        return undefined;
      }
      return this.rowOf(partition, quote, request.customerId, NO_METADATA, now);
    });
    return { quotes, errors };
  }

  async get(partition: Partition, id: string): Promise<QuoteRow> {
    const row = await findQuote(this.db, partition.tenantId, partition.mode, id);
    if (!row) throw notFound('quote');
    return row;
  }

  now(): Date {
    return this.clock.now();
  }
}
