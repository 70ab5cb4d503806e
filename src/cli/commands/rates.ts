// The FX rates, in BS per unit of each asset.
import type { Command } from '../command.ts';
import { given } from '../flags.ts';
import { ask } from '../service.ts';

export const RATE_COMMANDS: Command[] = [
  {
    name: 'rates set',
    summary: 'Set the market rate of an asset, in BS per unit (PUT /v1/admin/rates/{asset})',
    flags: {
      asset: { type: 'string', value: 'USD|USDC|VESC', required: true, description: 'the asset priced in BS' },
      market: {
        type: 'string',
        value: 'DECIMAL',
        required: true,
        description: 'BS per 1 unit, e.g. 930.50 (at most 8 decimals)',
      },
    },
    run: (v) => ask((admin) => admin.rates.set(given(v.asset), { market: given(v.market) })),
  },
  {
    name: 'rates list',
    summary: 'List the FX rates, in BS per unit, with when each was set (GET /v1/admin/rates)',
    flags: {},
    run: () => ask((admin) => admin.rates.list()),
  },
];
