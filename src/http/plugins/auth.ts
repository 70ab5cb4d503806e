import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import type { Authenticator } from '../../services/authenticator.ts';
import type { AuthFailureLimiter } from '../../services/auth-failures.ts';

/**
 * Authentication and authorisation run in `onRequest`, before the body is read, so the order of
 * checks is key (401, or 429 for an address with too many failed authentications) → scope (403) →
 * Idempotency-Key (400) → body validation (400).
 *
 * The per-key rate limit runs after this hook (it needs the key's id), so it never sees requests
 * whose key fails: those are limited here, per client address, before any database lookup. A
 * request without a key costs no lookup and is neither counted nor limited: it gets 401
 * `api_key_missing` whatever its address did before.
 */
export function registerAuth(app: FastifyInstance, authenticator: Authenticator, failures: AuthFailureLimiter): void {
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config;
    if (request.is404 || config.public) return;
    const header = request.headers['x-api-key'];
    const key = Array.isArray(header) ? header[0] : header;
    if (!key) throw new ApiError('api_key_missing', 'Send your API key in the `x-api-key` header.');
    const blockedMs = failures.blockedForMs(request.ip);
    if (blockedMs > 0) {
      const retryAfterS = Math.ceil(blockedMs / 1000);
      const { limit, windowMs } = failures.limits;
      reply.header('retry-after', String(retryAfterS));
      throw new ApiError(
        'rate_limited',
        `Too many failed authentications from your address: at most ${limit} per ${windowMs / 1000} s. Retry after ${retryAfterS} s.`,
        { failed_authentications_max: limit, window_seconds: windowMs / 1000 },
      );
    }
    const auth = await authenticator.authenticate(key.trim());
    if (!auth) {
      if (failures.recordFailure(request.ip)) {
        request.log.warn({ ip: request.ip, limit: failures.limits.limit }, 'failed authentications from one address reached the limit');
      }
      throw new ApiError('api_key_invalid', 'The API key is unknown or has been revoked.');
    }
    request.auth = auth;
    bindKeyId(request, auth.apiKeyId);
    const required = config.scopes ?? [];
    if (required.length > 0 && !required.some((scope) => auth.scopes.includes(scope))) {
      throw new ApiError('scope_missing', `This API key lacks the scope for this call: ${required.join(' or ')}.`, {
        required: [...required],
      });
    }
    if (config.idempotency === 'required' && !request.headers['idempotency-key']) {
      throw new ApiError('idempotency_key_missing', 'Send an `Idempotency-Key` header (a unique string per operation, such as a UUID).');
    }
  });
}

/**
 * From here on every log line of the request, the framework's own included ("request completed"),
 * names the key that made it: its id, never the key. The request's logger is the request's own child
 * logger, so its bindings change for this request only.
 */
function bindKeyId(request: FastifyRequest, keyId: string): void {
  const log = request.log as FastifyRequest['log'] & { setBindings?: (bindings: Record<string, unknown>) => void };
  log.setBindings?.({ keyId });
}
