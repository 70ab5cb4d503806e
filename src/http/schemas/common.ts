import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Component, Nullable, StringEnum } from '../../contract/schema.ts';
import { ERROR_CODE_LIST, ERROR_CODE_SUMMARIES, ERROR_CODES, type ErrorCode } from '../../domain/errors.ts';
import { assert } from '../../domain/assert.ts';

// The building blocks live below services/ (a use case may return a shape the API serves); the
// schemas of http/ take them from here with the rest.
export {
  AmountString,
  ASSETS,
  Asset,
  Component,
  componentSchemas,
  DateTime,
  ModeSchema,
  Nullable,
  StringEnum,
  Uuid,
} from '../../contract/schema.ts';

/**
 * Marks keywords of a request schema node that the service's own rules check, because they explain
 * a violation better than a schema can: `x-validated-in-code: ["oneOf"]` on the quote body (the quote
 * rules), `["required"]` on the sender block (the sender rules, which report every field at once
 * with its format). The document and generated types state the rule; the request validator drops
 * only the errors of those keywords (and of the `oneOf` branches they judged), so the answer to a
 * violation is the one those rules give, right after validation. Any other error fails as usual.
 */
export const VALIDATED_IN_CODE = 'x-validated-in-code';

/** The keyword @fastify/swagger takes a response's description from (and leaves out of its schema). */
const RESPONSE_DESCRIPTION = 'x-response-description';

/**
 * The `maxLength` of a request field whose own rules (domain code) check its length and format
 * after trimming surrounding spaces, with a message that names the format: the document states the
 * bound, and the request validator leaves that keyword to those rules, so no request they accept is
 * refused by the schema.
 */
export const lengthCheckedInCode = (maxLength: number) => ({ maxLength, [VALIDATED_IN_CODE]: ['maxLength'] });

const MAX_AMOUNT_MINOR = Number.MAX_SAFE_INTEGER;

/** Amount in a request: a JSON integer in minor units (no decimals, no strings). */
export const AmountInteger = (description?: string) =>
  Type.Integer({
    format: 'int64',
    minimum: 1,
    maximum: MAX_AMOUNT_MINOR,
    description: description ?? 'Integer amount in minor units (BS has 2 decimals: 5000000 = 50,000.00 Bs)',
    'x-error-message': 'must be a positive integer amount in minor units (for example 5000000 for 50,000.00 Bs)',
  });

