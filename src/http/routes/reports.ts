import type { PayoutReportService } from '../../services/payout-report.ts';
import { REPORT_DAYS_MAX } from '../../domain/payout-report.ts';
import { PLATFORM_SCOPE } from '../../domain/api-keys.ts';
import { errorResponses } from '../schemas/common.ts';
import { PayoutReport, PayoutReportQuery } from '../../contract/payout-report.ts';
import type { App } from '../types.ts';
import { assert } from '../../domain/assert.ts';

export async function reportRoutes(app: App, reports: PayoutReportService): Promise<void> {
  app.get(
    '/v1/reports/payouts',
    {
      config: { scopes: ['payments:read', PLATFORM_SCOPE] },
      schema: {
        tags: ['Reports'],
        operationId: 'getPayoutReport',
        summary: 'Payouts over a time range, for charts',
        description: `What an operator checks first each morning, over whole Caracas calendar days \`from\`–\`to\` (inclusive), in buckets of an hour (ranges of up to ${REPORT_DAYS_MAX.hour} days) or a Caracas day (up to ${REPORT_DAYS_MAX.day} days):

- payments **created** in each bucket, by their status now, with their payout amounts (\`byStatus\`), and what of it was delivered (\`deliveredAmount\`, the \`settled\` ones);
- time from creation to the outcome (p50, p95, nearest-rank) of the bucket's payments that have one;
- webhook delivery attempts made in each bucket by outcome, and their duration (p50, p95);
- the prefunded balance and the credit drawn at each bucket's end (now, for the bucket under way);
- over the whole range: the success rate by beneficiary bank and by instrument (settled ÷ payments with an outcome), and failed, returned and reversed payments by reason.

Every bucket of the range is listed, empty ones included. A bucket's payments are exactly those \`GET /v1/payments\` lists with \`createdFrom\` = its \`start\` and \`createdBefore\` = its \`end\`.

A tenant's key (scope \`payments:read\`) reports on its own tenant in its own mode. The platform key reports on one tenant (\`tenantId\`) or on every tenant together, in the \`mode\` it names (required). An invalid range (\`from\` after \`to\`, longer than the granularity allows) is 400 \`validation_failed\`; a \`tenantId\` the platform key names that is not a customer tenant is 404 \`resource_not_found\`.`,
        querystring: PayoutReportQuery,
        response: { 200: PayoutReport, ...errorResponses('resource_not_found') },
      },
    },
    async function getPayoutReport(request) {
      assert(request.auth, 'route reached without authentication');
      return reports.report(request.auth, request.query);
    },
  );
}
