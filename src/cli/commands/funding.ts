// A tenant's money: credit its prefunding balance, or run its daily close now.
import { randomUUID } from 'node:crypto';
import type { Command } from '../command.ts';
import { given, minor, MODE, TENANT, text } from '../flags.ts';
import { ask, type Admin } from '../service.ts';

export const FUNDING_COMMANDS: Command[] = [
  {
    name: 'fund',
    summary: "Credit a tenant's prefunding balance (POST /v1/admin/tenants/{id}/fundings)",
    details:
      'Prints the treasury position of that asset afterwards. Each run sends a new Idempotency-Key, so two runs are two\n' +
      'fundings; to retry one safely (an answer lost on the way), give the same --idempotency-key both times.',
    flags: {
      tenant: TENANT,
      mode: MODE,
      amount: {
        type: 'string',
        value: 'MINOR',
        required: true,
        description: 'integer minor units (5000000 = 50,000.00 Bs)',
      },
      asset: { type: 'string', value: 'ASSET', description: 'BS (default), USD, USDC or VESC' },
      'idempotency-key': {
        type: 'string',
        value: 'KEY',
        description: 'the Idempotency-Key to send (default: a new one per run)',
      },
    },
    run: (v) => {
      const body: Parameters<Admin['tenants']['fund']>[1] = {
        mode: given(v.mode),
        asset: text(v.asset) ?? 'BS',
        amount: minor(v.amount, 'amount')!,
      };
      const idempotencyKey = (v['idempotency-key'] as string | undefined) ?? `cli-${randomUUID()}`;
      return ask((admin) => admin.tenants.fund(given(v.tenant), body, { idempotencyKey }));
    },
  },
  {
    name: 'close',
    summary: 'Run the daily close of a tenant now, every asset (POST /v1/admin/tenants/{id}/close)',
    flags: { tenant: TENANT, mode: MODE },
    run: (v) => ask((admin) => admin.tenants.close(given(v.tenant), { mode: given(v.mode) })),
  },
];
