// The building blocks of the API's schemas (TypeBox, rendered as OpenAPI 3.0.3), shared by the
// shapes below services/ (src/contract/) and the request and answer schemas of http/schemas/.
import { Type, type Static, type TSchema } from '@sinclair/typebox';

// OpenAPI 3.0.3 has no `type: null`; nullable fields use `nullable: true`, which AJV and
// fast-json-stringify both understand. Static type stays `T | null`. An enum lists null among its
// values too: under OpenAPI 3.0.3's reading of `nullable`, it does not widen `enum`, so a validator
// would otherwise refuse the null the field may hold.
export function Nullable<T extends TSchema>(schema: T) {
  const values = (schema as { enum?: unknown[] }).enum;
  return Type.Unsafe<Static<T> | null>({ ...schema, nullable: true, ...(values ? { enum: [...values, null] } : {}) });
}

/**
 * A string-literal enum rendered as `{type: string, enum: [...]}` (OpenAPI-friendly, no anyOf), with
 * the `maxLength` of its longest value: every string the document accepts states its bound.
 */
export function StringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({
    type: 'string',
    enum: [...values],
    maxLength: Math.max(...values.map((v) => [...v].length)),
    ...options,
  });
}

const UUID_LENGTH = 36;

export const Uuid = (description?: string) =>
  Type.String({
    format: 'uuid',
    maxLength: UUID_LENGTH,
    description,
    'x-error-message': 'must be a UUID such as 3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f',
  });

export const DateTime = (description?: string) => Type.String({ format: 'date-time', description });

/** Amount in a response: integer minor units as a decimal string. */
export const AmountString = (description?: string) =>
  Type.String({
    pattern: '^-?[0-9]+$',
    description: description ?? 'Integer amount in minor units, as a string',
    example: '5000000',
  });

const MODES = ['test', 'live'] as const;
export const ModeSchema = StringEnum(MODES);

const COMPONENTS = new Map<string, TSchema>();

/**
 * A named schema: listed once under `components.schemas` of the OpenAPI document and referenced
 * from every route that uses it (the serializer resolves the reference too).
 */
export function Component<T extends TSchema>(name: string, schema: T) {
  COMPONENTS.set(name, { ...schema, $id: name, title: name });
  return Type.Unsafe<Static<T>>(Type.Ref(name));
}

export function componentSchemas(): TSchema[] {
  return [...COMPONENTS.values()];
}

export const ASSETS = ['BS', 'USD', 'USDC', 'VESC'] as const;
export const Asset = StringEnum(ASSETS, { description: 'Asset code' });
