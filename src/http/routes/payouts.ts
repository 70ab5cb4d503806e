import type { PayoutService } from '../../services/payouts.ts';
import type { WriterAnswer } from '../../services/commit/writer-answer.ts';
import { idempotencyOf, partitionOf } from '../context.ts';
import { IDEMPOTENT_REPLAYED_HEADER } from '../plugins/idempotency.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import { CreatePayoutBody, PayoutResult } from '../schemas/payouts.ts';
import { PayoutCallbacks } from '../schemas/webhooks.ts';
import type { App } from '../types.ts';

/** Sends a writer's answer as it was recorded. */
export function sendWriterAnswer(reply: { code(status: number): any }, answer: WriterAnswer) {
  const sent = reply.code(answer.status).header('content-type', 'application/json; charset=utf-8');
  if (answer.replayed) sent.header(IDEMPOTENT_REPLAYED_HEADER, 'true');
  return sent.send(answer.body);
}

export async function payoutRoutes(app: App, payouts: PayoutService): Promise<void> {
  createPayoutRoute(app, payouts);
}

function createPayoutRoute(app: App, payouts: PayoutService): void {
  app.post(
    '/v1/payouts',
    {
      config: { scopes: ['payments:write'], idempotency: 'required', idempotencyInWriter: true },
      schema: {
        tags: ['Payouts'],
        operationId: 'createPayout',
        summary: 'Disburse bolivares',
        description: `Moves money: consumes the quote, charges the source balance (or credit line) and sends through the rail.

The usual answer is 201 \`submitted\`; the outcome arrives by webhook (\`payment.settled\` or \`payment.failed\`). Never retry
\`submitted\` or \`unknown\`: wait for the webhook or read \`GET /v1/payments/{id}\`. A rail rejection is 201 with
\`status: failed\` and a \`reason\` (nothing charged), not an HTTP error.

Requires an \`Idempotency-Key\` header: the same key with the same body returns the original answer (header
\`idempotent-replayed: true\`); with a different body, 409 \`idempotency_key_reused\`; while the first request is still
running, 409 \`idempotency_request_in_progress\` (retry it). The key is recorded in the same transaction as the payment:
a retry after any crash or error (a 503, a lost connection) answers 201 with that payment as it stands, never a second
payment and never \`quote_already_consumed\`.

Errors, in the order they are checked: 400 validation, 404 unknown quote or beneficiary, 409 \`quote_already_consumed\`,
422 \`quote_expired\`, 422 \`limit_exceeded\` (instrument cap or configured limit; \`meta\` names rule, cap and scope),
422 \`insufficient_tenant_funds\`.`,
        body: CreatePayoutBody,
        callbacks: PayoutCallbacks,
        response: {
          201: Answer(
            'The payout: usually `submitted` (the outcome arrives by webhook), or `failed` with a `reason` when it could not be sent (nothing charged). A retry with the same `Idempotency-Key` gets the payment as it stands',
            PayoutResult,
          ),
          ...errorResponses(
            'resource_not_found',
            'quote_already_consumed',
            'quote_expired',
            'limit_exceeded',
            'insufficient_tenant_funds',
            'rate_unavailable',
          ),
        },
      },
    },
    async function createPayout(request, reply) {
      const answer = await payouts.create(partitionOf(request.auth), request.body as never, {
        ...idempotencyOf(request),
        requestId: request.id,
        createdByKeyId: request.auth!.apiKeyId,
      });
      return sendWriterAnswer(reply, answer);
    },
  );
}
