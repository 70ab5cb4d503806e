import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { SandboxReceiptRow } from '../../db/repositories/webhooks.ts';
import type { SandboxWebhookService } from '../../services/sandbox-webhooks.ts';
import { partitionOf } from '../context.ts';
import { errorResponses } from '../schemas/common.ts';
import { FailingReceiverAnswer, SandboxDeliveryList, SandboxDeliveryQuery, SinkQuery, SinkReceipt } from '../schemas/events.ts';
import type { App } from '../types.ts';

// Documents the request body without constraining it: the sink must store whatever bytes arrive.
const WebhookBody = Type.Unknown({ description: 'A webhook delivery body (the sink stores any bytes as received)' });

export function sandboxDeliveryView(row: SandboxReceiptRow) {
  return {
    id: row.id.toString(),
    event_id: row.event_id === null ? null : row.event_id.toString(),
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

/**
 * The sandbox webhook receivers. `failing` and `sink` are called by our own
 * dispatcher, which has no API key: they are public, and the sink learns the program from its URL
 * (`?tenant=<id>&mode=test`, the URL the bootstrap configures). The sink reads the body as raw bytes
 * (its own content-type parser, in this plugin scope only) so it can verify the signature over
 * exactly what arrived, as an integrator's receiver must.
 */
export async function sandboxWebhookRoutes(app: App, sandbox: SandboxWebhookService): Promise<void> {
  await app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>();
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    scope.post(
      '/v1/sandbox/webhooks/sink',
      {
        config: { public: true },
        schema: {
          tags: ['Sandbox'],
          operationId: 'sandboxWebhookSink',
          summary: 'Sandbox receiver that stores what it receives',
          description:
            'Point a test-mode endpoint here (`?tenant=<tenant id>&mode=test`; the first-start sandbox tenant is configured so). Stores the headers and the raw body exactly as received and whether the signature verified against that program\'s secrets; answers 200. Read them with `GET /v1/sandbox/webhooks`. Needs no key (our dispatcher calls it).',
          security: [],
          querystring: SinkQuery,
          body: WebhookBody,
          response: { 200: SinkReceipt, ...errorResponses(400, 404, 413) },
        },
      },
      async (request) => {
        const raw = Buffer.isBuffer(request.body) ? request.body.toString('utf8') : '';
        const receipt = await sandbox.receive({
          tenantId: request.query.tenant,
          mode: request.query.mode ?? 'test',
          headers: receivedHeaders(request.headers),
          rawBody: raw,
        });
        return { received: true, id: receipt.id.toString(), signature_verified: receipt.signature_verified };
      },
    );

    scope.post(
      '/v1/sandbox/webhooks/failing',
      {
        config: { public: true },
        schema: {
          tags: ['Sandbox'],
          operationId: 'sandboxWebhookFailing',
          summary: 'Sandbox receiver that always answers 500',
          description:
            'Point a test-mode endpoint here to watch the retry schedule, the `dead` queue and `POST /v1/events/retry-dead` at work. Always 500, whatever is sent. Needs no key.',
          security: [],
          body: WebhookBody,
          response: { 500: FailingReceiverAnswer },
        },
      },
      async (request, reply) =>
        reply.code(500).send({
          error: {
            type: 'api_error',
            code: 'sandbox_receiver_failure',
            message: 'This sandbox receiver always answers 500, so that webhook retries can be observed.',
            request_id: request.id,
          },
        }),
    );
  });

  app.get(
    '/v1/sandbox/webhooks',
    {
      config: { scopes: ['events:read'] },
      schema: {
        tags: ['Sandbox'],
        operationId: 'listSandboxWebhookDeliveries',
        summary: 'What the sandbox sink received',
        description:
          'Deliveries received by `POST /v1/sandbox/webhooks/sink` for this tenant and mode, newest first: headers, raw body and whether the signature verified. The sink keeps the most recent 1,000 per program. Filter by `eventId`; page with `cursor`.',
        querystring: SandboxDeliveryQuery,
        response: { 200: SandboxDeliveryList, ...errorResponses(400, 403) },
      },
    },
    async (request) => {
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
