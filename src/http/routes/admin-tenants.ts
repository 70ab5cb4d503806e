import { PLATFORM_SCOPE } from '../../domain/api-keys.ts';
import type { ApiKeyRow } from '../../db/repositories/api-keys.ts';
import type { TenantRow } from '../../db/repositories/tenants.ts';
import type { TenantService } from '../../services/tenants.ts';
import { creditCeiling } from '../../domain/credit.ts';
import { auditActorOf } from '../context.ts';
import { validationFailed } from '../../domain/errors.ts';
import { Type } from '@sinclair/typebox';
import { Answer, errorResponses } from '../schemas/common.ts';
import {
  ApiKeySummary,
  CreateApiKeyBody,
  CreateTenantBody,
  IdParam,
  IssuedApiKey,
  RevokedApiKey,
  Tenant,
  TenantList,
  TenantListQuery,
  UpdateTenantBody,
} from '../schemas/tenant.ts';
import type { App } from '../types.ts';

export const ADMIN = { scopes: [PLATFORM_SCOPE] } as const;

const CREDIT_ASSETS = ['BS', 'USD', 'USDC', 'VESC'] as const;

function tenantView(row: TenantRow) {
  const ceiling = (asset: string) => creditCeiling(row.credit_limit, row.credit_limits, asset)?.toString() ?? null;
  return {
    id: row.id,
    name: row.name,
    creditEnabled: row.credit_enabled,
    creditLimit: ceiling('BS'),
    creditLimits: Object.fromEntries(CREDIT_ASSETS.map((asset) => [asset, ceiling(asset)])),
    feeBps: row.fee_bps,
    feeFixed: row.fee_fixed.toString(),
    spreadBps: row.spread_bps,
    rejectInvalidAccounts: row.reject_invalid_accounts,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function keySummary(row: ApiKeyRow) {
  return {
    id: row.id,
    mode: row.mode,
    scopes: row.scopes,
    prefix: row.prefix,
    last4: row.last4,
    createdAt: row.created_at.toISOString(),
    revokedAt: row.revoked_at ? row.revoked_at.toISOString() : null,
  };
}

const toBig = (value: number | null | undefined) =>
  value === undefined ? undefined : value === null ? null : BigInt(value);

/**
 * `creditLimit` and `creditLimits.BS` are one setting: either may carry it (both only if they agree).
 * Returns the BS ceiling to store (undefined: unchanged) and the other assets' ceilings.
 */
function creditTerms(body: { creditLimit?: number | null; creditLimits?: Record<string, number | null | undefined> }) {
  const { BS, ...others } = body.creditLimits ?? {};
  if (body.creditLimit !== undefined && BS !== undefined && body.creditLimit !== BS) {
    throw validationFailed([
      { field: 'creditLimits.BS', message: 'differs from creditLimit, which is the same setting: send one of them' },
    ]);
  }
  const bs = body.creditLimit !== undefined ? body.creditLimit : BS;
  const rest = Object.fromEntries(
    Object.entries(others)
      .filter(([, v]) => v !== undefined)
      .map(([asset, v]) => [asset, toBig(v as number | null) as bigint | null]),
  );
  return { creditLimit: toBig(bs), creditLimits: body.creditLimits === undefined ? undefined : rest };
}

export async function adminTenantRoutes(app: App, tenants: TenantService): Promise<void> {
  adminCreateTenantRoute(app, tenants);
  adminListTenantsRoute(app, tenants);
  adminGetTenantRoute(app, tenants);
  adminUpdateTenantRoute(app, tenants);
  adminIssueApiKeyRoute(app, tenants);
  adminListApiKeysRoute(app, tenants);
  adminRevokeApiKeyRoute(app, tenants);
}

function adminCreateTenantRoute(app: App, tenants: TenantService): void {
  app.post(
    '/v1/admin/tenants',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminCreateTenant',
        summary: 'Create a tenant',
        description:
          'Creates a customer tenant. Defaults: prefunded (`creditEnabled: false`), `feeBps` 100, `feeFixed` 0, `spreadBps` 50.',
        body: CreateTenantBody,
        response: { 201: Answer('The tenant, created', Tenant), ...errorResponses() },
      },
    },
    async function adminCreateTenant(request, reply) {
      const body = request.body;
      const tenant = await tenants.create(
        {
          name: body.name,
          creditEnabled: body.creditEnabled,
          ...creditTerms(body),
          feeBps: body.feeBps,
          feeFixed: toBig(body.feeFixed) ?? undefined,
          spreadBps: body.spreadBps,
          rejectInvalidAccounts: body.rejectInvalidAccounts,
        },
        auditActorOf(request),
      );
      return reply.code(201).send(tenantView(tenant));
    },
  );
}

