import type { StoredCreditLimits } from '../../domain/credit.ts';
import type { PagePosition } from '../../domain/page-cursor.ts';
import type { Queryable } from '../database.ts';
import { newestFirst, Params } from './sql-params.ts';

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

const COLUMNS =
  'id, name, is_platform, credit_enabled, credit_limit, credit_limits, fee_bps, fee_fixed, spread_bps, reject_invalid_accounts, created_at, updated_at';

const storedLimits = (limits: Record<string, bigint | null>): string =>
  JSON.stringify(
    Object.fromEntries(
      Object.entries(limits).map(([asset, limit]) => [asset, limit === null ? null : limit.toString()]),
    ),
  );

export async function insertTenant(
  db: Queryable,
  id: string,
  fields: TenantFields,
  isPlatform = false,
): Promise<TenantRow> {
  const p = new Params();
  const { rows } = await db.query<TenantRow>(
    `INSERT INTO tenants (id, name, is_platform, credit_enabled, credit_limit, fee_bps, fee_fixed, spread_bps, credit_limits, reject_invalid_accounts)
     VALUES (${p.add(id)}, ${p.add(fields.name)}, ${p.add(isPlatform)}, ${p.add(fields.creditEnabled)}, ${p.add(fields.creditLimit)}, ${p.add(fields.feeBps)},
       ${p.add(fields.feeFixed)}, ${p.add(fields.spreadBps)}, ${p.add(storedLimits(fields.creditLimits))}::jsonb, ${p.add(fields.rejectInvalidAccounts)})
     RETURNING ${COLUMNS}`,
    p.values,
  );
  return rows[0]!;
}

/** The platform tenant (the admin API's), if it is not there yet. */
export async function ensurePlatformTenant(tx: Queryable, id: string): Promise<void> {
  const p = new Params();
  await tx.query(
    `INSERT INTO tenants (id, name, is_platform) VALUES (${p.add(id)}, 'Platform', true) ON CONFLICT (id) DO NOTHING`,
    p.values,
  );
}

/** true once any customer (non-platform) tenant exists. */
export async function hasCustomerTenant(db: Queryable): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM tenants WHERE NOT is_platform LIMIT 1');
  return rowCount > 0;
}

export async function findTenant(db: Queryable, id: string): Promise<TenantRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants WHERE id = ${p.add(id)}`, p.values);
  return rows[0];
}

/** One tenant, locked until the transaction ends (an update reads what it changes). */
export async function lockTenant(tx: Queryable, id: string): Promise<TenantRow | undefined> {
  const p = new Params();
  const { rows } = await tx.query<TenantRow>(
    `SELECT ${COLUMNS} FROM tenants WHERE id = ${p.add(id)} FOR UPDATE`,
    p.values,
  );
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
export async function listCustomerTenants(
  db: Queryable,
  page: { limit: number; after?: PagePosition },
): Promise<ListedTenantRow[]> {
  const query = {
    columns: COLUMNS,
    from: 'tenants',
    time: 'created_at',
    params: new Params(),
    where: ['NOT is_platform'],
  };
  return newestFirst<ListedTenantRow>(db, { ...query, limit: page.limit, after: page.after });
}

export async function updateTenant(
  db: Queryable,
  id: string,
  patch: Partial<TenantFields>,
): Promise<TenantRow | undefined> {
  const sets: string[] = [];
  const p = new Params();
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
      sets.push(
        `credit_limits = credit_limits || ${p.add(storedLimits(value as Record<string, bigint | null>))}::jsonb`,
      );
      continue;
    }
    sets.push(`${column[field]} = ${p.add(value)}`);
  }
  sets.push('updated_at = now()');
  const { rows } = await db.query<TenantRow>(
    `UPDATE tenants SET ${sets.join(', ')} WHERE id = ${p.add(id)} RETURNING ${COLUMNS}`,
    p.values,
  );
  return rows[0];
}
