import { Type } from '@sinclair/typebox';
import type { StoredRate as StoredRateRow } from '../../db/repositories/rates.ts';
import { auditActorOf } from '../context.ts';
import type { RateService } from '../../services/rates.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import { RateAssetParam, SetRateBody, StoredRate } from '../schemas/quotes.ts';
import type { App } from '../types.ts';
import { ADMIN } from './admin-tenants.ts';

const rateView = (row: StoredRateRow) => ({
  asset: row.asset,
  market: row.market_text,
  updatedAt: row.updated_at.toISOString(),
});

export async function adminRateRoutes(app: App, rates: RateService): Promise<void> {
  adminSetRateRoute(app, rates);
  adminListRatesRoute(app, rates);
}

function adminSetRateRoute(app: App, rates: RateService): void {
  app.put(
    '/v1/admin/rates/:asset',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminSetRate',
        summary: 'Set the market rate of an asset (BS per unit)',
        description:
          'The default rate source. A rate older than RATE_MAX_AGE_SECONDS (24 h) is stale and quotes that convert answer 503 `rate_unavailable`.',
        params: RateAssetParam,
        body: SetRateBody,
        response: { 200: Answer('The rate, stored', StoredRate), ...errorResponses() },
      },
    },
    async function adminSetRate(request) {
      return rateView(await rates.set(request.params.asset, request.body.market, auditActorOf(request)));
    },
  );
}

function adminListRatesRoute(app: App, rates: RateService): void {
  app.get(
    '/v1/admin/rates',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminListRates',
        summary: 'List the stored market rates',
        description: 'Every stored rate with the time it was set.',
        response: {
          200: Answer('Every stored rate', Type.Object({ data: Type.Array(StoredRate) })),
          ...errorResponses(),
        },
      },
    },
    async function adminListRates() {
      return { data: (await rates.list()).map(rateView) };
    },
  );
}
