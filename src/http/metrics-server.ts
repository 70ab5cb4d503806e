import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyServerOptions } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Registry } from 'prom-client';
import type { Config } from '../config.ts';
import { registerErrorHandling } from './plugins/error-handler.ts';
import { metricsPortAccess } from './plugins/metrics.ts';
import { registerRateLimits } from './plugins/rate-limits.ts';
import { clientErrorHandler, registerTransportAnswers } from './plugins/transport-errors.ts';
import { metricsRoute } from './routes/operations.ts';
import { componentSchemas } from './schemas/common.ts';
import type { App } from './types.ts';

/** A scraper sends no body. */
const METRICS_BODY_LIMIT_BYTES = 1024;

/**
 * The METRICS_PORT listener: GET /metrics and nothing else, for a network the operator keeps
 * internal (METRICS_HOST picks the interface). METRICS_TOKEN, when set, is required here too.
 * Errors in the usual envelope; small bounds, since a scraper sends nothing.
 */
export async function buildMetricsServer(
  config: Config,
  registry: Registry,
  logger: FastifyServerOptions['logger'] = false,
): Promise<App> {
  const app = Fastify({
    logger,
    bodyLimit: METRICS_BODY_LIMIT_BYTES,
    connectionTimeout: 30_000,
    requestTimeout: 30_000,
    requestIdHeader: false,
    genReqId: () => `req_${randomUUID().replace(/-/g, '')}`,
    clientErrorHandler,
    http: { requireHostHeader: false },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;
  registerTransportAnswers(app, METRICS_BODY_LIMIT_BYTES);
  // The shared schemas its answers refer to (the error envelope).
  for (const schema of componentSchemas()) app.addSchema(schema);
  registerErrorHandling(app, 'This port serves GET /metrics only.');
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  await registerRateLimits(app, config);
  metricsRoute(app, registry, metricsPortAccess(config));
  await app.ready();
  return app;
}
