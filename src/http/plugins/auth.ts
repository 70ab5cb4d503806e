import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors.ts';
import type { Authenticator } from '../../services/authenticator.ts';
import { lookedUpPrefixOf, type FailedAuthentications } from '../../services/auth-failures.ts';

/**
 * Authentication and authorisation run in `onRequest`, before the body is read, so the order of
 * checks is key (401, or 429 for a client limited for failed authentications) → scope (403) →
 * Idempotency-Key (400) → body validation (400).
 *
 * The per-key rate limit runs after this hook (it needs the key's id), so it never sees requests
 * whose key fails: those are limited here, per client address and per key prefix. A limited client
 * is refused, without a database lookup, only the keys that are certainly not active (the
 * authenticator's in-memory index); a key that authenticates is always served, so one client
 * guessing keys behind a shared address (a NAT, a load balancer) locks nobody else out. A request
 * without a key costs no lookup and is neither counted nor limited: it gets 401 `api_key_missing`.
 */
export function registerAuth(
  app: FastifyInstance,
  authenticator: Authenticator,
  failures: FailedAuthentications,
): void {
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config;
    if (request.is404 || config.public) return;
    const header = request.headers['x-api-key'];
    const key = (Array.isArray(header) ? header[0] : header)?.trim();
    if (!key) throw new ApiError('api_key_missing', 'Send your API key in the `x-api-key` header.');
    const limited = failures.limited(request.ip, key);
    if (limited && !(await authenticator.mayBeActive(key))) {
      const retryAfterS = Math.ceil(limited.waitMs / 1000);
      const { limit, windowMs } = limited.limiter.limits;
      const whose = limited.by === 'address' ? 'from your address' : 'with keys of this kind from all addresses';
      reply.header('retry-after', String(retryAfterS));
      throw new ApiError(
        'rate_limited',
        `Too many failed authentications ${whose}: at most ${limit} per ${windowMs / 1000} s. A valid key is still served. Retry after ${retryAfterS} s.`,
        { failed_authentications_max: limit, window_seconds: windowMs / 1000, limited_by: limited.by },
      );
    }
    const auth = await authenticator.authenticate(key);
    if (!auth) {
      for (const by of failures.record(request.ip, key)) {
        const subject = by === 'address' ? { ip: request.ip } : { key_prefix: lookedUpPrefixOf(key) };
        request.log.warn(
          { ...subject, limited_by: by },
          `failed authentications reached the limit per ${by === 'address' ? 'client address' : 'key prefix'}`,
        );
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
      throw new ApiError(
        'idempotency_key_missing',
        'Send an `Idempotency-Key` header (a unique string per operation, such as a UUID).',
      );
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
