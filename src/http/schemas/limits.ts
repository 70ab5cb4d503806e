import { Type } from '@sinclair/typebox';
import { AmountString, Asset, Component, DateTime, Nullable, StringEnum, Uuid } from './common.ts';

const Cap = (description: string) =>
  Type.Integer({
    format: 'int64',
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    description,
    'x-error-message': 'must be a positive integer (minor units, or a count)',
  });

const LIMIT_SCOPES = ['platform', 'tenant', 'customer', 'beneficiary'] as const;
const LIMIT_METHODS = ['pago_movil', 'transferencia', '*'] as const;
const Scope = StringEnum(LIMIT_SCOPES, { description: 'Who the rule is about' });
const RuleMethod = StringEnum(LIMIT_METHODS, { description: 'Instrument, or * for any' });

export const CreateLimitRuleBody = Type.Object({
  scope: StringEnum(LIMIT_SCOPES, {
    description:
      'Precedence: beneficiary, then customer, then tenant, then platform; the most specific rule replaces the others',
  }),
  tenantId: Type.Optional(Uuid('Required unless scope is platform')),
  subjectId: Type.Optional(Uuid('The customerId or beneficiary id, for those scopes')),
  method: StringEnum(LIMIT_METHODS, {
    description: 'Instrument, or * for any; a concrete instrument beats * within a scope',
  }),
  per_tx_max: Cap('Largest single payout, BS minor units (delivered amount)'),
  daily_max: Cap('Delivered amount per Caracas day, BS minor units'),
  monthly_max: Type.Optional(Nullable(Cap('Delivered amount per Caracas month, BS minor units'))),
  daily_count_max: Type.Optional(Nullable(Cap('Payouts per Caracas day'))),
});

export const LimitRuleView = Component(
  'LimitRule',
  Type.Object({
    id: Uuid(),
    scope: Scope,
    tenantId: Nullable(Uuid()),
    subjectId: Nullable(Uuid()),
    method: RuleMethod,
    per_tx_max: AmountString(),
    daily_max: AmountString(),
    monthly_max: Nullable(AmountString()),
    daily_count_max: Nullable(AmountString()),
    created_at: DateTime(),
  }),
);

export const LimitRuleList = Component('LimitRuleList', Type.Object({ data: Type.Array(LimitRuleView) }));

export const ListLimitRulesQuery = Type.Object({
  tenantId: Type.Optional(Uuid('Only the rules that can apply to this tenant (its own and platform rules)')),
});

export const LimitUsageQuery = Type.Object({
  asset: Type.Optional(
    StringEnum(['BS', 'USD', 'USDC', 'VESC'] as const, { default: 'BS', description: 'Asset (default BS)' }),
  ),
  customerId: Type.Optional(Uuid('One of your users: their consumption and rule instead of the tenant’s')),
});

export const LimitUsage = Component(
  'LimitUsage',
  Type.Object({
    asset: Asset,
    usage: Type.Object({
      day_amount: AmountString('Delivered today (Caracas day), minor units'),
      day_count: AmountString('Payouts today'),
      month_amount: AmountString('Delivered this Caracas month, minor units'),
    }),
    limit: Nullable(
      Type.Object(
        {
          scope: Scope,
          method: RuleMethod,
          per_tx_max: AmountString(),
          daily_max: AmountString(),
          monthly_max: Nullable(AmountString()),
          daily_count_max: Nullable(AmountString()),
        },
        { description: 'The rule that applies; null when none is configured' },
      ),
    ),
  }),
);
