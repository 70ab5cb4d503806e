import type { PayoutBatchService } from '../../services/payout-batches.ts';
import type { BatchItemRequest } from '../../services/payout-batch-items.ts';
import { idempotencyOf, partitionOf } from '../context.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import {
  CreatePayoutBatchBody,
  PayoutBatch,
  PayoutBatchListQuery,
  PayoutBatchPage,
  PayoutBatchParams,
} from '../schemas/payout-batches.ts';
import type { App } from '../types.ts';
import { sendWriterAnswer } from './payouts.ts';

/** Body bytes a batch may take per item (an inline beneficiary, a sender and metadata fit in 2 KiB). */
const BATCH_BODY_BYTES_PER_ITEM = 4096;

export async function payoutBatchRoutes(app: App, batches: PayoutBatchService, maxItems: number): Promise<void> {
  createPayoutBatchRoute(app, batches, maxItems);
  listPayoutBatchesRoute(app, batches);
  getPayoutBatchRoute(app, batches);
}

function createPayoutBatchRoute(app: App, batches: PayoutBatchService, maxItems: number): void {
  const bodyLimit = Math.max(64 * 1024, maxItems * BATCH_BODY_BYTES_PER_ITEM);
  app.post(
    '/v1/payout-batches',
    {
      bodyLimit,
      config: {
        scopes: ['payments:write'],
        idempotency: 'required',
        idempotencyInWriter: true,
        background: true,
        itemBudget: true,
      },
      schema: {
        tags: ['Payouts'],
        operationId: 'createPayoutBatch',
        summary: 'Disburse many payouts in one call',
        description: `Up to ${maxItems} payouts (\`PAYOUT_BATCH_MAX_ITEMS\`) in one request, each the body of \`POST /v1/payouts\` with a \`reference\` of yours, and \`deliver: {asset: "BS", amount}\` instead of \`quoteId\` if you like (quoted now with your fee, as \`POST /v1/quotes\` in deliver mode). The body may take ${bodyLimit / 1024} KiB.

Each item is decided as a single payout would be, in item order, against the balance and limits the items before it left: a payout that fails before the rail is a \`failed\` payment with its \`reason\`; an item a single payout would refuse with an HTTP error (a limit, the funds, a consumed or expired quote, an unknown quote or beneficiary) is \`refused\` with that error's \`code\`, \`message\` and \`meta\`, and no payment. The rest are \`submitted\` and go to the rail right after the answer. Each payment is an ordinary payment: same states, webhooks, statement rows (with \`batch_id\`) and recovery.

A malformed item (a field's type or format, an unknown field, both or neither of \`quoteId\` and \`deliver\`, a reference repeated in the batch) rejects the whole batch with 400 \`validation_failed\` naming \`items[i].field\`, and nothing is written.

Each item counts against a budget of items per second: \`RATE_LIMIT_RPS\` per API key (an item costs what the payout request it replaces costs) and \`PAYOUT_BATCH_TENANT_ITEMS_PER_S\` per tenant, all its keys together. A full batch passes at once; the next waits for the budget to refill: 429 \`rate_limited\` with \`Retry-After\` (seconds) and \`meta.budget\`, and nothing is written. A batch your funds cannot pay a single item of is refused whole before any item is priced: 422 \`insufficient_tenant_funds\` (\`meta\` as a single payout's, \`required\` the least its cheapest item takes: a \`deliver\` item's amount before the fee, one minor unit for an item paying with a quote), and nothing is written. Otherwise the items are checked against your funds and limits before anything of them is written: an item you cannot pay is \`refused\` (\`insufficient_tenant_funds\`, \`limit_exceeded\`) with no quote made for it.

Requires an \`Idempotency-Key\`: the same key and body answer the batch as it stands now (\`idempotent-replayed: true\`); another body is 409 \`idempotency_key_reused\`; while the first request still runs, 409 \`idempotency_request_in_progress\`. Each item's \`reference\` pays at most once per mode for 24 h: a batch retried with a new key answers an item already paid with its payment, never a second one, and a request that stopped midway (a crash, a lost connection) is completed by its retry with the same key.`,
        body: CreatePayoutBatchBody,
        response: {
          201: Answer("The batch: counts and totals by status, and each item's result in item order", PayoutBatch),
          ...errorResponses(
            'payout_batch_too_large',
            'insufficient_tenant_funds',
            'payout_batches_in_progress',
            'rate_unavailable',
            'rate_limited',
          ),
        },
      },
    },
    async function createPayoutBatch(request, reply) {
      // Its items were charged to the budget before validation (http/batch-item-budget.ts).
      const body = request.body as unknown as { items: BatchItemRequest[] };
      const answer = await batches.create(partitionOf(request.auth), body.items, {
        ...idempotencyOf(request),
        requestId: request.id,
        createdByKeyId: request.auth!.apiKeyId,
      });
      return sendWriterAnswer(reply, answer);
    },
  );
}

function listPayoutBatchesRoute(app: App, batches: PayoutBatchService): void {
  app.get(
    '/v1/payout-batches',
    {
      config: { scopes: ['payments:read'] },
      schema: {
        tags: ['Payouts'],
        operationId: 'listPayoutBatches',
        summary: 'List payout batches',
        description:
          'Newest first, without their items (read one batch for those). Pass `next_cursor` as `cursor` for the next page.',
        querystring: PayoutBatchListQuery,
        response: { 200: PayoutBatchPage, ...errorResponses() },
      },
    },
    async function listPayoutBatches(request) {
      return batches.list(partitionOf(request.auth), {
        limit: request.query.limit ?? 25,
        cursor: request.query.cursor,
      });
    },
  );
}

function getPayoutBatchRoute(app: App, batches: PayoutBatchService): void {
  app.get(
    '/v1/payout-batches/:id',
    {
      config: { scopes: ['payments:read'] },
      schema: {
        tags: ['Payouts'],
        operationId: 'getPayoutBatch',
        summary: 'Read a payout batch',
        description:
          "Counts and totals by status, each item's result with its payment's status as it stands now, and `completedAt` once every payment is final. Each payment's own detail is `GET /v1/payments/{id}`; `GET /v1/payments?batchId=` lists them as statement rows.",
        params: PayoutBatchParams,
        response: { 200: PayoutBatch, ...errorResponses('resource_not_found') },
      },
    },
    async function getPayoutBatch(request, reply) {
      const body = await batches.get(partitionOf(request.auth), request.params.id);
      return reply
        .code(200)
        .header('content-type', 'application/json; charset=utf-8')
        .send(body as never);
    },
  );
}
