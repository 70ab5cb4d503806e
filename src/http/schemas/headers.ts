// Request and response headers of the OpenAPI document. What they say is what the hooks do:
// x-request-id (app.ts, every answer), the Idempotency-Key layer (plugins/auth.ts and
// plugins/idempotency.ts), Retry-After (plugins/error-handler.ts, plugins/auth.ts) and the per-key
// rate limit (@fastify/rate-limit, registered in app.ts).
import { Type } from '@sinclair/typebox';
import {
  IDEMPOTENCY_KEY_FORMAT_MESSAGE,
  IDEMPOTENCY_KEY_MAX_LENGTH,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENT_REPLAYED_HEADER,
} from '../plugins/idempotency.ts';

/**
 * The `Idempotency-Key` request header, as a route's `headers` schema. Its checks run before this
 * schema does, with the same rules and answers: absent on a route that requires it, 400
 * `idempotency_key_missing` (plugins/auth.ts, right after the key and scope); malformed, 400
 * `validation_failed` naming `Idempotency-Key` (plugins/idempotency.ts, before validation).
 */
export function IdempotencyKeyHeaders(required: boolean) {
  const key = Type.String({
    minLength: 1,
    maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
    pattern: IDEMPOTENCY_KEY_PATTERN,
    'x-error-message': IDEMPOTENCY_KEY_FORMAT_MESSAGE,
    example: '5b1f0c8e-7d2a-4c3b-9e8f-1a2b3c4d5e6f',
    description: required
      ? 'Required: a unique string per operation (a UUID), 1 to 255 printable ASCII characters. A retry with the same key and body gets the original answer (`idempotent-replayed: true`), never a second operation; the same key with another body is 409 `idempotency_key_reused`. Without it: 400 `idempotency_key_missing`'
      : 'Optional: a unique string per operation (a UUID), 1 to 255 printable ASCII characters. With it, a retry with the same key and body gets the original answer (`idempotent-replayed: true`); the same key with another body is 409 `idempotency_key_reused`',
  });
  return Type.Object({ 'Idempotency-Key': required ? key : Type.Optional(key) });
}

type HeaderSchema = Record<string, unknown> & { description: string };

export const REQUEST_ID_HEADER: Record<string, HeaderSchema> = {
  'x-request-id': {
    type: 'string',
    description:
      "The request's id, on every answer: the request's own `x-request-id` when it is 1 to 128 characters of `A-Z a-z 0-9 . _ : -`, else one of ours (`req_…`). Equals `error.request_id`",
    example: 'req_5b0f3c9a2d7e4e1c8a6b9d0f1e2a3b4c',
  },
};

// Named in their usual spelling (header names are case-insensitive; Node hands them over lower-cased),
// the one API linters recognise as rate-limit headers.
export const RATE_LIMIT_HEADERS: Record<string, HeaderSchema> = {
  'X-RateLimit-Limit': {
    type: 'integer',
    description:
      'Requests allowed per second for this API key (RATE_LIMIT_RPS, 1000 by default; 0 turns the limit and these headers off). Sent once the per-key limit has counted the request: not on answers given before it (401, 403, 400 `idempotency_key_missing`, a 429 for failed authentications)',
  },
  'X-RateLimit-Remaining': { type: 'integer', description: 'Requests left in the current one-second window' },
  'X-RateLimit-Reset': { type: 'integer', description: 'Seconds until the window resets' },
};

export const RETRY_AFTER_HEADER: Record<string, HeaderSchema> = {
  'Retry-After': { type: 'integer', minimum: 0, description: 'Seconds to wait before retrying' },
};

export const REPLAYED_HEADER: Record<string, HeaderSchema> = {
  [IDEMPOTENT_REPLAYED_HEADER]: {
    type: 'string',
    enum: ['true'],
    description:
      'Present (`true`) when this answer is the stored answer of an earlier request with the same `Idempotency-Key` and body; absent on the first answer',
  },
};
