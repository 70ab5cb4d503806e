import { Type } from '@sinclair/typebox';
import type { Registry } from 'prom-client';
import type { Database } from '../../db/database.ts';
import { ApiError } from '../../domain/errors.ts';
import { envelope } from '../../contract/error-envelope.ts';
import { checkMetricsAccess, type MetricsAccess } from '../plugins/metrics.ts';
import { Readiness } from '../readiness.ts';
import { Answer, errorAnswer } from '../schemas/common.ts';
import type { App } from '../types.ts';

/**
 * `document: false` leaves out GET /v1/openapi.json (a worker process serves no API to describe);
 * `metrics` says who may read /metrics on this port.
 */
const Health = Type.Object({ status: Type.String(), database: Type.Optional(Type.String()) });

export async function operationsRoutes(
  app: App,
  db: Database,
  registry: Registry,
  options: { document?: boolean; metrics: MetricsAccess },
): Promise<void> {
  const readiness = new Readiness(db);
  healthLiveRoute(app);
  healthReadyRoute(app, db, readiness);
  metricsRoute(app, registry, options.metrics);
  if (options.document === false) return;
  openApiDocumentRoute(app);
}

function healthLiveRoute(app: App): void {
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
    async function healthLive() {
      return { status: 'ok' };
    },
  );
}

function healthReadyRoute(app: App, db: Database, readiness: Readiness): void {
  app.get(
    '/health/ready',
    {
      config: { public: true },
      schema: {
        tags: ['Operations'],
        operationId: 'healthReady',
        summary: 'The database is reachable',
        description:
          'Readiness probe: 200 when the database answers within 2 s, else 503 `service_unavailable`. Needs no key. ' +
          'The database is asked at most once a second per process: the answer may be up to 1 s old.',
        security: [],
        response: {
          200: Answer('The database answered', Health),
          503: errorAnswer(
            ['service_unavailable'],
            '`service_unavailable`: the database did not answer within 2 s, or this process is shutting down',
          ),
        },
      },
    },
    async function healthReady(request, reply) {
      if (await readiness.ready()) return { status: 'ok', database: db.engine };
      return reply
        .code(503)
        .send(envelope(new ApiError('service_unavailable', 'The database is not reachable.'), request.id));
    },
  );
}

function openApiDocumentRoute(app: App): void {
  app.get(
    '/v1/openapi.json',
    {
      config: { public: true },
      schema: { hide: true },
    },
    async function openApiDocument() {
      return app.swagger();
    },
  );
}

/** GET /metrics, answered as `access` says (plugins/metrics.ts): on the API port, or on METRICS_PORT's listener. */
export function metricsRoute(app: App, registry: Registry, access: MetricsAccess): void {
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
          'Every process serves it, a `ROLE=worker` one included. Labels never carry an id. ' +
          'Not public: with `METRICS_TOKEN` set it needs `Authorization: Bearer <METRICS_TOKEN>` (else 401 `metrics_token_invalid`); ' +
          'without it, this port answers 404 `route_not_found` and the metrics are served only on the internal `METRICS_PORT`, if set.',
        security: [{ MetricsToken: [] }],
        response: {
          200: {
            description: 'Prometheus text exposition format',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          401: errorAnswer(
            ['metrics_token_invalid'],
            '`metrics_token_invalid`: `METRICS_TOKEN` is set and the request does not bear it (`WWW-Authenticate: Bearer`)',
          ),
          404: errorAnswer(
            ['route_not_found'],
            '`route_not_found`: `METRICS_TOKEN` is not set, so the metrics are not served on this port (the message says how to turn them on)',
          ),
        },
      },
    },
    async function metrics(request, reply) {
      checkMetricsAccess(access, request.headers.authorization, reply);
      const body = await registry.metrics();
      return reply.type(registry.contentType).send(body);
    },
  );
}
