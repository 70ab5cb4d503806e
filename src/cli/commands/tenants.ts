// The customer tenants: create, list, read and change their settings (docs/admin.md).
import { UsageError, type Command } from '../command.ts';
import { given, int, minor, onOff, TENANT, text } from '../flags.ts';
import { listPages, pageFlags } from '../paging.ts';
import { ask } from '../service.ts';

export const TENANT_COMMANDS: Command[] = [
  {
    name: 'tenants create',
    summary: 'Create a customer tenant (POST /v1/admin/tenants)',
    details: 'Defaults: prefunded, fee 100 bps + 0, spread 50 bps, no credit ceiling.',
    flags: {
      name: { type: 'string', value: 'NAME', required: true, description: 'display name, 1 to 200 characters' },
      credit: { type: 'boolean', description: 'a credit tenant (daily close) instead of a prefunded one' },
      'credit-limit': {
        type: 'string',
        value: 'MINOR',
        description: 'BS credit ceiling in minor units (none when omitted)',
      },
      'fee-bps': {
        type: 'string',
        value: 'N',
        description: 'fee in basis points of the delivered amount, 0 to 10000 (default 100)',
      },
      'fee-fixed': { type: 'string', value: 'MINOR', description: 'fixed fee in BS minor units (default 0)' },
      'spread-bps': { type: 'string', value: 'N', description: 'FX margin in basis points, 0 to 9999 (default 50)' },
      'reject-invalid-accounts': {
        type: 'boolean',
        description: 'fail transferencia payouts to account numbers with wrong check digits before the rail',
      },
    },
    run: (v) => {
      const body = {
        name: given(v.name),
        ...(v.credit ? { creditEnabled: true } : {}),
        creditLimit: minor(v['credit-limit'], 'credit-limit'),
        feeBps: int(v['fee-bps'], 'fee-bps'),
        feeFixed: minor(v['fee-fixed'], 'fee-fixed'),
        spreadBps: int(v['spread-bps'], 'spread-bps'),
        ...(v['reject-invalid-accounts'] ? { rejectInvalidAccounts: true } : {}),
      };
      return ask((admin) => admin.tenants.create(body));
    },
  },
  {
    name: 'tenants list',
    summary: 'List customer tenants, newest first (GET /v1/admin/tenants)',
    details:
      'Prints one page with has_more and next_cursor; pass next_cursor as --cursor for the next one, or use --all.',
    flags: pageFlags('tenants'),
    run: (v) => listPages((page) => ask((admin) => admin.tenants.listPage(page)), v),
  },
  {
    name: 'tenants get',
    summary: "Read one tenant's settings (GET /v1/admin/tenants/{id})",
    flags: { tenant: TENANT },
    run: (v) => ask((admin) => admin.tenants.get(given(v.tenant))),
  },
  {
    name: 'tenants update',
    summary: "Change a tenant's settings (PATCH /v1/admin/tenants/{id})",
    details:
      'Only the flags given change (at least one). New quotes use a new fee schedule and spread; quotes already given keep theirs.',
    flags: {
      tenant: TENANT,
      name: { type: 'string', value: 'NAME', description: 'display name, 1 to 200 characters' },
      credit: { type: 'string', value: 'on|off', description: 'on: a credit tenant (daily close); off: prefunded' },
      'credit-limit': { type: 'string', value: 'MINOR|none', description: 'BS credit ceiling in minor units, or none' },
      'fee-bps': { type: 'string', value: 'N', description: 'fee in basis points of the delivered amount, 0 to 10000' },
      'fee-fixed': { type: 'string', value: 'MINOR', description: 'fixed fee in BS minor units' },
      'spread-bps': { type: 'string', value: 'N', description: 'FX margin in basis points, 0 to 9999' },
      'reject-invalid-accounts': {
        type: 'string',
        value: 'on|off',
        description: 'on: fail transferencia payouts to account numbers with wrong check digits before the rail',
      },
    },
    run: (v) => {
      const body = {
        name: text(v.name),
        creditEnabled: onOff(v.credit, 'credit'),
        creditLimit: v['credit-limit'] === 'none' ? null : minor(v['credit-limit'], 'credit-limit'),
        feeBps: int(v['fee-bps'], 'fee-bps'),
        feeFixed: minor(v['fee-fixed'], 'fee-fixed'),
        spreadBps: int(v['spread-bps'], 'spread-bps'),
        rejectInvalidAccounts: onOff(v['reject-invalid-accounts'], 'reject-invalid-accounts'),
      };
      if (Object.values(body).every((value) => value === undefined))
        throw new UsageError(
          'tenants update: give at least one setting to change; see "bolivar tenants update --help"',
        );
      return ask((admin) => admin.tenants.update(given(v.tenant), body));
    },
  },
];
