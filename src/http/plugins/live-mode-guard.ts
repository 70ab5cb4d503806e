import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors.ts';

const READ_METHODS = new Set(['GET', 'HEAD']);

/** The mode an admin call acts on, when it names one (`mode` in its body or query). */
function modeActedOn(request: FastifyRequest): unknown {
  const body = request.body as { mode?: unknown } | null | undefined;
  const query = request.query as { mode?: unknown } | null | undefined;
  return (typeof body === 'object' && body !== null ? body.mode : undefined) ?? query?.mode;
}

/**
 * The platform key the first start made (saved in bootstrap.json, so on disk for anyone who can read
 * the data directory) administers test mode only: every admin change that names live mode — issuing
 * a live key, a live funding or close, a live webhook endpoint or secret, a live sender — needs the
 * platform key set by PLATFORM_API_KEY. Reads stay open to it. Runs after validation, so `mode` is
 * one of the schema's values; a refusal does nothing and stores nothing.
 */
export function registerLiveModeGuard(app: FastifyInstance): void {
  app.addHook('preHandler', async (request) => {
    const auth = request.auth;
    if (
      !auth?.isPlatform ||
      auth.keySource !== 'bootstrap' ||
      READ_METHODS.has(request.method) ||
      request.routeOptions.config.modeReadOnly
    )
      return;
    if (modeActedOn(request) !== 'live') return;
    throw new ApiError(
      'bootstrap_key_test_only',
      'This platform key was made by the first start (it is saved in bootstrap.json) and administers test mode only. ' +
        'For live mode, set PLATFORM_API_KEY to a platform key of your own, restart the service, and use that key.',
      { mode: 'live' },
    );
  });
}