function adminListTenantsRoute(app: App, tenants: TenantService): void {
  app.get(
    '/v1/admin/tenants',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListTenants',
        summary: 'List tenants',
        description:
          'Customer tenants (never the platform tenant), newest first (`createdAt`, then `id`, descending), each as `GET /v1/admin/tenants/{id}` returns it. Pass `next_cursor` as `cursor` for the next page; the cursor is opaque and stable while tenants are being created, so no tenant is skipped or repeated.',
        querystring: TenantListQuery,
        response: { 200: TenantList, ...errorResponses(400, 403) },
      },
    },
    async function adminListTenants(request) {
      const page = await tenants.list({ limit: request.query.limit ?? 25, cursor: request.query.cursor });
      return { data: page.rows.map(tenantView), has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );
}

function adminGetTenantRoute(app: App, tenants: TenantService): void {
  app.get(
    '/v1/admin/tenants/:id',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminGetTenant',
        summary: 'Read a tenant',
        description: 'Settings of one tenant.',
        params: IdParam,
        response: { 200: Answer('The tenant', Tenant), ...errorResponses('resource_not_found') },
      },
    },
    async function adminGetTenant(request) {
      return tenantView(await tenants.get(request.params.id));
    },
  );
}

function adminUpdateTenantRoute(app: App, tenants: TenantService): void {
  app.patch(
    '/v1/admin/tenants/:id',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminUpdateTenant',
        summary: 'Update a tenant (name, credit, fee schedule, spread)',
        description:
          'Changes only the fields sent. New quotes use the new fee schedule and spread; existing quotes keep theirs.',
        params: IdParam,
        body: UpdateTenantBody,
        response: { 200: Answer('The tenant, updated', Tenant), ...errorResponses('resource_not_found') },
      },
    },
    async function adminUpdateTenant(request) {
      const body = request.body;
      const tenant = await tenants.update(
        request.params.id,
        {
          name: body.name,
          creditEnabled: body.creditEnabled,
          ...creditTerms(body),
          feeBps: body.feeBps,
          feeFixed: toBig(body.feeFixed) ?? undefined,
          spreadBps: body.spreadBps,
          rejectInvalidAccounts: body.rejectInvalidAccounts,
        },
        auditActorOf(request),
      );
      return tenantView(tenant);
    },
  );
}

function adminIssueApiKeyRoute(app: App, tenants: TenantService): void {
  app.post(
    '/v1/admin/tenants/:id/api-keys',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminIssueApiKey',
        summary: 'Issue an API key',
        description: 'The `key` is returned once; only its prefix and last 4 characters are kept readable.',
        params: IdParam,
        body: CreateApiKeyBody,
        response: {
          201: Answer('The API key; `key` is shown only in this answer', IssuedApiKey),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminIssueApiKey(request, reply) {
      const issued = await tenants.issueKey(
        request.params.id,
        request.body.mode,
        auditActorOf(request),
        request.body.scopes,
      );
      return reply.code(201).send({ ...keySummary(issued.row), key: issued.key });
    },
  );
}

function adminListApiKeysRoute(app: App, tenants: TenantService): void {
  app.get(
    '/v1/admin/tenants/:id/api-keys',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListApiKeys',
        summary: "List a tenant's API keys (prefix and last 4 only)",
        description:
          'Every key of the tenant, revoked ones included; the key strings themselves are never shown again.',
        params: IdParam,
        response: {
          200: Answer(
            "The tenant's API keys (never the keys themselves)",
            Type.Object({ data: Type.Array(ApiKeySummary) }),
          ),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function adminListApiKeys(request) {
      return { data: (await tenants.listKeys(request.params.id)).map(keySummary) };
    },
  );
}

function adminRevokeApiKeyRoute(app: App, tenants: TenantService): void {
  app.delete(
    '/v1/admin/api-keys/:id',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminRevokeApiKey',
        summary: 'Revoke an API key',
        description: 'The key fails with `api_key_invalid` from the next request.',
        params: IdParam,
        response: { 200: Answer('The API key, revoked', RevokedApiKey), ...errorResponses('resource_not_found') },
      },
    },
    async function adminRevokeApiKey(request) {
      return tenants.revokeKey(request.params.id, auditActorOf(request));
    },
  );
}
