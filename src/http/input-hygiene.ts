// Input that the schemas alone would let through but that must never reach a handler or the
// database: unknown fields (silently dropped, a typo such as `acountNumber` would send money with a
// field missing), text PostgreSQL cannot store (U+0000, unpaired UTF-16 surrogates), and query
// integers in forms other than plain decimal digits (`0x10`, `1e1`, ` 16` all coerce to numbers).
import type { TSchema } from '@sinclair/typebox';
import type { FieldError } from '../domain/errors.ts';

type JsonSchema = Record<string, unknown> & { type?: unknown; properties?: Record<string, JsonSchema> };

/** Nesting a request body may have; deeper is refused before anything walks it. */
const BODY_DEPTH_MAX = 32;

/**
 * Makes every object schema of a request part (body, querystring, params) refuse properties it does
 * not declare, unless the schema says otherwise (free-form objects state `additionalProperties:
 * true`). Changes the schema in place, so the OpenAPI document shows the same strictness the
 * validator applies.
 */
export function closeObjectSchemas(schema: unknown): void {
  const seen = new Set<unknown>();
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) return node.forEach(visit);
    const object = node as JsonSchema;
    if (object.type === 'object' && object.properties !== undefined && object.additionalProperties === undefined) {
      object.additionalProperties = false;
    }
    for (const value of Object.values(object)) visit(value);
  };
  visit(schema);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why a text cannot be accepted, or undefined when it can.
 * @internal Exported for its tests, not used elsewhere.
 */
export function unstorableText(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(text)) return 'must be valid Unicode text (it contains an unpaired surrogate)';
  return undefined;
}

/**
 * The first field, at any depth (keys included), whose text cannot be stored; or a body nested
 * deeper than BODY_DEPTH_MAX. Field paths use dots, as `meta.errors` does elsewhere.
 */
export function findUnstorableText(value: unknown, root: string): FieldError | undefined {
  // The path is kept as a stack of keys and written out only for the field it names: a 1,000-item
  // batch has some 20,000 fields, and none of them is a problem in all but a few requests
  // (1.9 -> 1.4 ms for such a body, against building every field's path).
  const path: string[] = root === '' ? [] : [root];
  const here = () => path.join('.');
  const walk = (node: unknown, depth: number): FieldError | undefined => {
    if (typeof node === 'string') {
      const message = unstorableText(node);
      return message ? { field: here(), message } : undefined;
    }
    if (node === null || typeof node !== 'object') return undefined;
    if (depth > BODY_DEPTH_MAX)
      return { field: here(), message: `is nested too deeply (at most ${BODY_DEPTH_MAX} levels)` };
    const keys = Array.isArray(node) ? node.keys() : Object.keys(node);
    for (const key of keys) {
      path.push(String(key));
      const keyProblem = typeof key === 'string' ? unstorableText(key) : undefined;
      const found = keyProblem
        ? { field: here(), message: `field name ${keyProblem}` }
        : walk((node as Record<string | number, unknown>)[key], depth + 1);
      path.pop();
      if (found) return found;
    }
    return undefined;
  };
  return walk(value, 0);
}

const DECIMAL_INTEGER = /^-?[0-9]+$/;

/**
 * Query or path values the schema types as integers must be written as decimal digits: the
 * validator coerces text with Number(), which also reads hex, exponents and padded blanks.
 */
export function nonDecimalIntegers(schema: TSchema | undefined, values: unknown): FieldError[] {
  const properties = (schema as JsonSchema | undefined)?.properties;
  if (!properties || values === null || typeof values !== 'object') return [];
  const errors: FieldError[] = [];
  for (const [name, property] of Object.entries(properties)) {
    if (property.type !== 'integer') continue;
    const raw = (values as Record<string, unknown>)[name];
    if (typeof raw === 'string' && !DECIMAL_INTEGER.test(raw)) {
      errors.push({ field: name, message: 'must be an integer written in decimal digits, such as 25' });
    }
  }
  return errors;
}

/**
 * A route that declares no query parameters or no body refuses them too (the validator only runs
 * where a schema exists). An empty JSON object counts as no body: some clients always send one.
 */
export function undeclaredInput(
  schema: { querystring?: unknown; body?: unknown } | undefined,
  query: unknown,
  body: unknown,
): FieldError[] {
  const errors: FieldError[] = [];
  if (schema?.querystring === undefined && query !== null && typeof query === 'object') {
    for (const name of Object.keys(query))
      errors.push({ field: name, message: 'is not a known query parameter; this call takes none' });
  }
  const emptyObject =
    body !== null && typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0;
  if (schema?.body === undefined && body !== undefined && !emptyObject) {
    errors.push({ field: 'body', message: 'this call takes no body; send none' });
  }
  return errors;
}
