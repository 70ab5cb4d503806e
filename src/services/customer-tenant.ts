// The customer tenant an admin operation names: 404 `resource_not_found` for an unknown id and for
// the platform tenant, which holds no money and takes no payouts.
import type { Queryable } from '../db/database.ts';
import { findTenant, type TenantRow } from '../db/repositories/tenants.ts';
import { notFound } from '../domain/errors.ts';

export async function customerTenant(db: Queryable, id: string): Promise<TenantRow> {
  const tenant = await findTenant(db, id);
  if (!tenant || tenant.is_platform) throw notFound('tenant');
  return tenant;
}
