import { Type } from '@sinclair/typebox';
import type { Registry } from 'prom-client';
import type { Database } from '../../db/database.ts';
import { ApiError, envelope } from '../errors.ts';
import { Answer, errorAnswer } from '../schemas/common.ts';
import type { App } from '../types.ts';

const READY_TIMEOUT_MS = 2000;

/** `document: false` leaves out GET /v1/openapi.json (a worker process serves no API to describe). */
export async function operationsRoutes(app: App, db: Database, registry: Registry, options: { document?: boolean } = {}): Promise<void> {
  const Health = Type.Object({ status: Type.String(), database: Type.Optional(Type.String()) });

  app.get(
    '/health/live',
    {
      config: { public: true },
      schema: {
        tags: ['Operations'],
        operationId: 'healthLive',
        summary: 'The process is up',
        description: 'Liveness probe: answers 200 while the process runs. Needs no key.',
        security: [],
        response: { 200: Answer('The process is up', Health) },
      },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/health/ready',
    {
      config: { public: true },
      schema: {
        tags: ['Operations'],
        operationId: 'healthReady',
        summary: 'The database is reachable',
        description: 'Readiness probe: 200 when the database answers within 2 s, else 503 `service_unavailable`. Needs no key.',
        security: [],
        response: {
          200: Answer('The database answered', Health),
          503: errorAnswer(['service_unavailable'], '`service_unavailable`: the database did not answer within 2 s, or this process is shutting down'),
        },
      },
    },
    async (request, reply) => {
      try {
        await Promise.race([
          db.query('SELECT 1'),
          new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS).unref()),
        ]);
        return { status: 'ok', database: db.engine };
      } catch {
        return reply.code(503).send(envelope(new ApiError('service_unavailable', 'The database is not reachable.'), request.id));
      }
    },
  );

  app.get(
    '/metrics',
    {
      config: { public: true },
      schema: {
        tags: ['Operations'],
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        description:
          'Prometheus text format. Request counts (`http_requests_total`) and latency (`http_request_duration_seconds`) per route template; ' +
          'the business metrics (`bolivar_*`: payouts by status and reason, group-commit batches, rail calls, reaper resolutions and lag, ' +
          'outbox backlog, webhook deliveries, idempotent replays, database pool, worker loop passes); process metrics. ' +
          'Every process serves it, a `ROLE=worker` one included. Labels never carry an id.',
        security: [],
        response: { 200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
    async (_request, reply) => {
      const body = await registry.metrics();
      return reply.type(registry.contentType).send(body);
    },
  );

  if (options.document === false) return;
  app.get(
    '/v1/openapi.json',
    {
      config: { public: true },
      schema: { hide: true },
    },
    async () => app.swagger(),
  );
}
