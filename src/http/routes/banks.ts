import type { BankCatalogue } from '../../rails/catalogue.ts';
import { BankList, BankMethodQuery } from '../schemas/banks.ts';
import { errorResponses } from '../schemas/common.ts';
import type { App } from '../types.ts';

export async function bankRoutes(app: App, catalogue: BankCatalogue): Promise<void> {
  listPayoutBanksRoute(app, catalogue);
}

function listPayoutBanksRoute(app: App, catalogue: BankCatalogue): void {
  app.get(
    '/v1/payouts/banks',
    {
      config: { scopes: ['payments:read'] },
      schema: {
        tags: ['Payouts'],
        operationId: 'listPayoutBanks',
        summary: 'List the banks an instrument reaches',
        description:
          "The rail's bank catalogue for `method`: 31 banks for `pago_movil`, 24 for `transferencia`; some banks accept only one instrument, and a code may carry a different name in each list. A beneficiary's `bankCode` must be in the list of its instrument. The answer is cached; when the rail's catalogue does not answer, a local copy is served, so this call does not fail for that reason.",
        querystring: BankMethodQuery,
        response: { 200: BankList, ...errorResponses() },
      },
    },
    async function listPayoutBanks(request) {
      return { method: request.query.method, data: await catalogue.list(request.query.method) };
    },
  );
}
