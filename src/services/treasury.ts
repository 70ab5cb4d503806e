import type { Database, Queryable } from '../db/database.ts';
import { accountBalances, lockedBalance, postEntry } from '../db/repositories/ledger.ts';
import { findTenant, type TenantRow } from '../db/repositories/tenants.ts';
import type { Mode } from '../domain/api-keys.ts';
import { businessDate } from '../domain/caracas-time.ts';
import type { Clock } from '../domain/clock.ts';
import { dailyCloseEntry, fundingEntry } from '../domain/ledger.ts';
import { MAX_AMOUNT_MINOR } from '../domain/money.ts';
import { notFound, validationFailed } from '../http/errors.ts';

export interface TreasuryPosition {
  tenantId: string;
  asset: string;
  prefundingBalance: string;
  platformRevenueFromTenant: string;
  creditEnabled: boolean;
  creditDrawn: string;
  creditLimit: string | null;
  creditAvailable: string | null;
}

type Partition = { tenantId: string; mode: Mode };

/** Positions are read from the ledger's account balances, never kept anywhere else. */
export class TreasuryService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async position(partition: Partition, asset: string, db: Queryable = this.db): Promise<TreasuryPosition> {
    const tenant = await findTenant(db, partition.tenantId);
    if (!tenant) throw notFound('tenant');
    const balances = await accountBalances(db, partition, asset);
    const drawn = balances.credit_receivable;
    const limit = tenant.credit_limit;
    return {
      tenantId: tenant.id,
      asset,
      prefundingBalance: (-balances.prefunding).toString(),
      platformRevenueFromTenant: (-balances.revenue).toString(),
      creditEnabled: tenant.credit_enabled,
      creditDrawn: drawn.toString(),
      creditLimit: limit === null ? null : limit.toString(),
      creditAvailable: limit === null ? null : (limit - drawn > 0n ? limit - drawn : 0n).toString(),
    };
  }

  /** Admin funding: credits the tenant's prefunding balance (idempotent through the HTTP layer). */
  async fund(tenantId: string, mode: Mode, asset: string, amount: bigint): Promise<TreasuryPosition> {
    if (amount <= 0n || amount > MAX_AMOUNT_MINOR) {
      throw validationFailed([{ field: 'amount', message: 'must be a positive integer amount in minor units' }]);
    }
    await this.customerTenant(tenantId);
    const partition = { tenantId, mode };
    return this.db.transaction(async (tx) => {
      await postEntry(tx, partition, fundingEntry(asset, amount));
      return this.position(partition, asset, tx);
    });
  }

  /**
   * The daily close: the tenant settles what it drew on credit. `businessDay` set (the scheduled
   * close) records the day so each Caracas day closes once, whatever the number of workers.
   */
  async close(tenantId: string, mode: Mode, businessDay?: string): Promise<TreasuryPosition & { closedAmount: string }> {
    await this.customerTenant(tenantId);
    const partition = { tenantId, mode };
    return this.db.transaction(async (tx) => {
      const drawn = await lockedBalance(tx, partition, 'BS', 'credit_receivable');
      if (businessDay) {
        const claimed = await tx.query(
          `INSERT INTO daily_closes (tenant_id, mode, asset, business_date, amount) VALUES ($1, $2, 'BS', $3, $4)
           ON CONFLICT DO NOTHING`,
          [tenantId, mode, businessDay, drawn],
        );
        if (claimed.rowCount === 0) return { ...(await this.position(partition, 'BS', tx)), closedAmount: '0' };
      }
      if (drawn > 0n) await postEntry(tx, partition, dailyCloseEntry('BS', drawn));
      return { ...(await this.position(partition, 'BS', tx)), closedAmount: drawn.toString() };
    });
  }

  /** Credit tenants and modes with something drawn and no close yet for `day`. */
  async dueCloses(day: string, limit: number): Promise<Array<{ tenantId: string; mode: Mode }>> {
    const { rows } = await this.db.query<{ tenant_id: string; mode: Mode }>(
      `SELECT a.tenant_id, a.mode FROM ledger_accounts a JOIN tenants t ON t.id = a.tenant_id
        WHERE t.credit_enabled AND a.kind = 'credit_receivable' AND a.asset = 'BS' AND a.balance > 0
          AND NOT EXISTS (SELECT 1 FROM daily_closes c WHERE c.tenant_id = a.tenant_id AND c.mode = a.mode
                           AND c.asset = 'BS' AND c.business_date = $1)
        LIMIT $2`,
      [day, limit],
    );
    return rows.map((r) => ({ tenantId: r.tenant_id, mode: r.mode }));
  }

  /** The Caracas day that ended most recently. */
  previousBusinessDay(): string {
    return businessDate(new Date(this.clock.now().getTime() - 24 * 3600 * 1000));
  }

  private async customerTenant(id: string): Promise<TenantRow> {
    const tenant = await findTenant(this.db, id);
    if (!tenant || tenant.is_platform) throw notFound('tenant');
    return tenant;
  }
}
