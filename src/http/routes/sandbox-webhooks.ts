import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { SandboxReceiptRow } from '../../db/repositories/webhooks.ts';
import type { SandboxWebhookService } from '../../services/sandbox-webhooks.ts';
import { partitionOf } from '../context.ts';
import { ApiError } from '../../domain/errors.ts';
import { errorResponses, errorResponsesDescribed } from '../schemas/common.ts';
import {
  FailingReceiverAnswer,
  SandboxDeliveryList,
  SandboxDeliveryQuery,
  SinkQuery,
  SinkReceipt,
} from '../schemas/events.ts';
import type { App } from '../types.ts';

// Documents the request body without constraining it: the sink reads the raw bytes and decides.
const WebhookBody = Type.Unknown({ description: 'A webhook delivery body, exactly as our dispatcher sent it' });

function sandboxDeliveryView(row: SandboxReceiptRow) {
  return {
    id: row.id.toString(),
    event_id: row.event_id.toString(),
    received_at: row.received_at.toISOString(),
    headers: row.headers,
    raw_body: row.raw_body,
    signature_verified: row.signature_verified,
  };
}

/** Headers as received, minus hop-by-hop noise a reader never needs. */
function receivedHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && name !== 'connection' && name !== 'keep-alive') out[name] = value;
  }
  return out;
}

const SINK_401 =
  "`webhook_signature_invalid`: not a correctly signed delivery of a test-mode event (x-event-id missing or unknown, an event of a live program, a signature or x-timestamp that does not verify, or a body that is not that event's). Nothing was stored.";

/**
 * The sandbox webhook receivers. `failing` and `sink` are called by our own dispatcher, which has no
 * API key: they are public. So the sink believes nothing the caller says about the program: the
 * event named by x-event-id gives the tenant and mode, and that program's endpoint secret must have
 * signed the delivery. It answers every refusal alike, so that it tells a stranger nothing about
 * which events or tenants exist. It reads the body as raw bytes (its own content-type parser, in
 * this plugin scope only) to verify the signature over exactly what arrived, as an integrator's
 * receiver must.
 */
export async function sandboxWebhookRoutes(app: App, sandbox: SandboxWebhookService): Promise<void> {
  await app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    sandboxWebhookSinkRoute(scope, sandbox);
    sandboxWebhookFailingRoute(scope);
  });
  listSandboxWebhookDeliveriesRoute(app, sandbox);
}

/** Registered in the raw-body scope of sandboxWebhookRoutes: the body arrives as the bytes sent. */
function sandboxWebhookSinkRoute(scope: App, sandbox: SandboxWebhookService): void {
  scope.post(
    '/v1/sandbox/webhooks/sink',
    {
      config: { public: true },
      schema: {
        tags: ['Sandbox'],
        operationId: 'sandboxWebhookSink',
        summary: 'Sandbox receiver that keeps the verified deliveries of test-mode events',
        description:
          'Point a test-mode endpoint at exactly this URL, without a query string (the first-start sandbox tenant is configured so). ' +
          'The sink identifies the program from the delivery itself: `x-event-id` names a test-mode event, which gives the tenant, and the delivery must be signed ' +
          "(`x-signature`, `x-timestamp` within ±5 minutes) with that program's endpoint secret, the current one or, during a rotation, the previous one; the body must be that event's (its `id` equals `x-event-id`). " +
          'Such a delivery is stored, headers and raw body exactly as received, and answered 200; read them with `GET /v1/sandbox/webhooks`. ' +
          'Anything else, including an event of a live program, is answered 401 `webhook_signature_invalid`, the same answer whether or not the event or tenant exists, and nothing is stored. ' +
          'A query string is accepted and ignored (`tenant` and `mode` are deprecated leftovers of the former URL). Needs no key (our dispatcher calls it).',
        security: [],
        querystring: SinkQuery,
        body: WebhookBody,
        response: {
          200: SinkReceipt,
          ...errorResponsesDescribed(
            { 401: SINK_401 },
            'webhook_signature_invalid',
            'payload_too_large',
            'unsupported_media_type',
          ),
        },
      },
    },
    async function sandboxWebhookSink(request) {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const outcome = await sandbox.receive({ headers: receivedHeaders(request.headers), rawBody: raw });
      if (!outcome.stored) {
        request.log.info({ refusal: outcome.refusal }, 'sandbox sink refused a delivery');
        throw new ApiError(
          'webhook_signature_invalid',
          "Not a correctly signed delivery of a test-mode event: the sink stores only what our dispatcher sent, signed with the program's endpoint secret. Nothing was stored.",
        );
      }
      return {
        received: true,
        id: outcome.receipt.id.toString(),
        signature_verified: outcome.receipt.signature_verified,
      };
    },
  );
}

/** Registered in the raw-body scope of sandboxWebhookRoutes: any body is accepted unread. */
function sandboxWebhookFailingRoute(scope: App): void {
  scope.post(
    '/v1/sandbox/webhooks/failing',
    {
      config: { public: true },
      schema: {
        tags: ['Sandbox'],
        operationId: 'sandboxWebhookFailing',
        summary: 'Sandbox receiver that always answers 500',
        description:
          'Point a test-mode endpoint here to watch the retry schedule, the `dead` queue and `POST /v1/events/retry-dead` at work. Always 500, whatever is sent, except a body over 64 KiB, which is refused with 413 `payload_too_large` before it is read (no delivery is that large). Needs no key.',
        security: [],
        body: WebhookBody,
        response: { 500: FailingReceiverAnswer, ...errorResponses('payload_too_large') },
      },
    },
    async function sandboxWebhookFailing(request, reply) {
      return reply.code(500).send({
        error: {
          type: 'api_error',
          code: 'sandbox_receiver_failure',
          message: 'This sandbox receiver always answers 500, so that webhook retries can be observed.',
          request_id: request.id,
        },
      });
    },
  );
}

function listSandboxWebhookDeliveriesRoute(app: App, sandbox: SandboxWebhookService): void {
  app.get(
    '/v1/sandbox/webhooks',
    {
      config: { scopes: ['events:read'] },
      schema: {
        tags: ['Sandbox'],
        operationId: 'listSandboxWebhookDeliveries',
        summary: 'What the sandbox sink received',
        description:
          'The deliveries `POST /v1/sandbox/webhooks/sink` stored for this tenant, newest first: headers and raw body exactly as received (`signature_verified` is always true: the sink keeps only verified deliveries of test-mode events, so a live key sees none). The sink keeps the most recent 1,000 per program. Filter by `eventId`; page with `cursor`.',
        querystring: SandboxDeliveryQuery,
        response: { 200: SandboxDeliveryList, ...errorResponses() },
      },
    },
    async function listSandboxWebhookDeliveries(request) {
      const { limit, cursor, eventId } = request.query;
      const page = await sandbox.list(partitionOf(request.auth), {
        limit: limit ?? 25,
        cursor: cursor === undefined ? undefined : BigInt(cursor),
        eventId: eventId === undefined ? undefined : BigInt(eventId),
      });
      return { data: page.rows.map(sandboxDeliveryView), has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );
}
