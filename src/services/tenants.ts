import { randomUUID } from 'node:crypto';
import type { Database } from '../db/database.ts';
import { insertApiKey, listTenantKeys, lockApiKey, revokeApiKey, type ApiKeyRow } from '../db/repositories/api-keys.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import {
  findTenant,
  insertTenant,
  listCustomerTenants,
  lockTenant,
  updateTenant,
  type TenantFields,
  type TenantRow,
} from '../db/repositories/tenants.ts';
import { CUSTOMER_SCOPES, generateApiKey, hashApiKey, keyLast4, keyPrefix } from '../domain/api-keys.ts';
import { changedFields, type AuditActor } from '../domain/audit.ts';
import { pageOf, positionAfter } from '../domain/page-cursor.ts';
import { ApiError, notFound } from '../domain/errors.ts';
import type { Mode } from '../domain/partition.ts';
import { assert } from '../domain/assert.ts';

export const TENANT_DEFAULTS = {
  creditEnabled: false,
  creditLimit: null,
  creditLimits: {},
  feeBps: 100,
  feeFixed: 0n,
  spreadBps: 50,
  rejectInvalidAccounts: false,
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
  /** `onKeyIssued`: told the hash of each key issued here, so this process serves it at once (Authenticator.learn). */
  constructor(
    private readonly db: Database,
    private readonly onKeyIssued: (hash: string) => void = () => undefined,
  ) {}

  async create(fields: Partial<TenantFields> & { name: string }, actor: AuditActor): Promise<TenantRow> {
    return this.db.transaction(async (tx) => {
      const tenant = await insertTenant(tx, randomUUID(), { ...TENANT_DEFAULTS, ...definedOnly(fields) });
      await recordAudit(tx, {
        actor,
        action: 'tenant.create',
        target: { type: 'tenant', id: tenant.id, tenantId: tenant.id },
        before: null,
        after: settingsOf(tenant),
      });
      return tenant;
    });
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

  /** Changes the fields given; the audit row holds what each of them was and is. */
  async update(id: string, patch: Partial<TenantFields>, actor: AuditActor): Promise<TenantRow> {
    const given = definedOnly(patch);
    return this.db.transaction(async (tx) => {
      const before = await lockTenant(tx, id);
      if (!before || before.is_platform) throw notFound('tenant');
      const tenant = await updateTenant(tx, id, given);
      assert(tenant, `tenant ${id}, locked, vanished before its update`);
      const fields = changedFields(
        settingsOf(before),
        settingsOf(tenant),
        Object.keys(given) as Array<keyof TenantFields>,
      );
      await recordAudit(tx, {
        actor,
        action: 'tenant.update',
        target: { type: 'tenant', id, tenantId: id },
        ...fields,
      });
      return tenant;
    });
  }

  async issueKey(
    tenantId: string,
    mode: Mode,
    actor: AuditActor,
    scopes: readonly string[] = CUSTOMER_SCOPES,
  ): Promise<IssuedKey> {
    await this.get(tenantId);
    return this.db.transaction(async (tx) => {
      const issued = await this.issueKeyUnchecked(tx, tenantId, mode, scopes, 'admin');
      // The key itself never: its id, and what any key list shows of it.
      const { row } = issued;
      await recordAudit(tx, {
        actor,
        action: 'api_key.issue',
        target: { type: 'api_key', id: row.id, tenantId, mode },
        before: null,
        after: { mode: row.mode, scopes: row.scopes, prefix: row.prefix, last4: row.last4 },
      });
      return issued;
    });
  }

  async issueKeyUnchecked(
    db: Pick<Database, 'query'>,
    tenantId: string,
    mode: Mode,
    scopes: readonly string[],
    source: ApiKeyRow['source'],
  ): Promise<IssuedKey> {
    const unique = [...new Set(scopes)];
    if (unique.length === 0)
      throw new ApiError('validation_failed', 'scopes: give at least one scope, or omit it for all eight.', {
        errors: [{ field: 'scopes', message: 'must not be empty' }],
      });
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
    this.onKeyIssued(hashApiKey(key));
    return { id: row.id, key, mode, scopes: unique, row };
  }

  async listKeys(tenantId: string): Promise<ApiKeyRow[]> {
    await this.get(tenantId);
    return listTenantKeys(this.db, tenantId);
  }

  /**
   * Committed before the answer, and every authentication reads the database with a statement that
   * starts after its request arrived: any request sent after this answer fails, on every process.
   * Revoking a revoked key changes nothing and is recorded all the same (someone tried).
   */
  async revokeKey(id: string, actor: AuditActor): Promise<{ id: string; revoked: true }> {
    return this.db.transaction(async (tx) => {
      const key = await lockApiKey(tx, id);
      if (!key) throw notFound('API key');
      const revoked = await revokeApiKey(tx, id);
      assert(revoked, `API key ${id}, locked, vanished before its revocation`);
      await recordAudit(tx, {
        actor,
        action: 'api_key.revoke',
        target: { type: 'api_key', id, tenantId: key.tenant_id, mode: key.mode },
        before: { revokedAt: key.revoked_at },
        after: { revokedAt: revoked.revoked_at },
      });
      return { id: revoked.id, revoked: true };
    });
  }
}

/** A tenant's settings as the audit trail records them (the names of the admin API). */
function settingsOf(row: TenantRow): Record<keyof TenantFields, unknown> {
  return {
    name: row.name,
    creditEnabled: row.credit_enabled,
    creditLimit: row.credit_limit,
    creditLimits: row.credit_limits,
    feeBps: row.fee_bps,
    feeFixed: row.fee_fixed,
    spreadBps: row.spread_bps,
    rejectInvalidAccounts: row.reject_invalid_accounts,
  };
}

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
