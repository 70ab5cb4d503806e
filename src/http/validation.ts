import { Ajv, type ErrorObject, type SchemaValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { FieldError } from '../domain/errors.ts';
import { VALIDATED_IN_CODE } from './schemas/common.ts';
import { PROPERTY_NAMES_KEYWORD } from './schemas/metadata.ts';

// Two validators: request bodies are strict JSON (an amount sent as "5000" is an error, not
// coerced), while query strings and path parameters arrive as text and are coerced to their types.
function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    // Unknown fields are refused (400 naming them), never dropped: see input-hygiene.ts.
    removeAdditional: false,
    allErrors: true,
    verbose: true,
    strict: false,
  });
  (addFormats as unknown as (ajv: Ajv) => void)(ajv);
  // ajv-formats also accepts a `urn:uuid:` prefix, which PostgreSQL's uuid type does not.
  ajv.addFormat('uuid', /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/);
  ajv.addKeyword({ keyword: 'x-error-message', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'example' });
  ajv.addKeyword({ keyword: VALIDATED_IN_CODE, schemaType: 'array' });
  ajv.addKeyword({
    keyword: PROPERTY_NAMES_KEYWORD,
    type: 'object',
    schemaType: 'object',
    errors: true,
    validate: checkPropertyNames,
  });
  return ajv;
}

/** The keys of an object within `{minLength, maxLength}` characters (code points, as maxLength counts). */
const checkPropertyNames: SchemaValidateFunction = (
  bounds: { minLength: number; maxLength: number },
  data: Record<string, unknown>,
  _parent,
  cxt,
) => {
  const at = cxt?.instancePath ?? '';
  const errors: Partial<ErrorObject>[] = [];
  for (const key of Object.keys(data)) {
    const length = [...key].length;
    if (length >= bounds.minLength && length <= bounds.maxLength) continue;
    const rule = `keys must be ${bounds.minLength} to ${bounds.maxLength} characters`;
    errors.push(
      key === ''
        ? // An empty key has no field name of its own: the object is named.
          {
            keyword: PROPERTY_NAMES_KEYWORD,
            instancePath: at,
            params: { propertyName: key },
            message: `${rule} (one key is empty)`,
          }
        : {
            keyword: PROPERTY_NAMES_KEYWORD,
            instancePath: `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`,
            params: { propertyName: key },
            message: `${rule} (this one has ${length})`,
          },
    );
  }
  checkPropertyNames.errors = errors;
  return errors.length === 0;
};

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  // Node lower-cases header names; the document keeps their usual spelling (Idempotency-Key).
  const compiled = ajv.compile((httpPart === 'headers' ? lowerCaseHeaderNames(schema) : schema) as object);
  return (JSON.stringify(schema).includes(VALIDATED_IN_CODE) ? leavingToCode(compiled) : compiled) as ReturnType<
    FastifySchemaCompiler<unknown>
  >;
};

function lowerCaseHeaderNames(schema: unknown): unknown {
  const object = schema as { properties?: Record<string, unknown>; required?: string[] };
  if (object === null || typeof object !== 'object' || object.properties === undefined) return schema;
  return {
    ...object,
    properties: Object.fromEntries(
      Object.entries(object.properties).map(([name, value]) => [name.toLowerCase(), value]),
    ),
    ...(object.required ? { required: object.required.map((name) => name.toLowerCase()) } : {}),
  };
}

type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/** A validator that leaves the keywords a schema marks `x-validated-in-code` to the service (see common.ts). */
function leavingToCode(validate: Validate): Validate {
  const leftToCode = (error: ErrorObject): boolean => {
    const keywords = (error.parentSchema as Record<string, unknown> | undefined)?.[VALIDATED_IN_CODE];
    return Array.isArray(keywords) && keywords.includes(error.keyword);
  };
  const wrapped: Validate = (data: unknown) => {
    if (validate(data)) {
      wrapped.errors = null;
      return true;
    }
    const errors = validate.errors ?? [];
    const dropped = errors.filter(leftToCode);
    const branches = dropped
      .filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf')
      .map((e) => `${e.schemaPath}/`);
    const kept = errors.filter(
      (e) => !dropped.includes(e) && !branches.some((prefix) => e.schemaPath.startsWith(prefix)),
    );
    wrapped.errors = kept.length > 0 ? kept : null;
    return kept.length === 0;
  };
  return wrapped;
}

const TYPE_WORDS: Record<string, string> = {
  integer: 'an integer',
  string: 'a string',
  object: 'a JSON object',
  array: 'an array',
  boolean: 'true or false',
  number: 'a number',
};

function fieldPath(error: ErrorObject, part: string): string {
  const segments = error.instancePath
    .split('/')
    .filter(Boolean)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required')
    segments.push(String((error.params as { missingProperty: string }).missingProperty));
  if (error.keyword === 'additionalProperties')
    segments.push(String((error.params as { additionalProperty: string }).additionalProperty));
  const base = segments.join('.');
  if (part === 'body') return base || 'body';
  return base || part;
}

function messageFor(error: ErrorObject): string {
  const custom = (error.parentSchema as Record<string, unknown> | undefined)?.['x-error-message'];
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return unknownFieldMessage(error);
    case 'type': {
      const expected = String((error.params as { type: string }).type);
      if (typeof custom === 'string') return custom;
      return `must be ${expected
        .split(',')
        .map((t) => TYPE_WORDS[t] ?? t)
        .join(' or ')}`;
    }
    case 'maxProperties':
      if (typeof custom === 'string') return custom;
      return `must have at most ${(error.params as { limit: number }).limit} keys`;
    case 'enum':
      return `must be one of: ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
    case 'pattern':
    case 'format':
    case 'minLength':
    case 'maxLength':
      if (typeof custom === 'string') return custom;
      break;
  }
  if (typeof custom === 'string') return custom;
  return error.message ?? 'is invalid';
}

/** Edit distance, for "did you mean" on unknown fields (names are short: at most 40 characters). */
function editDistance(a: string, b: string): number {
  if (a.length > 40 || b.length > 40) return Math.max(a.length, b.length);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

function unknownFieldMessage(error: ErrorObject): string {
  const name = String((error.params as { additionalProperty: string }).additionalProperty);
  const known = Object.keys(((error.parentSchema as { properties?: object } | undefined)?.properties ?? {}) as object);
  if (known.length === 0) return 'is not a known field; this object takes no fields';
  const closest = known
    .map((candidate) => ({ candidate, distance: editDistance(name.toLowerCase(), candidate.toLowerCase()) }))
    .sort((x, y) => x.distance - y.distance)[0]!;
  const hint = closest.distance <= 2 ? ` Did you mean \`${closest.candidate}\`?` : '';
  return `is not a known field.${hint} Known fields: ${known.join(', ')}`;
}

/** Maps AJV errors to the `meta.errors` list of `validation_failed`, one entry per field. */
export function toFieldErrors(errors: ErrorObject[], part: string): FieldError[] {
  const seen = new Map<string, FieldError>();
  for (const error of errors) {
    if (error.keyword === 'if' || error.keyword === 'anyOf' || error.keyword === 'oneOf') continue;
    const field = fieldPath(error, part);
    if (!seen.has(field)) seen.set(field, { field, message: messageFor(error) });
  }
  if (seen.size === 0 && errors[0])
    seen.set(part, { field: fieldPath(errors[0], part), message: errors[0].message ?? 'is invalid' });
  return [...seen.values()];
}
