import type { QuoteRow } from '../../db/repositories/quotes.ts';
import { quoteStatus, type QuoteService } from '../../services/quotes.ts';
import { partitionOf } from '../context.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import { IdParam } from '../schemas/tenant.ts';
import { CreateQuoteBody, Quote } from '../schemas/quotes.ts';
import type { App } from '../types.ts';

function quoteView(row: QuoteRow, now: Date) {
  return {
    id: row.id,
    fixed: row.fixed,
    spend: { asset: row.spend_asset, amount: row.spend_amount.toString() },
    deliver: { asset: row.deliver_asset, amount: row.deliver_amount.toString() },
    fee: { asset: 'BS', amount: row.fee_amount.toString() },
    rate:
      row.rate_value === null ? null : { value: row.rate_value, market: row.rate_market!, spread_bps: row.spread_bps! },
    status: quoteStatus(row, now),
    expires_at: row.expires_at.toISOString(),
    created_at: row.created_at.toISOString(),
    metadata: row.metadata,
  };
}

export async function quoteRoutes(app: App, quotes: QuoteService): Promise<void> {
  createQuoteRoute(app, quotes);
  getQuoteRoute(app, quotes);
}

function createQuoteRoute(app: App, quotes: QuoteService): void {
  app.post(
    '/v1/quotes',
    {
      config: { scopes: ['quotes:write'], idempotency: 'optional' },
      schema: {
        tags: ['Quotes'],
        operationId: 'createQuote',
        summary: 'Quote a disbursement',
        description: `Fixes the delivered amount, the rate and the fee until \`expires_at\`. Free: reserves no balance and consumes no limit.

Rules (each violation is 400 \`validation_failed\` saying what to send instead):
1. \`amount\` on exactly one side.
2. Deliver mode (recommended): \`deliver: {asset: "BS", amount}\`; the beneficiary receives it exactly and the fee is added on top (\`spend = deliver + fee\`, paid in BS).
3. Spend mode: \`spend: {asset, amount}\` plus \`deliver: {asset: "BS"}\`; the amount is converted at \`rate.value\` and the fee deducted. The assets must differ.
4. \`spend.amount\` without \`deliver.asset\` is rejected.
5. \`deliver.amount\` while paying in another asset is rejected.

A conversion needs a fresh rate; without one the answer is 503 \`rate_unavailable\`.`,
        body: CreateQuoteBody,
        response: { 201: Answer('The quote, open until `expires_at`', Quote), ...errorResponses('rate_unavailable') },
      },
    },
    async function createQuote(request, reply) {
      const row = await quotes.create(partitionOf(request.auth), request.body);
      return reply.code(201).send(quoteView(row, quotes.now()));
    },
  );
}

function getQuoteRoute(app: App, quotes: QuoteService): void {
  app.get(
    '/v1/quotes/:id',
    {
      config: { scopes: ['quotes:write', 'payments:read'] },
      schema: {
        tags: ['Quotes'],
        operationId: 'getQuote',
        summary: 'Read a quote and its current status',
        description:
          'Same shape as at creation, with `status` now: check that a quote is still `open` before retrying, or audit the margin (`rate.market` against `rate.value`).',
        params: IdParam,
        response: { 200: Answer('The quote and its status now', Quote), ...errorResponses('resource_not_found') },
      },
    },
    async function getQuote(request) {
      return quoteView(await quotes.get(partitionOf(request.auth), request.params.id), quotes.now());
    },
  );
}
