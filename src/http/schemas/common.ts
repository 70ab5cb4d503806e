import { Type, type Static, type TSchema } from '@sinclair/typebox';

// OpenAPI 3.0.3 has no `type: null`; nullable fields use `nullable: true`, which AJV and
// fast-json-stringify both understand. Static type stays `T | null`.
export function Nullable<T extends TSchema>(schema: T) {
  return Type.Unsafe<Static<T> | null>({ ...schema, nullable: true });
}

/** A string-literal enum rendered as `{type: string, enum: [...]}` (OpenAPI-friendly, no anyOf). */
export function StringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

export const Uuid = (description?: string) =>
  Type.String({ format: 'uuid', description, 'x-error-message': 'must be a UUID such as 3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f' });

export const DateTime = (description?: string) => Type.String({ format: 'date-time', description });

/** Amount in a response: integer minor units as a decimal string. */
export const AmountString = (description?: string) =>
  Type.String({ pattern: '^-?[0-9]+$', description: description ?? 'Integer amount in minor units, as a string', example: '5000000' });

export const MAX_AMOUNT_MINOR = Number.MAX_SAFE_INTEGER;

/** Amount in a request: a JSON integer in minor units (no decimals, no strings). */
export const AmountInteger = (description?: string) =>
  Type.Integer({
    minimum: 1,
    maximum: MAX_AMOUNT_MINOR,
    description: description ?? 'Integer amount in minor units (BS has 2 decimals: 5000000 = 50,000.00 Bs)',
    'x-error-message': 'must be a positive integer amount in minor units (for example 5000000 for 50,000.00 Bs)',
  });

export const ASSETS = ['BS', 'USD', 'USDC', 'VESC'] as const;
export const Asset = StringEnum(ASSETS, { description: 'Asset code' });

export const MODES = ['test', 'live'] as const;
export const ModeSchema = StringEnum(MODES);

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      type: StringEnum(['invalid_request_error', 'authentication_error', 'rate_limit_error', 'provider_error', 'api_error'] as const),
      code: Type.String({ description: 'Stable code; branch on it, never on the message' }),
      message: Type.String({ description: 'Readable explanation; not stable' }),
      request_id: Type.String({ description: 'Quote it when contacting support; equals the x-request-id header' }),
      meta: Type.Optional(
        Type.Object({}, { additionalProperties: true, description: 'Structured context: invalid fields, limits, balances' }),
      ),
    }),
  },
  { $id: 'ErrorEnvelope', title: 'ErrorEnvelope', description: 'Every error has this shape' },
);

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: `validation_failed` (meta.errors lists each field), `invalid_json`, `idempotency_key_missing`',
  401: 'Missing (`api_key_missing`) or unknown/revoked (`api_key_invalid`) API key',
  403: '`scope_missing`: the key lacks the scope; meta.required lists the accepted scopes',
  404: '`resource_not_found`: no such object for this tenant and mode',
  409: 'Conflict: `idempotency_key_reused`, `idempotency_request_in_progress` or `quote_already_consumed`',
  413: '`payload_too_large`: body over 64 KiB',
  415: '`unsupported_media_type`: send `content-type: application/json`',
  422: 'Business rule: `quote_expired`, `limit_exceeded`, `insufficient_tenant_funds`',
  429: '`rate_limited`: too many requests for this key, or too many failed authentications (unknown, revoked or malformed key) from this address; wait `Retry-After` seconds',
  500: '`internal_error`: unexpected; quote the request_id',
  503: 'Retryable, with `Retry-After`: `rate_unavailable` (no fresh FX rate), `service_unavailable` (the database is not reachable right now) or `overloaded` (a bounded internal queue is full; nothing was done)',
};

const ErrorRef = Type.Unsafe<Static<typeof ErrorEnvelope>>(Type.Ref('ErrorEnvelope'));

const COMPONENTS = new Map<string, TSchema>([['ErrorEnvelope', ErrorEnvelope]]);

/**
 * A named response schema: listed once under `components.schemas` of the OpenAPI document and
 * referenced from every route that returns it (the serializer resolves the reference too).
 */
export function Component<T extends TSchema>(name: string, schema: T) {
  COMPONENTS.set(name, { ...schema, $id: name, title: name });
  return Type.Unsafe<Static<T>>(Type.Ref(name));
}

export function componentSchemas(): TSchema[] {
  return [...COMPONENTS.values()];
}

/** Error responses for a route's OpenAPI entry, every one with the envelope. */
export function errorResponses(...statuses: number[]) {
  return errorResponsesDescribed({}, ...statuses);
}

/** The same, for a route whose errors mean something else than usual (`described` replaces the shared text). */
export function errorResponsesDescribed(described: Record<number, string>, ...statuses: number[]) {
  const all = new Set([401, 429, 500, ...statuses, ...Object.keys(described).map(Number)]);
  const out: Record<number, TSchema> = {};
  for (const status of [...all].sort()) {
    out[status] = Type.Unsafe({ ...ErrorRef, description: described[status] ?? ERROR_DESCRIPTIONS[status] ?? 'Error' });
  }
  return out;
}

export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'Page size, 1 to 100' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The `next_cursor` of the previous page' })),
};
