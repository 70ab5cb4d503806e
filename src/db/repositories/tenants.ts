import type { StoredCreditLimits } from '../../domain/credit.ts';
import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';
import type { Queryable } from '../database.ts';

export interface TenantRow {
  id: string;
  name: string;
  is_platform: boolean;
  credit_enabled: boolean;
  credit_limit: bigint | null;
  /** Ceilings of the other assets (BS is `credit_limit`). */
  credit_limits: StoredCreditLimits;
  fee_bps: number;
  fee_fixed: bigint;
  spread_bps: number;
  reject_invalid_accounts: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface TenantFields {
  name: string;
  creditEnabled: boolean;
  creditLimit: bigint | null;
  /** Per-asset ceilings of the other assets; on update, merged into the stored ones. */
  creditLimits: Record<string, bigint | null>;
  feeBps: number;
  feeFixed: bigint;
  spreadBps: number;
  rejectInvalidAccounts: boolean;
}

const COLUMNS = 'id, name, is_platform, credit_enabled, credit_limit, credit_limits, fee_bps, fee_fixed, spread_bps, reject_invalid_accounts, created_at, updated_at';

const storedLimits = (limits: Record<string, bigint | null>): string =>
  JSON.stringify(Object.fromEntries(Object.entries(limits).map(([asset, limit]) => [asset, limit === null ? null : limit.toString()])));

export async function insertTenant(db: Queryable, id: string, fields: TenantFields, isPlatform = false): Promise<TenantRow> {
  const { rows } = await db.query<TenantRow>(
    `INSERT INTO tenants (id, name, is_platform, credit_enabled, credit_limit, fee_bps, fee_fixed, spread_bps, credit_limits, reject_invalid_accounts)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10) RETURNING ${COLUMNS}`,
    [id, fields.name, isPlatform, fields.creditEnabled, fields.creditLimit, fields.feeBps, fields.feeFixed, fields.spreadBps, storedLimits(fields.creditLimits), fields.rejectInvalidAccounts],
  );
  return rows[0]!;
}

/** The platform tenant (the admin API's), if it is not there yet. */
export async function ensurePlatformTenant(tx: Queryable, id: string): Promise<void> {
  await tx.query(`INSERT INTO tenants (id, name, is_platform) VALUES ($1, 'Platform', true) ON CONFLICT (id) DO NOTHING`, [id]);
}

/** true once any customer (non-platform) tenant exists. */
export async function hasCustomerTenant(db: Queryable): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM tenants WHERE NOT is_platform LIMIT 1');
  return rowCount > 0;
}

export async function findTenant(db: Queryable, id: string): Promise<TenantRow | undefined> {
  const { rows } = await db.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants WHERE id = $1`, [id]);
  return rows[0];
}

/** One tenant, locked until the transaction ends (an update reads what it changes). */
export async function lockTenant(tx: Queryable, id: string): Promise<TenantRow | undefined> {
  const { rows } = await tx.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants WHERE id = $1 FOR UPDATE`, [id]);
  return rows[0];
}

/** A listed tenant: its row and its exact creation time, the keyset position (a Date keeps only ms). */
export type ListedTenantRow = TenantRow & { created_at_us: bigint };

/**
 * One page of customer tenants (never the platform tenant), newest first, strictly after `after` in
 * (created_at DESC, id DESC) order. Reads `limit + 1` rows so the caller knows whether another page
 * exists without a count. The tenants table is small (one row per customer): no index is needed for
 * the sort.
 */
export async function listCustomerTenants(db: Queryable, page: { limit: number; after?: PagePosition }): Promise<ListedTenantRow[]> {
  const params: unknown[] = [page.limit + 1];
  let after = '';
  if (page.after) {
    params.push(microsToTimestamp(page.after.createdAtUs), page.after.id);
    after = 'AND (created_at, id) < ($2::timestamptz, $3::uuid)';
  }
  // extract(epoch …) is numeric on PostgreSQL 14+, so the microsecond value is exact.
  const { rows } = await db.query<ListedTenantRow>(
    `SELECT ${COLUMNS}, (extract(epoch FROM created_at) * 1000000)::bigint AS created_at_us
       FROM tenants
      WHERE NOT is_platform ${after}
      ORDER BY created_at DESC, id DESC
      LIMIT $1`,
    params,
  );
  return rows;
}

export async function updateTenant(db: Queryable, id: string, patch: Partial<TenantFields>): Promise<TenantRow | undefined> {
  const sets: string[] = [];
  const params: unknown[] = [id];
  const column: Record<Exclude<keyof TenantFields, 'creditLimits'>, string> = {
    name: 'name',
    creditEnabled: 'credit_enabled',
    creditLimit: 'credit_limit',
    feeBps: 'fee_bps',
    feeFixed: 'fee_fixed',
    spreadBps: 'spread_bps',
    rejectInvalidAccounts: 'reject_invalid_accounts',
  };
  for (const [field, value] of Object.entries(patch) as [keyof TenantFields, unknown][]) {
    if (value === undefined) continue;
    if (field === 'creditLimits') {
      params.push(storedLimits(value as Record<string, bigint | null>));
      sets.push(`credit_limits = credit_limits || $${params.length}::jsonb`);
      continue;
    }
    params.push(value);
    sets.push(`${column[field]} = $${params.length}`);
  }
  sets.push('updated_at = now()');
  const { rows } = await db.query<TenantRow>(
    `UPDATE tenants SET ${sets.join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`,
    params,
  );
  return rows[0];
}