/** Answers that can come on any request, before an operation is chosen: not listed per operation. */
const TRANSPORT_ERROR_CODES = [
  'malformed_request',
  'route_not_found',
  'request_timeout',
  'uri_too_long',
  'expectation_failed',
  'headers_too_large',
] as const satisfies readonly ErrorCode[];

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      type: StringEnum([
        'invalid_request_error',
        'authentication_error',
        'rate_limit_error',
        'provider_error',
        'api_error',
      ] as const),
      code: StringEnum(ERROR_CODE_LIST, {
        description:
          'Stable code; branch on it, never on the message. Every error answer of an operation lists the codes it can carry',
      }),
      message: Type.String({ description: 'Readable explanation; not stable' }),
      request_id: Type.String({ description: 'Quote it when contacting support; equals the x-request-id header' }),
      meta: Type.Optional(
        Type.Object(
          {},
          { additionalProperties: true, description: 'Structured context: invalid fields, limits, balances' },
        ),
      ),
    }),
  },
  {
    $id: 'ErrorEnvelope',
    title: 'ErrorEnvelope',
    description: `Every error has this shape. Besides the answers each operation lists, any request can get one of these before an operation is chosen: ${TRANSPORT_ERROR_CODES.map((code) => `${ERROR_CODES[code].status} \`${code}\` (${ERROR_CODE_SUMMARIES[code]})`).join('; ')}.`,
  },
);

// Listed under components.schemas: every error answer references it.
Component('ErrorEnvelope', ErrorEnvelope);

const STATUS_LEADS: Record<number, string> = {
  400: 'Invalid request',
  401: 'Not authenticated',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Conflict',
  413: 'Body too large',
  415: 'Unsupported media type',
  422: 'Business rule',
  429: 'Too many requests',
  500: 'Unexpected error',
  503: 'Retryable, with `Retry-After`',
};

/** The codes of each error answer built here (its schema object → its codes), for completing a route's list. */
const ERROR_ANSWERS = new WeakMap<object, { codes: ErrorCode[]; description?: string }>();

/**
 * One error answer: the envelope with `error.code` narrowed to `codes` (all of one HTTP status), and
 * a description listing them. `description` replaces the listed text where a route means something
 * else than usual.
 */
export function errorAnswer(codes: readonly ErrorCode[], description?: string) {
  const ordered = ERROR_CODE_LIST.filter((code) => codes.includes(code));
  const statuses = new Set(ordered.map((code) => ERROR_CODES[code].status));
  assert(
    ordered.length !== 0 && statuses.size === 1,
    `an error answer has codes of exactly one status (${codes.join(', ')})`,
  );
  const status = [...statuses][0]!;
  const listed =
    ordered.length === 1
      ? `\`${ordered[0]}\`: ${ERROR_CODE_SUMMARIES[ordered[0]!]}`
      : `${STATUS_LEADS[status] ?? 'Error'}:\n${ordered.map((code) => `- \`${code}\`: ${ERROR_CODE_SUMMARIES[code]}`).join('\n')}`;
  const schema = Type.Unsafe<Static<typeof ErrorEnvelope>>({
    [RESPONSE_DESCRIPTION]: description ?? listed,
    allOf: [
      Type.Ref('ErrorEnvelope'),
      {
        type: 'object',
        properties: { error: { type: 'object', properties: { code: { type: 'string', enum: ordered } } } },
      },
    ],
  });
  ERROR_ANSWERS.set(schema, { codes: ordered, description });
  return schema;
}

/** The codes of an error answer built by `errorAnswer`; undefined for any other response schema. */
export function errorAnswerCodes(schema: unknown): { codes: ErrorCode[]; description?: string } | undefined {
  return schema !== null && typeof schema === 'object' ? ERROR_ANSWERS.get(schema) : undefined;
}

/**
 * What a bare status stands for in `errorResponses`: the usual code of that status, or all of its
 * codes. Prefer naming the codes.
 */
const CODES_OF_STATUS: Record<number, ErrorCode[]> = {
  400: ['validation_failed'],
  403: ['scope_missing'],
  404: ['resource_not_found'],
};

function codesOf(items: ReadonlyArray<ErrorCode | number>): ErrorCode[] {
  return items.flatMap((item) =>
    typeof item === 'string'
      ? [item]
      : (CODES_OF_STATUS[item] ?? ERROR_CODE_LIST.filter((code) => ERROR_CODES[code].status === item)),
  );
}

/**
 * The error answers of a route: the codes it can return besides those every route of its kind
 * returns (authentication, scope, validation, idempotency, body parsing, 5xx), which
 * `completeRouteContract` adds from the route's config. A bare status stands for its usual codes.
 */
export function errorResponses(...items: Array<ErrorCode | number>) {
  return errorResponsesDescribed({}, ...items);
}

/** The same, for a route whose errors mean something else than usual (`described` replaces the listed text of a status listed). */
export function errorResponsesDescribed(described: Record<number, string>, ...items: Array<ErrorCode | number>) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codesOf(items)) {
    const status = ERROR_CODES[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<number, TSchema> = {};
  for (const status of [...byStatus.keys()].sort()) out[status] = errorAnswer(byStatus.get(status)!, described[status]);
  return out;
}

/** A success answer with what it means (a response without a description shows as "Default Response"). */
export function Answer<T extends TSchema>(description: string, schema: T) {
  // The plugin reads a reference's description beside the `$ref` (and resolves the rest away).
  return Type.Unsafe<Static<T>>({
    ...schema,
    [typeof schema.$ref === 'string' ? 'description' : RESPONSE_DESCRIPTION]: description,
  });
}

/** A component of one page of a cursor list: `data`, `has_more` and `next_cursor`. */
export function CursorPage<T extends TSchema>(name: string, item: T, description: string) {
  return Component(
    name,
    Type.Object(
      {
        data: Type.Array(item),
        has_more: Type.Boolean({ description: 'true if another page follows' }),
        next_cursor: Nullable(
          Type.String({ description: 'Pass as `cursor` to read the next page; null on the last page' }),
        ),
      },
      { description },
    ),
  );
}

/** `limit` of a list: 1 to 100 items a page. */
export const PageLimit = () =>
  Type.Integer({ format: 'int32', minimum: 1, maximum: 100, default: 25, description: 'Page size, 1 to 100' });

export const PageQuery = {
  limit: Type.Optional(PageLimit()),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'The `next_cursor` of the previous page' }),
  ),
};
