import type { FastifyInstance, FastifyReply } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Config } from '../../config.ts';
import { ApiError } from '../../domain/errors.ts';
import { IDEMPOTENT_REPLAYED_HEADER } from './idempotency.ts';

/**
 * Prometheus metrics of the HTTP layer: request counts and latency per route template (never per raw
 * URL), and idempotent replays. The business metrics are services/money-metrics.ts's.
 */
export function registerMetrics(app: FastifyInstance, registry: Registry): void {
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route template, method and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by route template and method',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const replays = new Counter({
    name: 'bolivar_idempotency_replays_total',
    help: 'Requests answered from what their Idempotency-Key already held (a retry: nothing was done again), by route template',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
    const labels = { method: request.method, route, status_code: String(reply.statusCode) };
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
    // Every replay, by the key layer or by a money writer, carries this header: one place counts them all.
    if (reply.getHeader(IDEMPOTENT_REPLAYED_HEADER) === 'true') replays.inc({ route });
  });
}

export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * Who may read /metrics on one listener. It shows business volume (payouts by status and reason,
 * queue depths), so it is never public by default: on the API port it is served only with a
 * METRICS_TOKEN (and then only to a request bearing it); the METRICS_PORT listener, meant for an
 * internal network, serves it, still requiring the token when one is set.
 */
export interface MetricsAccess {
  /** false: answer 404 with how to turn it on. */
  served: boolean;
  token: string | undefined;
}

export function apiPortMetricsAccess(config: Pick<Config, 'metricsToken'>): MetricsAccess {
  return { served: config.metricsToken !== undefined, token: config.metricsToken };
}

export function metricsPortAccess(config: Pick<Config, 'metricsToken'>): MetricsAccess {
  return { served: true, token: config.metricsToken };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Throws the answer for a request that may not read the metrics here; returns when it may. */
export function checkMetricsAccess(
  access: MetricsAccess,
  authorization: string | undefined,
  reply: FastifyReply,
): void {
  if (!access.served) {
    throw new ApiError(
      'route_not_found',
      'GET /metrics is not served on this port. To scrape it, set METRICS_TOKEN and send `Authorization: Bearer <METRICS_TOKEN>`, or set METRICS_PORT to serve it on an internal port (see docs/operations.md in the repository).',
    );
  }
  if (access.token === undefined) return;
  const given = /^Bearer +(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? '';
  // Compared as digests: equal lengths, in constant time, whatever was sent.
  if (!timingSafeEqual(digest(given), digest(access.token))) {
    reply.header('www-authenticate', 'Bearer realm="metrics"');
    throw new ApiError(
      'metrics_token_invalid',
      'GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>` (the token this service was started with).',
    );
  }
}
