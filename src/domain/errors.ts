// The closed set of error codes, each with the HTTP status and type it answers with. Services and the
// domain throw `ApiError`; the HTTP layer (src/http/errors.ts) renders the envelope.

export type ErrorType =
  'invalid_request_error' | 'authentication_error' | 'rate_limit_error' | 'provider_error' | 'api_error';

export const ERROR_CODES = {
  api_key_missing: { status: 401, type: 'authentication_error' },
  api_key_invalid: { status: 401, type: 'authentication_error' },
  webhook_signature_invalid: { status: 401, type: 'authentication_error' },
  rail_callback_signature_invalid: { status: 401, type: 'authentication_error' },
  metrics_token_invalid: { status: 401, type: 'authentication_error' },
  scope_missing: { status: 403, type: 'authentication_error' },
  bootstrap_key_test_only: { status: 403, type: 'authentication_error' },
  validation_failed: { status: 400, type: 'invalid_request_error' },
  malformed_request: { status: 400, type: 'invalid_request_error' },
  invalid_json: { status: 400, type: 'invalid_request_error' },
  idempotency_key_missing: { status: 400, type: 'invalid_request_error' },
  payout_batch_too_large: { status: 400, type: 'invalid_request_error' },
  statement_malformed: { status: 400, type: 'invalid_request_error' },
  resource_not_found: { status: 404, type: 'invalid_request_error' },
  route_not_found: { status: 404, type: 'invalid_request_error' },
  request_timeout: { status: 408, type: 'invalid_request_error' },
  idempotency_key_reused: { status: 409, type: 'invalid_request_error' },
  idempotency_request_in_progress: { status: 409, type: 'invalid_request_error' },
  quote_already_consumed: { status: 409, type: 'invalid_request_error' },
  reference_reused: { status: 409, type: 'invalid_request_error' },
  payment_already_resolved: { status: 409, type: 'invalid_request_error' },
  payment_not_settled: { status: 409, type: 'invalid_request_error' },
  anomaly_already_resolved: { status: 409, type: 'invalid_request_error' },
  payload_too_large: { status: 413, type: 'invalid_request_error' },
  uri_too_long: { status: 414, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  expectation_failed: { status: 417, type: 'invalid_request_error' },
  quote_expired: { status: 422, type: 'invalid_request_error' },
  limit_exceeded: { status: 422, type: 'invalid_request_error' },
  insufficient_tenant_funds: { status: 422, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  payout_batches_in_progress: { status: 429, type: 'rate_limit_error' },
  headers_too_large: { status: 431, type: 'invalid_request_error' },
  rate_unavailable: { status: 503, type: 'provider_error' },
  service_unavailable: { status: 503, type: 'api_error' },
  overloaded: { status: 503, type: 'api_error' },
  internal_error: { status: 500, type: 'api_error' },
} as const satisfies Record<string, { status: number; type: ErrorType }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Every code, in the order of the table: the enum of `error.code` in the OpenAPI document. */
export const ERROR_CODE_LIST = Object.keys(ERROR_CODES) as ErrorCode[];

/** One line per code for the reference (the OpenAPI document lists, per answer, the codes it can carry). */
export const ERROR_CODE_SUMMARIES: Record<ErrorCode, string> = {
  api_key_missing: 'no `x-api-key` header',
  api_key_invalid: 'the API key is unknown or revoked',
  webhook_signature_invalid: 'not a correctly signed delivery of a test-mode event',
  rail_callback_signature_invalid:
    'a rail callback whose key id, timestamp or signature does not verify for that rail (or no such rail); nothing was stored',
  metrics_token_invalid: '`GET /metrics` without `Authorization: Bearer <METRICS_TOKEN>`, or with another token',
  scope_missing: 'the key lacks the scope of the call; `meta.required` lists the scopes that would do',
  bootstrap_key_test_only:
    'a live-mode change made with the platform key of the first start (bootstrap.json), which administers test mode only; set `PLATFORM_API_KEY` and use that key',
  validation_failed:
    'an invalid body, query or path field, or an unknown one; `meta.errors` lists every field as `{field, message}`',
  malformed_request: 'not valid HTTP, or a URL with an invalid percent-encoding',
  invalid_json: 'the body is not JSON',
  idempotency_key_missing: 'no `Idempotency-Key` header on a call that requires one',
  payout_batch_too_large:
    'a payout batch with more items than `PAYOUT_BATCH_MAX_ITEMS` (`meta`: maxItems, items); split it into several batches. Nothing was written',
  statement_malformed:
    'a rail statement that is not one: a missing or repeated column, a line that is not well-formed CSV, or a value that is not what its column holds; `meta.line` is the line of the file (the header is line 1) and `meta.problem` what is wrong. Nothing was stored',
  resource_not_found: 'no such object for this tenant and mode',
  route_not_found: 'no such route (method and path)',
  request_timeout: 'the request was not received within 30 s',
  idempotency_key_reused: 'the `Idempotency-Key` was used with a different request (route, path or body)',
  idempotency_request_in_progress:
    'the first request with this `Idempotency-Key` is still running; retry it with the same key',
  quote_already_consumed: 'another payout already used the quote; ask for a new quote',
  reference_reused:
    "a payout batch item whose `reference` already paid a different payout in the last 24 hours (`meta.paymentId`); only in an item's `error`",
  payment_already_resolved: 'the payment is already final (`meta.status`); nothing changed',
  payment_not_settled: 'only a settled payment can be reversed (`meta.status`); nothing changed',
  anomaly_already_resolved: 'the anomaly was already resolved (`meta`: resolved_at, resolved_by); nothing changed',
  payload_too_large:
    'the body is over 64 KiB (on `POST /v1/payout-batches`, 4 KiB per item of `PAYOUT_BATCH_MAX_ITEMS`: 4000 KiB by default)',
  uri_too_long: 'a path parameter is longer than 100 characters',
  unsupported_media_type: 'a body sent with a `content-type` other than `application/json`',
  expectation_failed: 'an `Expect` header other than `100-continue`',
  quote_expired: "the quote's `expires_at` has passed; ask for a new quote",
  limit_exceeded: 'an instrument cap or a configured limit rule; `meta` names the rule, the cap and the scope',
  insufficient_tenant_funds:
    "the prefunding balance or the credit line does not cover the quote, or a payout batch's cheapest item (`meta`: asset, required, available)",
  rate_limited:
    'too many requests for this key, or too many failed authentications from this address; wait `Retry-After` seconds',
  headers_too_large: 'the request line and headers are over 16 KiB',
  payout_batches_in_progress:
    'the tenant already has `PAYOUT_BATCHES_IN_PROGRESS_MAX` payout batches being recorded; retry after `Retry-After` seconds',
  rate_unavailable: 'no fresh FX rate; retry after `Retry-After` seconds',
  service_unavailable:
    'the database is not reachable right now, or this process is shutting down; nothing was lost, retry after `Retry-After` seconds (with the same `Idempotency-Key`)',
  overloaded: 'a bounded internal queue is full; nothing was done, retry after `Retry-After` seconds',
  internal_error: 'unexpected; quote the `request_id` (no `meta`)',
};

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly meta?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
  }
}

export function validationFailed(errors: FieldError[], message?: string): ApiError {
  const summary = message ?? errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return new ApiError('validation_failed', summary, { errors });
}

/** A bounded internal queue is full: nothing was done, retry after `Retry-After` seconds. */
export function overloaded(what: string): ApiError {
  return new ApiError('overloaded', `The service is at capacity (${what}); nothing was done. Retry in a moment.`);
}

export function notFound(what: string): ApiError {
  return new ApiError('resource_not_found', `No such ${what}.`);
}
