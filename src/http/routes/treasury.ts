import type { TreasuryService } from '../../services/treasury.ts';
import { partitionOf } from '../context.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import { AssetQuery, TreasuryPosition } from '../schemas/payouts.ts';
import type { App } from '../types.ts';

export async function treasuryRoutes(app: App, treasury: TreasuryService): Promise<void> {
  getTreasuryPositionRoute(app, treasury);
}

function getTreasuryPositionRoute(app: App, treasury: TreasuryService): void {
  app.get(
    '/v1/treasury/position',
    {
      config: { scopes: ['treasury:read'] },
      schema: {
        tags: ['Treasury'],
        operationId: 'getTreasuryPosition',
        summary: 'Prefunding balance, credit and fees, read from the ledger',
        description:
          'Prefunded tenants disburse from `prefundingBalance`; credit tenants (daily close) draw on credit up to `creditLimit`, settled at Caracas midnight.',
        querystring: AssetQuery,
        response: { 200: Answer('Your position in that asset', TreasuryPosition), ...errorResponses() },
      },
    },
    async function getTreasuryPosition(request) {
      return treasury.position(partitionOf(request.auth), request.query.asset ?? 'BS');
    },
  );
}
