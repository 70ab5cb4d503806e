// The limit rules: the most a payout, a day or a month may deliver, by platform, tenant, customer or
// beneficiary. `limits delete` has always been listed after the reconciliation commands, so each of
// the three is its own export.
import type { Command } from '../command.ts';
import { given, int, minor, text } from '../flags.ts';
import { ask, type Admin } from '../service.ts';

export const LIMITS_ADD: Command = {
  name: 'limits add',
  summary: 'Create a limit rule (POST /v1/admin/limit-rules)',
  details:
    'A rule for the same scope, tenant, subject and method replaces the previous one. Amounts are delivered BS, minor units.',
  flags: {
    scope: {
      type: 'string',
      value: 'platform|tenant|customer|beneficiary',
      required: true,
      description: 'whom the rule applies to',
    },
    tenant: { type: 'string', value: 'ID', description: 'the tenant id (every scope but platform)' },
    subject: {
      type: 'string',
      value: 'ID',
      description: 'the customerId or beneficiary id (customer and beneficiary scopes)',
    },
    method: {
      type: 'string',
      value: "pago_movil|transferencia|'*'",
      required: true,
      description: 'the instrument, or * for any',
    },
    'per-tx': { type: 'string', value: 'MINOR', required: true, description: 'largest single payout' },
    daily: { type: 'string', value: 'MINOR', required: true, description: 'delivered per Caracas day' },
    monthly: { type: 'string', value: 'MINOR', description: 'delivered per Caracas month (none when omitted)' },
    'daily-count': { type: 'string', value: 'N', description: 'payouts per Caracas day (none when omitted)' },
  },
  run: (v) => {
    const body: Parameters<Admin['limitRules']['create']>[0] = {
      scope: given(v.scope),
      tenantId: text(v.tenant),
      subjectId: text(v.subject),
      method: given(v.method),
      per_tx_max: minor(v['per-tx'], 'per-tx')!,
      daily_max: minor(v.daily, 'daily')!,
      monthly_max: minor(v.monthly, 'monthly'),
      daily_count_max: int(v['daily-count'], 'daily-count'),
    };
    return ask((admin) => admin.limitRules.create(body));
  },
};

export const LIMITS_LIST: Command = {
  name: 'limits list',
  summary: 'List the live limit rules, oldest first (GET /v1/admin/limit-rules)',
  flags: {
    tenant: {
      type: 'string',
      value: 'ID',
      description: "only the rules that can apply to this tenant (its own and the platform's)",
    },
  },
  run: (v) => ask((admin) => admin.limitRules.list(v.tenant ? { tenantId: given(v.tenant) } : {})),
};

export const LIMITS_DELETE: Command = {
  name: 'limits delete',
  summary: 'Delete a limit rule (DELETE /v1/admin/limit-rules/{id})',
  details: 'It stops applying from the next payout.',
  flags: { rule: { type: 'string', value: 'ID', required: true, description: 'the rule id (limits list shows it)' } },
  run: (v) => ask((admin) => admin.limitRules.delete(given(v.rule))),
};
