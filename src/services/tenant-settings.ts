import type { Queryable } from '../db/database.ts';
import { findTenant, type TenantRow } from '../db/repositories/tenants.ts';

const TTL_MS = 1000;
const ENTRIES_MAX = 10_000;

/**
 * Tenant settings (credit mode and limit) for the payout hot path, cached for at most 1 s — as API
 * keys are — and dropped at once on this node when the admin API changes the tenant.
 */
export class TenantSettingsCache {
  private readonly entries = new Map<string, { tenant: TenantRow; expiresAtMs: number }>();

  constructor(private readonly db: Queryable) {}

  async get(tenantId: string): Promise<TenantRow | undefined> {
    const nowMs = Date.now();
    const cached = this.entries.get(tenantId);
    if (cached && cached.expiresAtMs > nowMs) return cached.tenant;
    const tenant = await findTenant(this.db, tenantId);
    if (tenant) {
      if (this.entries.size >= ENTRIES_MAX) this.entries.clear();
      this.entries.set(tenantId, { tenant, expiresAtMs: nowMs + TTL_MS });
    }
    return tenant;
  }

  forget(tenantId: string): void {
    this.entries.delete(tenantId);
  }
}
