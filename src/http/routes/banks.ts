import type { RoutedBankCatalogue } from '../../services/routed-catalogue.ts';
import { partitionOf } from '../context.ts';
import { BankList, BankMethodQuery } from '../schemas/banks.ts';
import { errorResponses } from '../schemas/common.ts';
import type { App } from '../types.ts';

export async function bankRoutes(app: App, catalogue: RoutedBankCatalogue): Promise<void> {
  listPayoutBanksRoute(app, catalogue);
}

function listPayoutBanksRoute(app: App, catalogue: RoutedBankCatalogue): void {
  app.get(
    '/v1/payouts/banks',
    {
      config: { scopes: ['payments:read'] },
      schema: {
        tags: ['Payouts'],
        operationId: 'listPayoutBanks',
        summary: 'List the banks an instrument reaches',
        description:
          "The bank catalogue of the rail your payouts by `method` go to (in the key's mode): with the sandbox rail, 31 banks for `pago_movil`, 24 for `transferencia`; some banks accept only one instrument, and a code may carry a different name in each list. A beneficiary's `bankCode` must be in the list of its instrument, as this call shows it. The answer is cached per rail (10 minutes); when the rail's catalogue does not answer, the copy shipped with the service is served, so this call does not fail for that reason.",
        querystring: BankMethodQuery,
        response: { 200: BankList, ...errorResponses() },
      },
    },
    async function listPayoutBanks(request) {
      return {
        method: request.query.method,
        data: await catalogue.list(partitionOf(request.auth), request.query.method),
      };
    },
  );
}
