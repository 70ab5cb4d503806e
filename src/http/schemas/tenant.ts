import { Type } from '@sinclair/typebox';
import { AmountString, Component, DateTime, ModeSchema, Nullable, PageQuery, StringEnum, Uuid } from './common.ts';
import { CUSTOMER_SCOPES } from '../../domain/api-keys.ts';

export const TenantContext = Component(
  'TenantContext',
  Type.Object({
    tenantId: Type.String(),
    name: Type.String(),
    mode: ModeSchema,
    scopes: Type.Array(Type.String()),
    apiKeyId: Type.String(),
    isPlatform: Type.Boolean({ description: 'false for a customer key' }),
  }),
);

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

const CREDIT_ASSETS = ['BS', 'USD', 'USDC', 'VESC'] as const;

const CreditCeiling = (asset: string) =>
  Type.Optional(
    Nullable(
      Type.Integer({
        format: 'int64',
        minimum: 0,
        maximum: MAX_SAFE,
        description: `Credit ceiling in ${asset} minor units; null = none`,
      }),
    ),
  );

const TenantWritable = {
  name: Type.String({ minLength: 1, maxLength: 200, description: 'Display name' }),
  creditEnabled: Type.Boolean({ description: 'true = daily close (not blocked by balance); false = prefunded' }),
  creditLimit: Nullable(
    Type.Integer({
      format: 'int64',
      minimum: 0,
      maximum: MAX_SAFE,
      description: 'Credit ceiling in BS minor units; null = none',
    }),
  ),
  creditLimits: Type.Object(Object.fromEntries(CREDIT_ASSETS.map((asset) => [asset, CreditCeiling(asset)])), {
    additionalProperties: false,
    description:
      "Credit terms per asset: a draw in one asset is compared only with that asset's ceiling, in its own minor units. `BS` is the same as `creditLimit`. On update, only the assets sent change; null removes a ceiling.",
  }),
  feeBps: Type.Integer({
    format: 'int32',
    minimum: 0,
    maximum: 10000,
    description: 'Fee in basis points of the delivered amount (default 100)',
  }),
  feeFixed: Type.Integer({
    format: 'int64',
    minimum: 0,
    maximum: MAX_SAFE,
    description: 'Fixed fee in BS minor units (default 0)',
  }),
  spreadBps: Type.Integer({
    format: 'int32',
    minimum: 0,
    maximum: 9999,
    description: 'FX margin in basis points (default 50)',
  }),
  rejectInvalidAccounts: Type.Boolean({
    description:
      'true: a `transferencia` payout to a 20-digit account number whose check digits do not agree (`account_check: invalid_check_digits`) fails before the rail with `invalid_destination_account` (201 `failed`, nothing charged). Default false: such payouts are sent',
  }),
};

export const CreateTenantBody = Type.Object({
  name: TenantWritable.name,
  creditEnabled: Type.Optional(TenantWritable.creditEnabled),
  creditLimit: Type.Optional(TenantWritable.creditLimit),
  creditLimits: Type.Optional(TenantWritable.creditLimits),
  feeBps: Type.Optional(TenantWritable.feeBps),
  feeFixed: Type.Optional(TenantWritable.feeFixed),
  spreadBps: Type.Optional(TenantWritable.spreadBps),
  rejectInvalidAccounts: Type.Optional(TenantWritable.rejectInvalidAccounts),
});

export const UpdateTenantBody = Type.Partial(Type.Object(TenantWritable), { minProperties: 1 });

export const Tenant = Component(
  'Tenant',
  Type.Object({
    id: Uuid(),
    name: Type.String(),
    creditEnabled: Type.Boolean(),
    creditLimit: Nullable(AmountString()),
    creditLimits: Type.Object(Object.fromEntries(CREDIT_ASSETS.map((asset) => [asset, Nullable(AmountString())])), {
      description: 'Credit ceiling of every asset, minor units (null: none); BS is creditLimit',
    }),
    feeBps: Type.Integer(),
    feeFixed: AmountString(),
    spreadBps: Type.Integer(),
    rejectInvalidAccounts: Type.Boolean(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

export const TenantList = Component(
  'TenantList',
  Type.Object(
    {
      data: Type.Array(Tenant),
      has_more: Type.Boolean(),
      next_cursor: Nullable(
        Type.String({ description: 'Pass as `cursor` to read the next page; null on the last page' }),
      ),
    },
    { description: 'One page of customer tenants, newest first' },
  ),
);

export const TenantListQuery = Type.Object(PageQuery);

const Scopes = Type.Array(StringEnum(CUSTOMER_SCOPES), {
  minItems: 1,
  maxItems: CUSTOMER_SCOPES.length,
  uniqueItems: true,
  description: 'Default: all eight customer scopes',
});

export const CreateApiKeyBody = Type.Object({
  mode: ModeSchema,
  scopes: Type.Optional(Scopes),
});

export const IssuedApiKey = Component(
  'IssuedApiKey',
  Type.Object({
    id: Uuid(),
    key: Type.String({ description: 'The key itself; shown only in this response' }),
    mode: ModeSchema,
    scopes: Type.Array(Type.String()),
    prefix: Type.String(),
    last4: Type.String(),
    createdAt: DateTime(),
  }),
);

export const ApiKeySummary = Component(
  'ApiKeySummary',
  Type.Object({
    id: Uuid(),
    mode: ModeSchema,
    scopes: Type.Array(Type.String()),
    prefix: Type.String(),
    last4: Type.String(),
    createdAt: DateTime(),
    revokedAt: Nullable(DateTime()),
  }),
);

export const RevokedApiKey = Type.Object({ id: Uuid(), revoked: Type.Boolean() });

export const IdParam = Type.Object({ id: Uuid() });
