// What every route of a kind has in common, added to its schema when it is registered, from the
// same config that drives the hooks: so the OpenAPI document can only say what the server does.
//
//  - `config.idempotency` → the `Idempotency-Key` header parameter (required or optional), the
//    codes of the Idempotency-Key layer and `idempotent-replayed` on the answers a key stores;
//  - a keyed route (not `config.public`) → the authentication codes (401), `rate_limited` (429),
//    `overloaded` (503), `scope_missing` (403) when it has scopes, `bootstrap_key_test_only` (403)
//    on a platform route whose body names a mode, and, for a method with a body, the body's codes;
//  - a public route → `rate_limited` (429: the per-address limit of the routes that need no key);
//  - every route → `validation_failed`, `internal_error`, `service_unavailable` (hooks that run on
//    every request: input hygiene, the error handler, the shutdown answer);
//  - response headers: x-request-id on every answer, the per-key rate-limit headers on keyed routes
//    (when the limit is on, as it is by default), Retry-After on 429 and 503.
//
// The route itself lists only the codes particular to it (`errorResponses` in schemas/common.ts).
import type { TSchema } from '@sinclair/typebox';
import type { RouteOptions } from 'fastify';
import { PLATFORM_SCOPE } from '../domain/api-keys.ts';
import { isStoredStatus } from '../domain/idempotency.ts';
import { ERROR_CODES, type ErrorCode } from '../domain/errors.ts';
import { errorAnswer, errorAnswerCodes } from './schemas/common.ts';
import {
  IdempotencyKeyHeaders,
  RATE_LIMIT_HEADERS,
  REPLAYED_HEADER,
  REQUEST_ID_HEADER,
  RETRY_AFTER_HEADER,
} from './schemas/headers.ts';
import { assert } from '../domain/assert.ts';

type RouteSchema = Record<string, unknown> & {
  hide?: boolean;
  headers?: TSchema;
  response?: Record<string, Record<string, unknown>>;
};

const COMPLETED = new WeakSet<object>();

const METHODS_WITHOUT_BODY = new Set(['GET', 'HEAD']);

/** A platform route that changes something in the mode its body names (the live-mode guard's routes). */
function changesAMode(route: Pick<RouteOptions, 'method' | 'config' | 'schema'>): boolean {
  const body = (route.schema as { body?: { properties?: Record<string, unknown> } } | undefined)?.body;
  const methods = [route.method].flat();
  return (
    (route.config?.scopes ?? []).includes(PLATFORM_SCOPE) &&
    route.config?.modeReadOnly !== true &&
    body?.properties?.mode !== undefined &&
    methods.some((m) => !METHODS_WITHOUT_BODY.has(m))
  );
}

/** The error codes a route has by its kind (see the file comment). */
function derivedErrorCodes(
  route: Pick<RouteOptions, 'method' | 'config'> & Partial<Pick<RouteOptions, 'schema'>>,
): ErrorCode[] {
  const config = route.config ?? {};
  const codes: ErrorCode[] = ['validation_failed', 'internal_error', 'service_unavailable'];
  if (config.public !== true) {
    // The key lookup is coalesced through a bounded queue: `overloaded` when it is full.
    codes.push('api_key_missing', 'api_key_invalid', 'rate_limited', 'overloaded');
    if ((config.scopes ?? []).length > 0) codes.push('scope_missing');
    if (changesAMode(route)) codes.push('bootstrap_key_test_only');
    if ([route.method].flat().some((method) => !METHODS_WITHOUT_BODY.has(method)))
      codes.push('invalid_json', 'payload_too_large', 'unsupported_media_type');
  } else {
    // The per-address limit of the routes that need no key (PUBLIC_RATE_LIMIT_RPS), and for a route
    // with a budget of its own (the rail callbacks) that budget, spent with 503 `overloaded`.
    codes.push('rate_limited');
    if (config.ownBudget === true) codes.push('overloaded');
  }
  if (config.idempotency === 'required') codes.push('idempotency_key_missing');
  if (config.idempotency) codes.push('idempotency_key_reused', 'idempotency_request_in_progress');
  return codes;
}

/** Completes a route's schema in place (once: a GET and its HEAD share one schema). */
export function completeRouteContract(route: Pick<RouteOptions, 'method' | 'config' | 'schema'>): void {
  const schema = route.schema as RouteSchema | undefined;
  if (!schema || schema.hide === true || COMPLETED.has(schema)) return;
  COMPLETED.add(schema);
  const config = route.config ?? {};
  const keyed = config.public !== true;

  if (config.idempotency) {
    assert(schema.headers === undefined, 'an idempotent route declares no headers of its own');
    schema.headers = IdempotencyKeyHeaders(config.idempotency === 'required');
  }

  // Entries are replaced, never changed: response schemas are shared between routes.
  const response: Record<string, Record<string, unknown>> = { ...(schema.response ?? {}) };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of derivedErrorCodes(route)) {
    const status = ERROR_CODES[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of byStatus) {
    const existing = response[status];
    const declared = errorAnswerCodes(existing);
    if (existing !== undefined && declared === undefined) continue; // an answer of its own (a receiver failing on purpose)
    response[status] = errorAnswer([...codes, ...(declared?.codes ?? [])], declared?.description);
  }

  const ordered: Record<string, Record<string, unknown>> = {};
  for (const status of Object.keys(response).sort()) {
    const code = Number(status);
    const headers: Record<string, unknown> = { ...REQUEST_ID_HEADER };
    // Documented whatever this process's RATE_LIMIT_RPS: the document is the same for every deployment.
    // A 401 or 403 is answered by the auth hook, before the per-key limit counts the request.
    if (keyed && code !== 401 && code !== 403) Object.assign(headers, RATE_LIMIT_HEADERS);
    if (code === 429 || code === 503) Object.assign(headers, RETRY_AFTER_HEADER);
    if (config.idempotency && isStoredStatus(code)) Object.assign(headers, REPLAYED_HEADER);
    const entry = response[status]!;
    ordered[status] = { ...entry, headers: { ...((entry.headers as object | undefined) ?? {}), ...headers } };
  }
  schema.response = ordered;
}
