import type { Database } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import { findRate, listRates, lockRate, upsertRate, type StoredRate } from '../db/repositories/rates.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import { MoneyError, parseRate, type Decimal } from '../domain/money.ts';
import { ApiError, validationFailed } from '../domain/errors.ts';

export interface MarketRate {
  asset: string;
  market: Decimal;
  marketText: string;
  asOf: Date;
}

/** Where market rates come from. The default is the table set through the admin API. */
export interface RateSource {
  marketRate(asset: string): Promise<MarketRate | undefined>;
}

export class StoredRateSource implements RateSource {
  constructor(private readonly db: Database) {}
  async marketRate(asset: string): Promise<MarketRate | undefined> {
    const row = await findRate(this.db, asset);
    return row ? toMarketRate(row) : undefined;
  }
}

function toMarketRate(row: StoredRate): MarketRate {
  return { asset: row.asset, market: parseRate(row.market_text), marketText: row.market_text, asOf: row.updated_at };
}

/** Fresh rates only: a missing or stale rate is 503 `rate_unavailable`, never a guess. */
export class RateService {
  constructor(
    private readonly db: Database,
    private readonly source: RateSource,
    private readonly clock: Clock,
    private readonly maxAgeSeconds: number,
  ) {}

  async freshMarketRate(asset: string): Promise<MarketRate> {
    const rate = await this.source.marketRate(asset);
    if (!rate)
      throw new ApiError('rate_unavailable', `No ${asset}/BS rate is available right now; retry later.`, { asset });
    const ageSeconds = (this.clock.now().getTime() - rate.asOf.getTime()) / 1000;
    if (ageSeconds > this.maxAgeSeconds) {
      throw new ApiError('rate_unavailable', `The ${asset}/BS rate is stale; retry later.`, {
        asset,
        rate_as_of: rate.asOf.toISOString(),
        max_age_seconds: this.maxAgeSeconds,
      });
    }
    return rate;
  }

  async set(asset: string, market: string, actor: AuditActor): Promise<StoredRate> {
    try {
      parseRate(market);
    } catch (error) {
      if (!(error instanceof MoneyError)) throw error;
      throw validationFailed([
        {
          field: 'market',
          message: 'must be a positive decimal string with at most 12 integer digits and 8 decimals, e.g. "925.00"',
        },
      ]);
    }
    return this.db.transaction(async (tx) => {
      const before = await lockRate(tx, asset);
      const stored = await upsertRate(tx, asset, market, this.clock.now());
      await recordAudit(tx, {
        actor,
        action: 'rate.set',
        target: { type: 'rate', id: asset },
        before: before ? { market: before.market_text, updatedAt: before.updated_at } : null,
        after: { market: stored.market_text, updatedAt: stored.updated_at },
      });
      return stored;
    });
  }

  list(): Promise<StoredRate[]> {
    return listRates(this.db);
  }
}
