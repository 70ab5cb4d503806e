import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.ts';
import type { Authenticator } from '../../services/authenticator.ts';

/**
 * Authentication and authorisation run in `onRequest`, before the body is read, so the order of
 * checks is key (401) → scope (403) → Idempotency-Key (400) → body validation (400).
 */
export function registerAuth(app: FastifyInstance, authenticator: Authenticator): void {
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request) => {
    const config = request.routeOptions.config;
    if (request.is404 || config.public) return;
    const header = request.headers['x-api-key'];
    const key = Array.isArray(header) ? header[0] : header;
    if (!key) throw new ApiError('api_key_missing', 'Send your API key in the `x-api-key` header.');
    const auth = await authenticator.authenticate(key.trim());
    if (!auth) throw new ApiError('api_key_invalid', 'The API key is unknown or has been revoked.');
    request.auth = auth;
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
