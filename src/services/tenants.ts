import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { insertApiKey, listTenantKeys, revokeApiKey, type ApiKeyRow } from '../db/repositories/api-keys.ts';
import { findTenant, insertTenant, listCustomerTenants, updateTenant, type TenantFields, type TenantRow } from '../db/repositories/tenants.ts';
import { CUSTOMER_SCOPES, generateApiKey, hashApiKey, keyLast4, keyPrefix, type Mode } from '../domain/api-keys.ts';
import { pageOf, positionAfter } from '../domain/page-cursor.ts';
import { ApiError, notFound } from '../http/errors.ts';

export const TENANT_DEFAULTS = {
  creditEnabled: false,
  creditLimit: null,
  creditLimits: {},
  feeBps: 100,
  feeFixed: 0n,
  spreadBps: 50,
} as const;

export interface TenantPage {
  rows: TenantRow[];
  hasMore: boolean;
  nextCursor: string | null;
}

export interface IssuedKey {
  id: string;
  key: string;
  mode: Mode;
  scopes: string[];
  row: ApiKeyRow;
}

/** Admin use cases on tenants and their keys. */
export class TenantService {
  constructor(private readonly db: Database) {}

  async create(fields: Partial<TenantFields> & { name: string }): Promise<TenantRow> {
    return insertTenant(this.db, randomUUID(), { ...TENANT_DEFAULTS, ...definedOnly(fields) });
  }

  async get(id: string): Promise<TenantRow> {
    const tenant = await findTenant(this.db, id);
    if (!tenant || tenant.is_platform) throw notFound('tenant');
    return tenant;
  }

  /** Customer tenants, newest first, by opaque keyset cursor (stable while tenants are being created). */
  async list(page: { limit: number; cursor?: string }): Promise<TenantPage> {
    const after = positionAfter(page.cursor);
    return pageOf(await listCustomerTenants(this.db, { limit: page.limit, after }), page.limit);
  }

  async update(id: string, patch: Partial<TenantFields>): Promise<TenantRow> {
    await this.get(id);
    const tenant = await updateTenant(this.db, id, definedOnly(patch));
    if (!tenant) throw notFound('tenant');
    return tenant;
  }

  async issueKey(tenantId: string, mode: Mode, scopes: readonly string[] = CUSTOMER_SCOPES): Promise<IssuedKey> {
    await this.get(tenantId);
    return this.issueKeyUnchecked(this.db, tenantId, mode, scopes, 'admin');
  }

  async issueKeyUnchecked(
    db: Pick<Database, 'query'>,
    tenantId: string,
    mode: Mode,
    scopes: readonly string[],
    source: ApiKeyRow['source'],
  ): Promise<IssuedKey> {
    const unique = [...new Set(scopes)];
    if (unique.length === 0) throw new ApiError('validation_failed', 'scopes: give at least one scope, or omit it for all eight.', { errors: [{ field: 'scopes', message: 'must not be empty' }] });
    const key = generateApiKey(mode);
    const row = await insertApiKey(db as Database, {
      id: randomUUID(),
      tenantId,
      mode,
      scopes: unique,
      hash: hashApiKey(key),
      prefix: keyPrefix(key),
      last4: keyLast4(key),
      isPlatform: false,
      source,
    });
    return { id: row.id, key, mode, scopes: unique, row };
  }

  async listKeys(tenantId: string): Promise<ApiKeyRow[]> {
    await this.get(tenantId);
    return listTenantKeys(this.db, tenantId);
  }

  /**
   * Committed before the answer, and every authentication reads the database with a statement that
   * starts after its request arrived: any request sent after this answer fails, on every process.
   */
  async revokeKey(id: string): Promise<{ id: string; revoked: true }> {
    const revoked = await revokeApiKey(this.db, id);
    if (!revoked) throw notFound('API key');
    return { id: revoked.id, revoked: true };
  }
}

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
