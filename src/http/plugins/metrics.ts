import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
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
