import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.ts';
import { ApiError } from '../../domain/errors.ts';

/** Every limiter counts over this window. */
const WINDOW_MS = 1000;
/** Counters kept at most per limiter (keys or addresses; the least recently used are dropped first). */
const RATE_LIMIT_COUNTERS_MAX = 10_000;

/**
 * The two request-rate limits, in memory per process:
 *  - per API key, RATE_LIMIT_RPS, on every keyed route (after the auth hook: it needs the key's id),
 *    with the x-ratelimit-* headers an integrator paces itself by;
 *  - per client address, PUBLIC_RATE_LIMIT_RPS, over all the routes that need no key together
 *    (health checks, /metrics, /docs, the OpenAPI document, the console's files, the sandbox
 *    receivers), which anyone could otherwise call without bound. A refusal carries Retry-After.
 *    The rail callbacks have a budget of their own per rail (http/callback-budget.ts), not this one.
 * Registered before the routes: the per-key limit attaches itself to routes as they are added.
 */
export async function registerRateLimits(
  app: FastifyInstance,
  config: Pick<Config, 'rateLimitRps' | 'publicRateLimitRps'>,
): Promise<void> {
  if (config.rateLimitRps === 0 && config.publicRateLimitRps === 0) return;
  await app.register(rateLimit, {
    global: config.rateLimitRps > 0,
    hook: 'onRequest',
    cache: RATE_LIMIT_COUNTERS_MAX,
    max: config.rateLimitRps,
    timeWindow: WINDOW_MS,
    keyGenerator: (request) => request.auth?.apiKeyId ?? request.ip,
    allowList: (request) => request.routeOptions.config.public === true,
    errorResponseBuilder: (_request, context) =>
      new ApiError(
        'rate_limited',
        `Too many requests for this API key: at most ${context.max} per second. Retry after ${context.after}.`,
        {
          limit_per_second: context.max,
        },
      ),
  });
  if (config.publicRateLimitRps === 0) return;

  // One counter per address across every public route: a limiter with a store of its own (the
  // plugin's default bound, 5,000 addresses, least recently seen dropped first).
  const perAddress = app.createRateLimit({
    max: config.publicRateLimitRps,
    timeWindow: WINDOW_MS,
    keyGenerator: (request) => request.ip,
    allowList: undefined,
  });
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404 || request.routeOptions.config.public !== true || request.routeOptions.config.ownBudget === true)
      return;
    const counted = await perAddress(request);
    if (counted.isAllowed || !counted.isExceeded) return;
    reply.header('retry-after', String(counted.ttlInSeconds));
    throw new ApiError(
      'rate_limited',
      `Too many requests from your address to the routes that need no key: at most ${counted.max} per second. Retry after ${counted.ttlInSeconds} s.`,
      { limit_per_second: counted.max },
    );
  });
}
