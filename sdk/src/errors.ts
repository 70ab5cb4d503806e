// What a failed call throws. Every error answer of the API is the envelope
// `{ error: { code, message, type, request_id, meta? } }`; `BolivarError` carries its fields, so a
// caller branches on `code` (stable) and quotes `requestId` to support.
import type { ErrorEnvelope } from './generated/index.js';

/** Every stable `error.code` of the API (the enum of the OpenAPI document's ErrorEnvelope). */
export type ErrorCode = ErrorEnvelope['error']['code'];

/** `error.type`: the family of the error. */
export type ErrorType = ErrorEnvelope['error']['type'];

/**
 * The code of an error answer that is not the API's envelope (a proxy's HTML 502, an empty body):
 * not one of the API's codes, so that a `switch` on `code` can tell it apart.
 */
export const UNEXPECTED_RESPONSE = 'unexpected_response';

export class BolivarError extends Error {
  override readonly name = 'BolivarError';
  /** The HTTP status of the answer. */
  readonly status: number;
  readonly code: ErrorCode | typeof UNEXPECTED_RESPONSE;
  readonly type: ErrorType;
  /** Quote it to support; the answer's `x-request-id` (null when the answer had none). */
  readonly requestId: string | null;
  /** Structured context: `errors` (fields) of validation_failed, the rule of limit_exceeded, … */
  readonly meta: Record<string, unknown> | undefined;
  /** Seconds the server asked to wait (`Retry-After`), when it said. */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: {
    status: number;
    code: ErrorCode | typeof UNEXPECTED_RESPONSE;
    type: ErrorType;
    message: string;
    requestId: string | null;
    meta?: Record<string, unknown> | undefined;
    retryAfterSeconds?: number | undefined;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.type = init.type;
    this.requestId = init.requestId;
    this.meta = init.meta;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/** No answer at all (connection refused or reset, DNS, timeout), after the retries allowed. */
export class BolivarConnectionError extends Error {
  override readonly name = 'BolivarConnectionError';
  /** Requests sent, the first one included. */
  readonly attempts: number;

  constructor(message: string, attempts: number, cause: unknown) {
    super(message, { cause });
    this.attempts = attempts;
  }
}

function isEnvelope(body: unknown): body is ErrorEnvelope {
  if (typeof body !== 'object' || body === null) return false;
  const error = (body as { error?: unknown }).error;
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'string' &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}

/** The error an answer with status >= 400 stands for; `text` is its body as received. */
export function errorFromResponse(
  status: number,
  headers: Headers,
  text: string,
  retryAfterSeconds: number | undefined,
): BolivarError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (isEnvelope(body)) {
    return new BolivarError({
      status,
      code: body.error.code,
      type: body.error.type,
      message: body.error.message,
      requestId: body.error.request_id ?? headers.get('x-request-id'),
      meta: body.error.meta,
      retryAfterSeconds,
    });
  }
  return new BolivarError({
    status,
    code: UNEXPECTED_RESPONSE,
    type: 'api_error',
    message: `HTTP ${status} without the API's error envelope: ${text.slice(0, 200)}`,
    requestId: headers.get('x-request-id'),
    retryAfterSeconds,
  });
}
