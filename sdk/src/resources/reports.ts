// Reports: the payout report (GET /v1/reports/payouts), over whole Caracas days in hourly or daily buckets.
import type { GetPayoutReportData, PayoutReport } from '../generated/index.js';
import type { RequestOptions, Transport } from '../transport.js';
import type { QueryOf } from './types.js';

/** `from` and `to` (inclusive Caracas days, YYYY-MM-DD), `granularity`, and for the platform key `mode` (required) and `tenantId`. */
export type PayoutReportQuery = QueryOf<GetPayoutReportData>;

export class ReportsResource {
  constructor(private readonly transport: Transport) {}

  /**
   * Payments by status and amount, time to outcome, webhook attempts and balances per bucket, and
   * success rates by bank and instrument over the range. A tenant's key reports on its own tenant
   * and mode; the platform key names the `mode`, and a `tenantId` or none (every tenant summed).
   */
  async payouts(query: PayoutReportQuery, options?: RequestOptions): Promise<PayoutReport> {
    return (await this.transport.request<PayoutReport>({ method: 'GET', path: '/v1/reports/payouts', query, options }))
      .data;
  }
}
