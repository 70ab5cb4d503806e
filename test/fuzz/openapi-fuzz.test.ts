// Property-based fuzzing of every operation of the committed OpenAPI document, in-process (app.inject).
//
//  1. Whatever arrives, well-formed or carrying one malformation, the answer is never a 5xx, every 4xx
//     is exactly the error envelope with a code of ERROR_CODES (its status, its type, the request id of
//     the `x-request-id` header), and a request malformed by construction is refused.
//     Every answer of a documented operation (below 5xx) has a status the operation documents, and its
//     JSON body is valid against the documented schema, read as a strict client-side validator reads it.
//  2. A malformed POST /v1/payouts changes nothing: the quote stays open, the balance is untouched, no
//     payment exists and the Idempotency-Key is still free for the valid request.
//
// Failures are classified and collected over the whole run, then asserted once: a single run lists
// every distinct failure class with the shortest request that showed it, instead of stopping (and
// shrinking) at the first one. The seed is fixed, so the same requests are sent every time.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { BODY_LIMIT_BYTES } from '../../src/app.ts';
import { ERROR_CODES } from '../../src/domain/errors.ts';
import { ENGINE, client, createTenant, startTestApp, type Client, type TestApp } from '../support/harness.ts';
import {
  AMPLE_RAIL_TIMEOUT_MS,
  SENDER,
  appWithRailTimeout,
  beneficiary,
  fundedTenant,
  payout,
  quote,
} from '../support/payouts.ts';

// Fixed by default so that every run sends the same requests; FUZZ_SEED / FUZZ_RUNS /
// FUZZ_STATE_RUNS replay another seed or explore longer without editing the file.
const SEED = envInteger('FUZZ_SEED', 20_261_123);
/** Requests of property 1: about 70 per operation of the document. */
const OPERATION_RUNS = envInteger('FUZZ_RUNS', 3_000);
/** Malformed payouts of property 2, each on a tenant, quote and beneficiary of its own. */
const STATE_RUNS = envInteger('FUZZ_STATE_RUNS', 200);
/** Out of WELL_FORMED_WEIGHT + MALFORMED_WEIGHT requests, how many carry no malformation. */
const WELL_FORMED_WEIGHT = 2;
const MALFORMED_WEIGHT = 3;
/** Levels of `{"a":…}`: deep enough to hurt a recursive walker, still under the 64 KiB body limit. */
const DEEP_NESTING_LEVELS = 5_000;
const LONG_SEGMENT_CHARS = 240;
const SCENE_FUNDING = 1_000_000_000n;
const SCENE_DELIVER = 1_000_000;
/** How much of an answer and of a body a failure report quotes. */
const QUOTED_CHARS = 300;
/** Requests shown per failure class (the shortest ones, each on another operation). */
const EXAMPLES_PER_CLASS = 3;

function envInteger(name: string, fallback: number): number {
  const given = process.env[name];
  if (given === undefined || given === '') return fallback;
  assert.match(given, /^[0-9]+$/, `${name} must be a non-negative integer`);
  return Number(given);
}

// ---------------------------------------------------------------------------------------------
// The document

type Schema = { [keyword: string]: any };
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
const METHODS: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Schema;
}

interface Operation {
  /** "GET /v1/quotes/{id}" */
  id: string;
  method: Method;
  path: string;
  params: Parameter[];
  body?: Schema;
  /** The media type the document gives the body (application/json, or text/csv for a rail statement). */
  bodyType?: string;
  access: 'public' | 'customer' | 'platform';
  /** The operation declares the Idempotency-Key header: a malformed one is refused. */
  takesIdempotencyKey: boolean;
  requiresIdempotencyKey: boolean;
  /** The status of an operation whose only documented answer is a 5xx (a receiver that fails on purpose). */
  deliberateStatus?: number;
  /** Methods the document has for this path; any other is an undocumented method. */
  pathMethods: Method[];
  /** False for the hidden public routes: no schema says what they must refuse. */
  documented: boolean;
  /** The document's answers by status (`$ref`s to components.responses resolved). */
  responses: Record<string, Schema>;
}

const DOC = JSON.parse(readFileSync('openapi.json', 'utf8'));

/** Public routes the document hides (Swagger UI, the document itself, the operator console); fuzzed all the same. */
const HIDDEN_PUBLIC_PATHS = [
  '/v1/openapi.json',
  '/docs',
  '/docs/json',
  '/docs/yaml',
  '/docs/static/{file}',
  '/console',
  '/console/{file}',
];
const STATIC_FILE: Parameter = {
  name: 'file',
  in: 'path',
  required: true,
  schema: { type: 'string', minLength: 1, example: 'swagger-ui.css' },
};

function resolve(schema: Schema): Schema {
  let current = schema;
  while (typeof current?.$ref === 'string') {
    const name = current.$ref.replace('#/components/schemas/', '');
    current = DOC.components.schemas[name];
  }
  return current ?? {};
}

/** An operation's body schema and media type: JSON, or the one other type it documents (a CSV). */
function requestBodyOf(op: any): Pick<Operation, 'body' | 'bodyType'> {
  const content: Record<string, { schema: Schema }> | undefined = op.requestBody?.content;
  if (!content) return {};
  const bodyType = 'application/json' in content ? 'application/json' : Object.keys(content)[0]!;
  return { body: resolve(content[bodyType]!.schema), bodyType };
}

function documentedOperations(): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(DOC.paths)) {
    const pathMethods = METHODS.filter((m) => item[m.toLowerCase()]);
    for (const method of pathMethods) {
      const op = item[method.toLowerCase()];
      const statuses = Object.keys(op.responses ?? {}).map(Number);
      const params: Parameter[] = (op.parameters ?? []).map((p: any) => ({
        name: p.name,
        in: p.in,
        required: p.required === true,
        schema: resolve(p.schema),
      }));
      const idempotencyKey = params.find((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key');
      operations.push({
        id: `${method} ${path}`,
        method,
        path,
        params,
        ...requestBodyOf(op),
        access:
          op.security !== undefined && !op.security.some((scheme: Record<string, unknown>) => 'ApiKeyAuth' in scheme)
            ? 'public'
            : path.startsWith('/v1/admin/')
              ? 'platform'
              : 'customer',
        takesIdempotencyKey: idempotencyKey !== undefined,
        requiresIdempotencyKey: idempotencyKey?.required === true,
        // A receiver that fails on purpose: no success answer, only its 5xx (and the errors every route has).
        deliberateStatus:
          statuses.length > 0 && statuses.every((s) => s >= 400) ? statuses.find((s) => s >= 500) : undefined,
        pathMethods,
        documented: true,
        responses: Object.fromEntries(
          Object.entries<Schema>(op.responses ?? {}).map(([status, r]) => [
            status,
            typeof r.$ref === 'string' ? DOC.components.responses[r.$ref.replace('#/components/responses/', '')] : r,
          ]),
        ),
      });
    }
  }
  for (const path of HIDDEN_PUBLIC_PATHS) {
    const params = path.includes('{file}') ? [STATIC_FILE] : [];
    operations.push({
      id: `GET ${path}`,
      method: 'GET',
      path,
      params,
      access: 'public',
      takesIdempotencyKey: false,
      requiresIdempotencyKey: false,
      pathMethods: ['GET'],
      documented: false,
      responses: {},
    });
  }
  return operations;
}

// ---------------------------------------------------------------------------------------------
// The world: real objects, so that well-formed requests reach the code behind the lookups

type IdKind = 'tenant' | 'quote' | 'beneficiary' | 'payment' | 'customer' | 'apiKey' | 'limitRule' | 'event';

/** A field or parameter name (with the path segment before it) says which kind of id it wants. */
const ID_HINTS: Array<[RegExp, IdKind]> = [
  [/customer/i, 'customer'],
  [/quote/i, 'quote'],
  [/beneficiar/i, 'beneficiary'],
  [/payment/i, 'payment'],
  [/api-key/i, 'apiKey'],
  [/limit-rule/i, 'limitRule'],
  [/event/i, 'event'],
  [/tenant/i, 'tenant'],
];

interface Keys {
  customer: string;
  live: string;
  revoked: string;
  platform: string;
}

interface World {
  keys: Keys;
  ids: Record<IdKind, string[]>;
  /** Secrets as they are printed in a report. */
  labels: Map<string, string>;
}

function idsFor(world: World, hint: string): string[] {
  const kind = ID_HINTS.find(([pattern]) => pattern.test(hint))?.[1];
  return kind ? world.ids[kind] : [];
}

async function issueKey(admin: Client, tenantId: string, mode: 'test' | 'live'): Promise<{ id: string; key: string }> {
  const issued = await admin.post(`/v1/admin/tenants/${tenantId}/api-keys`, { mode });
  assert.equal(issued.status, 201, issued.raw);
  return { id: issued.body.id, key: issued.body.key };
}

async function revokedKey(admin: Client, tenantId: string): Promise<{ id: string; key: string }> {
  const issued = await issueKey(admin, tenantId, 'test');
  const revoked = await admin.delete(`/v1/admin/api-keys/${issued.id}`);
  assert.equal(revoked.status, 200, revoked.raw);
  return issued;
}

async function created(response: Promise<{ status: number; body: any; raw: string }>, expected = 201): Promise<any> {
  const answer = await response;
  assert.equal(answer.status, expected, answer.raw);
  return answer.body;
}

async function buildWorld(t: TestApp): Promise<World> {
  const admin = client(t.app, t.platformKey);
  const main = await fundedTenant(t, 1_000_000_000_000n);
  const other = await createTenant(t, {
    name: 'Otra Remesas',
    tenant: { creditEnabled: true, creditLimit: 50_000_000 },
  });
  const live = await issueKey(admin, main.tenantId, 'live');
  const revoked = await revokedKey(admin, main.tenantId);
  // DELETE /v1/admin/api-keys/{id} draws from these only: revoking the fuzzing keys would turn the
  // rest of the run into 401s.
  const spare = [await issueKey(admin, other.tenantId, 'test'), await issueKey(admin, other.tenantId, 'live'), revoked];
  const registered = await created(main.api.post('/v1/beneficiaries', beneficiary('V20111222')));
  const transfer = await created(
    main.api.post('/v1/beneficiaries', beneficiary('V20111223', { accountNumber: '01020123450123456789' })),
  );
  const quotes = [
    await quote(main.api, 1_000_000),
    await quote(main.api, 2_500_000),
    await quote(other.api, 1_000_000),
  ];
  // V99990001 settles at once, so an outcome event exists; the other payment is still moving. Both
  // are sent with the ample rail timeout, not the fuzzed app's short one, which a slow answer on a
  // loaded machine could reach (unknown, and no event).
  const patient = await appWithRailTimeout(t, AMPLE_RAIL_TIMEOUT_MS);
  const patientApi = client(patient, main.key);
  const settled = await payout(patientApi, { beneficiary: beneficiary('V99990001') });
  const submitted = await payout(patientApi, { beneficiaryId: registered.id });
  await patient.close();
  assert.equal(settled.status, 201, settled.raw);
  assert.equal(submitted.status, 201, submitted.raw);
  const customerId = '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b3d1';
  await created(
    admin.put(`/v1/admin/tenants/${main.tenantId}/customers/${customerId}`, { mode: 'test', sender: SENDER }),
    200,
  );
  const rule = await created(
    admin.post('/v1/admin/limit-rules', {
      scope: 'tenant',
      tenantId: other.tenantId,
      method: '*',
      per_tx_max: 10_000_000_000,
      daily_max: 100_000_000_000,
    }),
  );
  const sink = `http://localhost:3000/v1/sandbox/webhooks/sink?tenant=${main.tenantId}&mode=test`;
  await created(admin.put(`/v1/admin/tenants/${main.tenantId}/webhook-endpoint`, { mode: 'test', url: sink }), 200);
  const events = (await created(main.api.get('/v1/events'), 200)).data.map((e: { id: string }) => e.id);
  assert.ok(events.length > 0, 'the settled payout left an event');
  return {
    keys: { customer: main.key, live: live.key, revoked: revoked.key, platform: t.platformKey },
    ids: {
      tenant: [main.tenantId, other.tenantId],
      quote: quotes,
      beneficiary: [registered.id, transfer.id],
      payment: [settled.body.id, submitted.body.id],
      customer: [customerId],
      apiKey: spare.map((k) => k.id),
      limitRule: [rule.id],
      event: events,
    },
    labels: keyLabels({ customer: main.key, live: live.key, revoked: revoked.key, platform: t.platformKey }),
  };
}

function keyLabels(keys: Partial<Keys>): Map<string, string> {
  return new Map(Object.entries(keys).map(([name, key]) => [key as string, `<${name} key>`]));
}

// ---------------------------------------------------------------------------------------------
// Well-formed values from the schemas: object/properties/required/minProperties, arrays, strings
// (uuid, date, date-time, email, pattern, enum, lengths, example), integers in range, booleans,
// nullable, oneOf/anyOf and $ref. Ids come from the world most of the time.

const anyJson = fc.jsonValue({ maxDepth: 3 });

function validValue(schema: Schema, hint: string, world: World): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  const value = nonNullValue(s, hint, world);
  return s.nullable ? fc.oneof({ weight: 5, arbitrary: value }, { weight: 1, arbitrary: fc.constant(null) }) : value;
}

function nonNullValue(s: Schema, hint: string, world: World): fc.Arbitrary<unknown> {
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  const alternatives = s.oneOf ?? s.anyOf;
  // An object with fields of its own and `oneOf` modes that constrain some of them (the quote body).
  if (Array.isArray(alternatives) && s.type === 'object')
    return fc.oneof(...alternatives.map((mode: Schema) => validObject(withMode(s, resolve(mode)), world)));
  if (Array.isArray(alternatives)) return fc.oneof(...alternatives.map((sub: Schema) => validValue(sub, hint, world)));
  switch (s.type) {
    case 'object':
      return validObject(s, world);
    case 'array':
      return validArray(s, hint, world);
    case 'string':
      return validString(s, hint, world);
    case 'integer':
      return validInteger(s);
    case 'number':
      return fc.double({ min: s.minimum ?? -1e9, max: s.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    default:
      return anyJson; // `{}`: the sandbox receivers take any body
  }
}

/** An object schema narrowed by one of its `oneOf` branches: the branch's required fields and its narrower fields. */
function withMode(base: Schema, mode: Schema): Schema {
  const { oneOf: _oneOf, anyOf: _anyOf, ...rest } = base;
  const merged: Schema = { ...rest, required: [...new Set([...(base.required ?? []), ...(mode.required ?? [])])] };
  if (base.properties || mode.properties) {
    // A branch that closes the object allows only its own fields (spend without an amount).
    const closed = mode.additionalProperties === false;
    merged.properties = closed ? {} : { ...(base.properties ?? {}) };
    for (const [name, narrower] of Object.entries<Schema>(mode.properties ?? {})) {
      const wider = resolve(base.properties?.[name] ?? {});
      merged.properties[name] =
        wider.type === 'object' && narrower.type === 'object' ? withMode(wider, narrower) : { ...wider, ...narrower };
    }
    if (closed) merged.additionalProperties = false;
  }
  return merged;
}

function validObject(s: Schema, world: World): fc.Arbitrary<Record<string, unknown>> {
  if (isObject(s.additionalProperties)) return validMap(s, world);
  const model = Object.fromEntries(
    Object.entries<Schema>(s.properties ?? {}).map(([name, sub]) => [name, validValue(sub, name, world)]),
  );
  const record = fc.record(model, { requiredKeys: s.required ?? [], noNullPrototype: true } as never) as fc.Arbitrary<
    Record<string, unknown>
  >;
  return s.minProperties ? record.filter((o) => Object.keys(o).length >= s.minProperties) : record;
}

const MAP_KEY_CHARS = [...'abcdefghijklmnopqrstuvwxyz0123456789_-'];

/** A free-form map (metadata): a few keys within the bounds of `x-property-names`, values of its value schema. */
function validMap(s: Schema, world: World): fc.Arbitrary<Record<string, unknown>> {
  const names = s['x-property-names'] ?? {};
  const key = fc.string({
    unit: fc.constantFrom(...MAP_KEY_CHARS),
    minLength: names.minLength ?? 1,
    maxLength: names.maxLength ?? 40,
  });
  const entries = fc.uniqueArray(fc.tuple(key, validValue(s.additionalProperties, '', world)), {
    maxLength: Math.min(s.maxProperties ?? 3, 3),
    selector: ([name]) => name,
  });
  return entries.map((pairs) => Object.fromEntries(pairs));
}

function validArray(s: Schema, hint: string, world: World): fc.Arbitrary<unknown[]> {
  const item = validValue(s.items ?? {}, hint, world);
  const bounds = { minLength: s.minItems ?? 0, maxLength: Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 4, 4)) };
  return s.uniqueItems
    ? fc.uniqueArray(item, { ...bounds, selector: (v) => JSON.stringify(v) })
    : fc.array(item, bounds);
}

function withKnown(known: string[], generated: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return known.length === 0
    ? generated
    : fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: generated });
}

const calendarDate = fc.date({
  min: new Date('2020-01-01T00:00:00Z'),
  max: new Date('2030-12-31T00:00:00Z'),
  noInvalidDate: true,
});

function validString(s: Schema, hint: string, world: World): fc.Arbitrary<string> {
  if (s.format === 'uuid') return withKnown(idsFor(world, hint), fc.uuid());
  if (s.format === 'date') return calendarDate.map((d) => d.toISOString().slice(0, 10));
  if (s.format === 'date-time') return calendarDate.map((d) => d.toISOString());
  if (s.format === 'email') return fc.emailAddress();
  if (s.pattern) return withKnown(idsFor(world, hint), fc.stringMatching(new RegExp(s.pattern)));
  const minLength = s.minLength ?? 0;
  const text = fc.string({
    unit: 'grapheme-composite',
    minLength,
    maxLength: Math.max(minLength, Math.min(s.maxLength ?? 40, 40)),
  });
  // The document's example passes the service's own format checks (national id, bank code, phone…),
  // so it dominates: with it the request goes past validation, into the code that stores and pays.
  return typeof s.example === 'string'
    ? fc.oneof({ weight: 8, arbitrary: fc.constant(s.example) }, { weight: 1, arbitrary: text })
    : text;
}

function validInteger(s: Schema): fc.Arbitrary<number> {
  const min: number = s.minimum ?? -(2 ** 31);
  const max: number = s.maximum ?? 2 ** 31;
  return fc.oneof(
    fc.constantFrom(min, max),
    fc.integer({ min, max: Math.min(max, min + 10_000_000) }), // amounts a quote or a rule can live with
    fc.integer({ min, max }),
  );
}

// ---------------------------------------------------------------------------------------------
// Requests

/** `refuse`: any 4xx; a status: exactly it; `any`: only the general rules (no 5xx, the envelope). */
type Expectation = 'any' | 'refuse' | 401 | 403;

interface Draft {
  operation: Operation;
  method: Method;
  /** Path parameters as they go on the wire (already percent-encoded). */
  pathValues: Record<string, string>;
  /** Query parameters, decoded; encoded when rendered. */
  query: Array<[string, string]>;
  body?: unknown;
  /** Raw body text, when the body is not simply the JSON of `body`. */
  payload?: string;
  contentType?: string;
  headers: Record<string, string>;
  keys: Keys;
  kind: string;
  expect: Expectation;
}

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

interface Observed {
  status: number;
  headers: Record<string, unknown>;
  raw: string;
}

function render(d: Draft): Sent {
  const path = d.operation.path.replace(/\{(\w+)\}/g, (_, name: string) => d.pathValues[name] ?? '');
  const query = d.query.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&');
  const headers = { ...d.headers, ...(d.contentType === undefined ? {} : { 'content-type': d.contentType }) };
  // A body of another media type than JSON is text, sent as it is.
  const raw =
    d.operation.bodyType !== undefined && d.operation.bodyType !== 'application/json' && typeof d.body === 'string';
  const payload = d.payload ?? (d.body === undefined ? undefined : raw ? (d.body as string) : JSON.stringify(d.body));
  return { method: d.method, url: query ? `${path}?${query}` : path, headers, payload };
}

async function send(t: TestApp, sent: Sent): Promise<Observed> {
  const response = await t.app.inject({
    method: sent.method as Method,
    url: sent.url,
    headers: sent.headers,
    payload: sent.payload,
  });
  return { status: response.statusCode, headers: response.headers, raw: response.body };
}

function authHeaders(op: Operation, keys: Keys): Record<string, string> {
  if (op.access === 'public') return {};
  return { 'x-api-key': op.access === 'platform' ? keys.platform : keys.customer };
}

function wellFormed(op: Operation, world: World): fc.Arbitrary<Draft> {
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query');
  const pathValues = fc.record(
    Object.fromEntries(
      pathParams.map((p) => [
        p.name,
        validValue(p.schema, `${segmentBefore(op.path, p.name)} ${p.name}`, world).map((v) =>
          encodeURIComponent(String(v)),
        ),
      ]),
    ),
    { noNullPrototype: true },
  );
  const query = fc
    .tuple(
      ...queryParams.map((p) => {
        const pair = validValue(p.schema, p.name, world).map((v): Array<[string, string]> => [[p.name, String(v)]]);
        return p.required ? pair : fc.option(pair, { nil: [] as Array<[string, string]> });
      }),
    )
    .map((pairs) => pairs.flat());
  const body = op.body ? validValue(op.body, '', world) : fc.constant(undefined);
  // A few shared keys as well as fresh ones, so that replays and key reuse are exercised too.
  const idempotencyKey = fc.oneof(fc.uuid(), fc.constantFrom('fuzz-shared-1', 'fuzz-shared-2'));
  return fc.record({ pathValues, query, body, idempotencyKey }).map((r): Draft => ({
    operation: op,
    method: op.method,
    pathValues: r.pathValues as Record<string, string>,
    query: r.query,
    body: r.body,
    contentType: op.body ? op.bodyType : undefined,
    headers: {
      ...authHeaders(op, world.keys),
      ...(op.method === 'GET' ? {} : { 'idempotency-key': r.idempotencyKey }),
    },
    keys: world.keys,
    kind: 'well-formed',
    expect: 'any',
  }));
}

function segmentBefore(path: string, name: string): string {
  const segments = path.split('/');
  const at = segments.indexOf(`{${name}}`);
  return at > 0 ? segments[at - 1]! : '';
}

// ---------------------------------------------------------------------------------------------
// Malformations: each turns a well-formed draft into a request with exactly one thing wrong

interface Mutation {
  kind: string;
  expect: Expectation;
  apply(d: Draft): Draft;
}

function mutation(kind: string, expect: Expectation, apply: (d: Draft) => Partial<Draft>): Mutation {
  return { kind, expect, apply: (d) => ({ ...d, ...apply(d), kind, expect }) };
}

/**
 * One arbitrary per kind of malformation that applies to the operation, all equally likely: a kind
 * that exists for few fields is tried as often as one that exists for many.
 */
function mutations(op: Operation): fc.Arbitrary<Mutation> {
  const kinds = fc.oneof(
    ...headerMutations(op),
    ...methodMutations(op),
    ...pathMutations(op),
    ...queryMutations(op),
    ...(op.body ? bodyMutations(op) : unexpectedBodyMutations()),
  );
  // A hidden route (Swagger UI, the console) may well serve `/docs/static/..`: only the general rules apply.
  return op.documented
    ? kinds
    : kinds.map((m) => ({
        ...m,
        expect: 'any' as const,
        apply: (d: Draft) => ({ ...m.apply(d), expect: 'any' as const }),
      }));
}

// Headers --------------------------------------------------------------------------------------

const oddKeys = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'bsk_test_',
    'bsk_test_short',
    'Bearer bsk_test_x',
    'bsk_platform_' + 'A'.repeat(300),
    'bsk_test_ñandú_clé',
    'null',
    '"quoted"',
    'a\tb',
  ),
  fc.string({ unit: 'binary-ascii', maxLength: 60 }).map((s) => s.replace(/[\x00-\x08\x0a-\x1f\x7f]/g, '')), // bytes a socket can carry
);
const unknownKeys = fc.stringMatching(/^[0-9A-Za-z]{40}$/).map((random) => `bsk_test_${random}`);
const badIdempotencyKeys = fc.constantFrom('', 'x'.repeat(256), 'clé-ñ', 'tab\there', '\u00a0nbsp');

function headerMutations(op: Operation): fc.Arbitrary<Mutation>[] {
  const unauthenticated: Expectation = op.access === 'public' ? 'any' : 401;
  const withKey = (key: (d: Draft) => string | undefined) => (d: Draft) => ({
    headers: withHeader(d.headers, 'x-api-key', key(d)),
  });
  const withIdempotencyKey = (value: string | undefined) => (d: Draft) => ({
    headers: withHeader(d.headers, 'idempotency-key', value),
  });
  const idempotency: Expectation = op.requiresIdempotencyKey ? 'refuse' : 'any';
  const badIdempotency: Expectation = op.takesIdempotencyKey ? 'refuse' : 'any';
  return [
    fc.constant(
      mutation(
        'no API key',
        unauthenticated,
        withKey(() => undefined),
      ),
    ),
    unknownKeys.map((key) =>
      mutation(
        'unknown API key',
        unauthenticated,
        withKey(() => key),
      ),
    ),
    fc.constant(
      mutation(
        'revoked API key',
        unauthenticated,
        withKey((d) => d.keys.revoked),
      ),
    ),
    oddKeys.map((key) =>
      mutation(
        'API key with odd characters',
        unauthenticated,
        withKey(() => key),
      ),
    ),
    fc.constant(
      mutation(
        'live-mode key',
        op.access === 'platform' ? 403 : 'any',
        withKey((d) => d.keys.live),
      ),
    ),
    fc.constant(mutation('no Idempotency-Key', idempotency, withIdempotencyKey(undefined))),
    badIdempotencyKeys.map((key) => mutation('malformed Idempotency-Key', badIdempotency, withIdempotencyKey(key))),
  ];
}

function withHeader(headers: Record<string, string>, name: string, value: string | undefined): Record<string, string> {
  const copy = { ...headers };
  delete copy[name];
  return value === undefined ? copy : { ...copy, [name]: value };
}

function methodMutations(op: Operation): fc.Arbitrary<Mutation>[] {
  const others = METHODS.filter((m) => !op.pathMethods.includes(m));
  return others.length === 0
    ? []
    : [fc.constantFrom(...others).map((method) => mutation('undocumented method', 'refuse', () => ({ method })))];
}

// Path parameters ------------------------------------------------------------------------------

const SOME_UUID = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';
const notUuids = fc.oneof(
  fc.constantFrom(
    'not-a-uuid',
    SOME_UUID.replace(/-/g, ''),
    `{${SOME_UUID}}`,
    SOME_UUID.slice(0, -1),
    `g${SOME_UUID.slice(1)}`,
    '0',
    '-1',
  ),
  fc.string({ minLength: 1, maxLength: 40 }),
);
const notDecimalIds = fc.constantFrom('-1', '1.0', ' 1', '1e3', '0x1f', '１２', '9'.repeat(25), 'abc');
const notDates = fc.constantFrom(
  '2026-02-30',
  '2026-13-01',
  '2026-1-1',
  '20260101',
  '2026-03-01T00:00:00Z',
  'yesterday',
  '',
);
const unicodeSegments = fc.constantFrom('é', '日本語', '🙂', '\u202eevil', 'ǅ', 'Ａ');

/** A decoded value that breaks the parameter's own schema (type, format, enum, pattern, length). */
function invalidText(schema: Schema): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return notUuids;
  if (schema.format === 'date') return notDates;
  if (Array.isArray(schema.enum)) {
    const allowed = new Set(schema.enum.map(String));
    return fc
      .oneof(fc.constantFrom(...schema.enum.map((v: string) => String(v).toLowerCase()), 'ALL', '*', ''), fc.string())
      .filter((v) => !allowed.has(v));
  }
  if (schema.pattern) {
    const pattern = new RegExp(schema.pattern);
    return fc.oneof(notDecimalIds, fc.string()).filter((v) => !pattern.test(v));
  }
  if (schema.type === 'integer')
    return fc.constantFrom('0x10', '1e1', ' 16', '-1', '99999999999999999999', '1.5', '', 'ten');
  const long = 'x'.repeat((schema.maxLength ?? 200) + 1);
  return schema.minLength ? fc.constantFrom('', long) : fc.constant(long);
}

function pathMutations(op: Operation): fc.Arbitrary<Mutation>[] {
  const params = op.params.filter((p) => p.in === 'path');
  if (params.length === 0) return [];
  const uuidParams = params.filter((p) => p.schema.format === 'uuid');
  /** Puts `wire` (already percent-encoded) in place of one path parameter. */
  const onWire = (kind: string, expect: Expectation, values: (p: Parameter) => fc.Arbitrary<string>, among = params) =>
    fc
      .constantFrom(...among)
      .chain((p) =>
        values(p).map((wire) => mutation(kind, expect, (d) => ({ pathValues: { ...d.pathValues, [p.name]: wire } }))),
      );
  const kinds = [
    onWire('path parameter breaking its schema', 'refuse', (p) => invalidText(p.schema).map(encodeURIComponent)),
    onWire('bad percent-escape in the path', 'refuse', () => fc.constantFrom('%ZZ', '%', 'a%2', '%E0%A4%A')),
    onWire('NUL in the path', 'refuse', () => fc.constantFrom('%00', 'a%00b', `%00${SOME_UUID}`)),
    onWire(`path segment of ${LONG_SEGMENT_CHARS}+ characters`, 'refuse', () =>
      fc.constantFrom('a', '1', '%41').map((c) => c.repeat(LONG_SEGMENT_CHARS)),
    ),
    onWire('unicode path segment', 'refuse', () => unicodeSegments.map(encodeURIComponent)),
    onWire('dot segment in the path', 'refuse', () => fc.constantFrom('..', '.', '%2e%2e', '..%2f..%2fhealth')),
    onWire('empty path parameter', 'refuse', () => fc.constant('')),
  ];
  if (uuidParams.length > 0) {
    kinds.push(
      onWire('urn:uuid: path parameter', 'refuse', () => fc.uuid().map((u) => `urn:uuid:${u}`), uuidParams),
      // RFC 4122 reads uuids case-insensitively: the answer is not judged, only its shape.
      fc.constantFrom(...uuidParams).map((p) =>
        mutation('upper-case uuid in the path', 'any', (d) => ({
          pathValues: { ...d.pathValues, [p.name]: (d.pathValues[p.name] ?? '').toUpperCase() },
        })),
      ),
    );
  }
  return kinds;
}

// Query ----------------------------------------------------------------------------------------

function isDecimalIn(value: string, schema: Schema): boolean {
  if (!/^-?[0-9]+$/.test(value)) return false;
  const n = Number(value);
  return n >= (schema.minimum ?? -Infinity) && n <= (schema.maximum ?? Infinity);
}

function withQuery(query: Array<[string, string]>, name: string, value: string | undefined): Array<[string, string]> {
  return [
    ...query.filter(([n]) => n !== name),
    ...(value === undefined ? [] : ([[name, value]] as Array<[string, string]>)),
  ];
}

function queryMutations(op: Operation): fc.Arbitrary<Mutation>[] {
  const params = op.params.filter((p) => p.in === 'query');
  const kinds = [
    fc
      .tuple(
        fc.constantFrom('foo', 'LIMIT', 'limit_', 'tenant[]', 'a.b', '__proto__', 'constructor', ''),
        fc.string({ maxLength: 12 }),
      )
      .map(([name, value]) =>
        // Keyed routes refuse any query parameter they do not declare; public receivers take what comes.
        mutation('unknown query parameter', op.documented && op.access !== 'public' ? 'refuse' : 'any', (d) => ({
          query: [...d.query, [name, value]],
        })),
      ),
  ];
  if (params.length === 0) return kinds;
  /** Sets one parameter of `among` to a generated value. */
  const setting = (
    kind: string,
    expect: (p: Parameter, value: string) => Expectation,
    values: (p: Parameter) => fc.Arbitrary<string>,
    among: Parameter[],
  ) =>
    fc
      .constantFrom(...among)
      .chain((p) =>
        values(p).map((v) => mutation(kind, expect(p, v), (d) => ({ query: withQuery(d.query, p.name, v) }))),
      );
  const integers = params.filter((p) => p.schema.type === 'integer');
  const others = params.filter((p) => p.schema.type !== 'integer');
  const uuids = params.filter((p) => p.schema.format === 'uuid');
  const required = params.filter((p) => p.required);
  const refuse = () => 'refuse' as const;
  kinds.push(
    setting('NUL in a query value', refuse, () => fc.constantFrom('\u0000', 'a\u0000b', '1\u0000'), params),
    fc.constantFrom(...params).map((p) =>
      mutation('repeated query parameter', 'any', (d) => {
        const given = d.query.find(([n]) => n === p.name)?.[1] ?? '1';
        return { query: [...d.query, [p.name, given], [p.name, given]] };
      }),
    ),
  );
  if (others.length > 0)
    kinds.push(setting('query value breaking its schema', refuse, (p) => invalidText(p.schema), others));
  if (integers.length > 0) {
    kinds.push(
      setting(
        'query integer not a decimal in range',
        (p, v) => (isDecimalIn(v, p.schema) ? 'any' : 'refuse'),
        (p) => invalidText(p.schema),
        integers,
      ),
    );
  }
  if (uuids.length > 0) {
    kinds.push(
      setting('urn:uuid: query value', refuse, () => fc.uuid().map((u) => `urn:uuid:${u}`), uuids),
      setting(
        'upper-case uuid in the query',
        () => 'any',
        () => fc.uuid().map((u) => u.toUpperCase()),
        uuids,
      ),
    );
  }
  if (required.length > 0) {
    kinds.push(
      fc.constantFrom(...required).map((p) =>
        mutation('required query parameter missing', 'refuse', (d) => ({
          query: withQuery(d.query, p.name, undefined),
        })),
      ),
    );
  }
  return kinds;
}

// Bodies ---------------------------------------------------------------------------------------

interface Slot {
  path: string[];
  schema: Schema;
}

/** Every value position of a body schema, the root included. */
function slotsOf(schema: Schema, path: string[] = []): Slot[] {
  const s = resolve(schema);
  const here: Slot = { path, schema: s };
  if (s.type !== 'object' || !s.properties) return [here];
  return [here, ...Object.entries<Schema>(s.properties).flatMap(([name, sub]) => slotsOf(sub, [...path, name]))];
}

function valueAt(body: unknown, path: string[]): unknown {
  let current = body;
  for (const name of path) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, name)) return undefined;
    current = (current as Record<string, unknown>)[name];
  }
  return current;
}

/** A copy of `body` with `value` at `path`, creating the objects on the way. */
function withValueAt(body: unknown, path: string[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [string, ...string[]];
  const base = isObject(body) ? { ...body } : {};
  // defineProperty: a field named "__proto__" must stay a field.
  Object.defineProperty(base, head, {
    value: withValueAt((base as Record<string, unknown>)[head], rest, value),
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return base;
}

function withoutValueAt(body: unknown, path: string[]): unknown {
  const parentPath = path.slice(0, -1);
  const parent = valueAt(body, parentPath);
  if (!isObject(parent)) return body;
  const copy = { ...parent };
  delete copy[path.at(-1)!];
  return withValueAt(body, parentPath, copy);
}

/**
 * Changes the value of one slot of the kind wanted, preferring slots the draft's body already has (a
 * missing parent would be refused for being incomplete, hiding the malformation under test).
 */
function atSlot(
  kind: string,
  slots: Slot[],
  change: (current: unknown, slot: Slot) => unknown,
  expect: Expectation = 'refuse',
): fc.Arbitrary<Mutation> {
  return fc.nat().map((pick) =>
    mutation(kind, expect, (d) => {
      const present = slots.filter((s) => valueAt(d.body, s.path) !== undefined);
      const pool = present.length > 0 ? present : slots;
      const slot = pool[pick % pool.length]!;
      return { body: withValueAt(d.body, slot.path, change(valueAt(d.body, slot.path), slot)) };
    }),
  );
}

function wrongTypeValues(schema: Schema): unknown[] {
  const samples: Record<string, unknown[]> = {
    string: [0, 1.5, true, {}, ['x']],
    integer: ['5', 1.5, true, {}, [1], '1e3'],
    number: ['5', true, {}, []],
    boolean: ['true', 1, 0, {}, []],
    object: ['x', 1, true, ['x']],
    array: ['x', 1, {}],
  };
  const wrong = samples[schema.type] ?? [];
  return schema.nullable || schema.type === undefined ? wrong : [...wrong, null];
}

const HUGE_INTEGERS = [2 ** 63, 2 ** 64, 1e21, -(2 ** 63) - 4096, 99999999999999999999999];

/** `levels` objects inside each other, written as text: no recursion, on our side at least. */
function deeplyNested(levels: number): string {
  return '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
}

/** `body` rendered with a deeply nested object at `path` (the whole body when `path` is empty). */
function nestedPayload(body: unknown, path: string[]): string {
  const marker = '__deeply_nested__';
  return JSON.stringify(withValueAt(body, path, marker)).replace(
    JSON.stringify(marker),
    deeplyNested(DEEP_NESTING_LEVELS),
  );
}

const notJson = fc.oneof(
  fc.constantFrom(
    '{',
    '{"a":1}}',
    "{'quoteId':1}",
    'NaN',
    'undefined',
    '{"a":01}',
    '{"a":"\\x41"}',
    '\ufeff{}',
    'a\u0000b',
    '{"a":"\ud800"',
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).filter((s) => !isJson(s)),
);

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const UNKNOWN_FIELD_NAMES = ['extra', 'amount', 'isAdmin', 'tenantId', '__proto__', 'constructor', 'Quoteid'];

function bodyMutations(op: Operation): fc.Arbitrary<Mutation>[] {
  const schema = op.body!;
  const slots = slotsOf(schema);
  const ofType = (type: string) => slots.filter((s) => s.schema.type === type);
  // Only closed objects have unknown fields: any key is a field of a free-form map (metadata).
  const objects = ofType('object').filter((s) => s.schema.additionalProperties === false);
  // A body the schema leaves free (the sandbox receivers) may be anything: only its size is bounded.
  const constrained = schema.type === 'object';
  const refuse: Expectation = constrained ? 'refuse' : 'any';
  const kinds = [
    notJson.map((text) => mutation('body is not JSON', refuse, () => ({ payload: text }))),
    fc
      .constantFrom(
        'text/plain',
        'application/xml',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/jsonp',
        'json',
      )
      .map((type) => mutation('wrong content-type', refuse, () => ({ contentType: type }))),
    fc.constant(mutation('no content-type', refuse, () => ({ contentType: undefined }))),
    fc.constantFrom('', ' ', '\n').map((text) => mutation('empty body', refuse, () => ({ payload: text }))),
    fc.constant(
      mutation('body over the size limit', 'refuse', (d) => ({
        payload: JSON.stringify(withValueAt(d.body, ['padding'], 'x'.repeat(BODY_LIMIT_BYTES))),
      })),
    ),
    fc.constant(mutation('deeply nested body', refuse, () => ({ payload: nestedPayload(undefined, []) }))),
  ];
  if (!constrained) return kinds;
  const typed = slots.filter((s) => wrongTypeValues(s.schema).length > 0);
  kinds.push(
    fc.constant(mutation('array instead of the body object', 'refuse', (d) => ({ body: [d.body] }))),
    fc
      .constantFrom(...typed)
      .chain((slot) =>
        fc
          .constantFrom(...wrongTypeValues(slot.schema))
          .chain((value) => atSlot('wrong JSON type', [slot], () => value)),
      ),
    fc.tuple(fc.nat(), fc.constantFrom(...UNKNOWN_FIELD_NAMES), anyJson).map(([pick, name, value]) =>
      mutation('unknown field', 'refuse', (d) => {
        const place = presentObject(objects, d.body, pick);
        return { body: withValueAt(d.body, [...place.path, unknownNameIn(place, name)], value) };
      }),
    ),
    fc.tuple(fc.nat(), fc.constantFrom(...UNKNOWN_FIELD_NAMES)).map(([pick, name]) =>
      mutation('deeply nested object in an unknown field', 'refuse', (d) => {
        const place = presentObject(objects, d.body, pick);
        return { payload: nestedPayload(d.body, [...place.path, unknownNameIn(place, name)]) };
      }),
    ),
  );
  const requiredAtRoot: string[] = schema.required ?? [];
  if (requiredAtRoot.length > 0) {
    kinds.push(
      fc
        .constantFrom(...requiredAtRoot)
        .map((name) => mutation('required field missing', 'refuse', (d) => ({ body: withoutValueAt(d.body, [name]) }))),
    );
  } else if (schema.minProperties) {
    kinds.push(fc.constant(mutation('empty object where fields are required', 'refuse', () => ({ body: {} }))));
  }
  const nestedObjects = objects.filter((s) => s.path.length > 0);
  if (nestedObjects.length > 0)
    kinds.push(atSlot('array instead of an object', nestedObjects, (current) => [current ?? {}]));
  kinds.push(...stringMutations(ofType('string')), ...integerMutations(ofType('integer')), ...mapMutations(slots));
  return kinds;
}

/** A free-form map (metadata) past one of its bounds: key count, key length, value type or length. */
function mapMutations(slots: Slot[]): fc.Arbitrary<Mutation>[] {
  const maps = slots.filter((s) => s.schema.type === 'object' && isObject(s.schema.additionalProperties));
  if (maps.length === 0) return [];
  return [
    fc.nat().chain((pick) =>
      atSlot('free-form map past its bounds', maps, (current, slot) => {
        const s = slot.schema;
        const names = s['x-property-names'] ?? {};
        const broken: Array<Record<string, unknown>> = [{ k: { nested: 'x' } }, { k: ['x'] }, { k: 1 }, { k: null }];
        if (s.maxProperties !== undefined)
          broken.push(Object.fromEntries(Array.from({ length: s.maxProperties + 1 }, (_, i) => [`k${i}`, 'v'])));
        if (names.maxLength !== undefined) broken.push({ ['k'.repeat(names.maxLength + 1)]: 'v' });
        if (names.minLength !== undefined && names.minLength > 0) broken.push({ '': 'v' });
        if (s.additionalProperties.maxLength !== undefined)
          broken.push({ k: 'v'.repeat(s.additionalProperties.maxLength + 1) });
        return { ...(isObject(current) ? current : {}), ...broken[pick % broken.length] };
      }),
    ),
  ];
}

/** An object slot the body has (the root at least). */
function presentObject(objects: Slot[], body: unknown, pick: number): Slot {
  const present = objects.filter((s) => s.path.length === 0 || isObject(valueAt(body, s.path)));
  return present[pick % present.length]!;
}

function unknownNameIn(place: Slot, name: string): string {
  return Object.hasOwn(place.schema.properties ?? {}, name) ? `${name}_x` : name;
}

function stringMutations(strings: Slot[]): fc.Arbitrary<Mutation>[] {
  if (strings.length === 0) return [];
  const textOf = (current: unknown) => (typeof current === 'string' && current.length > 0 ? current : 'Ana');
  const kinds = [
    fc.nat().chain((at) =>
      atSlot('string containing U+0000', strings, (current) => {
        const text = textOf(current);
        const i = at % (text.length + 1);
        return `${text.slice(0, i)}\u0000${text.slice(i)}`;
      }),
    ),
    fc
      .constantFrom('\ud800', '\udc00', '\ud83d')
      .chain((half) => atSlot('string with an unpaired surrogate', strings, (current) => `${textOf(current)}${half}b`)),
  ];
  const constrained = strings.filter(
    (s) =>
      s.schema.format ||
      s.schema.enum ||
      s.schema.pattern ||
      s.schema.minLength !== undefined ||
      s.schema.maxLength !== undefined,
  );
  if (constrained.length > 0)
    kinds.push(
      atSlot('string breaking its format, enum, pattern or length', constrained, (current, slot) =>
        invalidFor(slot.schema, current),
      ),
    );
  const uuids = strings.filter((s) => s.schema.format === 'uuid');
  if (uuids.length > 0) {
    kinds.push(
      atSlot(
        'urn:uuid: in the body',
        uuids,
        (current) => `urn:uuid:${typeof current === 'string' ? current : SOME_UUID}`,
      ),
      // RFC 4122 reads uuids case-insensitively: the answer is not judged, only its shape.
      atSlot('upper-case uuid in the body', uuids, (current) => String(current ?? SOME_UUID).toUpperCase(), 'any'),
    );
  }
  return kinds;
}

function integerMutations(integers: Slot[]): fc.Arbitrary<Mutation>[] {
  if (integers.length === 0) return [];
  return [
    fc.constantFrom(...HUGE_INTEGERS).chain((huge) => atSlot('integer beyond 2^63', integers, () => huge)),
    fc.nat().chain((pick) =>
      atSlot('integer out of range (zero, negative, past the maximum)', integers, (_, slot) => {
        const { minimum = -Infinity, maximum = Infinity } = slot.schema;
        const outside = [minimum - 1, 0, -1, maximum + 1].filter(
          (n) => Number.isFinite(n) && (n < minimum || n > maximum),
        );
        return outside[pick % outside.length] ?? -1;
      }),
    ),
  ];
}

/** A string value the slot's schema forbids, derived from the current value. */
function invalidFor(schema: Schema, current: unknown): string {
  const text = typeof current === 'string' ? current : '';
  if (schema.format === 'uuid') return text ? `${text.slice(0, -1)}g` : 'not-a-uuid';
  if (schema.format === 'email') return 'not-an-email';
  if (schema.format === 'date' || schema.format === 'date-time') return '2026-02-30';
  if (Array.isArray(schema.enum)) return `${String(schema.enum[0])}_x`;
  const candidates = [`${text} x`, '', '-1', 'x'.repeat((schema.maxLength ?? 0) + 1)];
  return candidates.find((c) => !fitsText(schema, c)) ?? `${text} x`;
}

function fitsText(schema: Schema, value: string): boolean {
  const length = [...value].length;
  if (schema.pattern && !new RegExp(schema.pattern).test(value)) return false;
  return length >= (schema.minLength ?? 0) && length <= (schema.maxLength ?? Infinity);
}

function unexpectedBodyMutations(): fc.Arbitrary<Mutation>[] {
  return [
    fc
      .tuple(anyJson, fc.constantFrom('application/json', 'text/plain', 'application/octet-stream'))
      .map(([value, type]) =>
        mutation('body on an operation that takes none', 'any', () => ({
          payload: JSON.stringify(value),
          contentType: type,
        })),
      ),
  ];
}

// ---------------------------------------------------------------------------------------------
// Judging an answer

type Envelope = { error: { type: string; code: string; message: string; request_id: string; meta?: unknown } };

const ENVELOPE_FIELDS = ['type', 'code', 'message', 'request_id', 'meta'];
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Every way the body of a 4xx departs from the envelope; empty when it is exactly the envelope. */
function envelopeDefects(observed: Observed): string[] {
  const header = observed.headers['x-request-id'];
  const defects = header === undefined ? ['no x-request-id header'] : [];
  let body: unknown;
  try {
    body = JSON.parse(observed.raw);
  } catch {
    return [...defects, 'body is not JSON'];
  }
  if (!isObject(body) || Object.keys(body).join() !== 'error' || !isObject(body.error)) {
    return [
      ...defects,
      `body is ${isObject(body) ? `{${Object.keys(body).join(', ')}}` : typeof body}, not {error: {...}}`,
    ];
  }
  const error = body.error;
  const extra = Object.keys(error).filter((k) => !ENVELOPE_FIELDS.includes(k));
  if (extra.length > 0) defects.push(`error has extra fields ${extra.join(', ')}`);
  for (const field of ['type', 'code', 'message', 'request_id']) {
    if (typeof error[field] !== 'string') defects.push(`error.${field} is not a string`);
  }
  if (error.meta !== undefined && !isObject(error.meta)) defects.push('error.meta is not an object');
  const spec = ERROR_CODES[error.code as keyof typeof ERROR_CODES];
  if (!spec) defects.push(`code ${String(error.code)} is not in ERROR_CODES`);
  else {
    if (spec.status !== observed.status)
      defects.push(`code ${error.code} is a ${spec.status}, answered with ${observed.status}`);
    if (spec.type !== error.type)
      defects.push(`code ${error.code} has type ${spec.type}, answered with ${String(error.type)}`);
  }
  if (header !== undefined && error.request_id !== header) defects.push('request_id differs from x-request-id');
  return defects;
}

function codeOf(observed: Observed): string {
  try {
    const body = JSON.parse(observed.raw);
    return String((body as Envelope).error?.code ?? body.code ?? '');
  } catch {
    return '';
  }
}

/**
 * The document's components, for its `#/components/schemas/…` references, read by a validator that
 * applies every keyword (formats included, `nullable` as OpenAPI 3.0.3 defines it).
 */
const documentAjv = new Ajv({ strict: false, allErrors: false });
// ajv-formats is CommonJS: its default export is the function (typed as the module).
(addFormats as unknown as (ajv: Ajv) => void)(documentAjv);
documentAjv.addSchema({ components: DOC.components }, 'document');
const answerValidators = new Map<Schema, ValidateFunction>();
/**
 * Codes the HTTP layer answers before any route is matched (a URL it cannot decode or route, a path
 * parameter over its length): such a request never reached the operation, so the operation's
 * document does not speak for it. Its envelope is still checked (envelopeDefects).
 */
const ANSWERED_BEFORE_ROUTING = new Set(['malformed_request', 'uri_too_long', 'route_not_found']);

/** How an answer departs from what its operation documents: an undocumented status, or a body outside its schema. */
function documentDefects(d: Draft, observed: Observed): string[] {
  if (!d.operation.documented || d.method !== d.operation.method || observed.status >= 500) return [];
  if (ANSWERED_BEFORE_ROUTING.has(codeOf(observed))) return [];
  const documented = d.operation.responses[String(observed.status)] ?? d.operation.responses.default;
  if (!documented) return [`undocumented status · ${d.operation.id} · ${observed.status}`];
  const schema = documented.content?.['application/json']?.schema as Schema | undefined;
  if (!schema) return [];
  let body: unknown;
  try {
    body = JSON.parse(observed.raw);
  } catch {
    return [`documented as JSON, answered otherwise · ${d.operation.id} · ${observed.status}`];
  }
  let validate = answerValidators.get(schema);
  if (!validate) {
    // References point into the document: resolved against it, as a client generated from it would.
    const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"document#/components/'));
    const compiled = documentAjv.compile(rebased);
    answerValidators.set(schema, compiled);
    validate = compiled;
  }
  if (validate(body)) return [];
  const error = validate.errors?.[0];
  return [
    `answer outside its documented schema · ${d.operation.id} · ${observed.status} · ${error?.instancePath || '/'} ${error?.message ?? ''}`,
  ];
}

/** The failure classes one answer belongs to (none when it is fine). */
function judge(d: Draft, observed: Observed): string[] {
  const { status } = observed;
  const seen = `${status} ${codeOf(observed)}`.trim();
  const classes: string[] = [];
  if (status >= 500 && status !== d.operation.deliberateStatus) classes.push(`5xx · ${d.kind} · ${seen}`);
  if (status >= 400 && status < 500) {
    const defects = envelopeDefects(observed);
    if (defects.length > 0) classes.push(`4xx outside the error envelope · ${seen} · ${defects.join('; ')}`);
  }
  if (d.expect === 'refuse' && status < 400) classes.push(`malformed request accepted · ${d.kind} · ${seen}`);
  if (typeof d.expect === 'number' && status !== d.expect && status < 500)
    classes.push(`expected ${d.expect} · ${d.kind} · got ${seen}`);
  classes.push(...documentDefects(d, observed));
  return classes;
}

// ---------------------------------------------------------------------------------------------
// Collecting failures over a whole run

interface Example {
  sent: Sent;
  observed: Observed;
  note?: string;
}

class FailureLog {
  private readonly classes = new Map<string, { count: number; byOperation: Map<string, Example> }>();

  constructor(private readonly labels: Map<string, string>) {}

  get size(): number {
    return this.classes.size;
  }

  addLabels(labels: Map<string, string>): void {
    for (const [secret, label] of labels) this.labels.set(secret, label);
  }

  /** Keeps, per class and operation, the shortest request that showed it. */
  record(className: string, operation: string, example: Example): void {
    const entry = this.classes.get(className) ?? { count: 0, byOperation: new Map<string, Example>() };
    entry.count += 1;
    const kept = entry.byOperation.get(operation);
    if (!kept || size(example.sent) < size(kept.sent)) entry.byOperation.set(operation, example);
    this.classes.set(className, entry);
  }

  report(title: string): string {
    const lines = [`${title}: ${this.classes.size} failure classes (seed ${SEED}, ${ENGINE})`];
    let n = 0;
    for (const [name, entry] of [...this.classes].sort(([a], [b]) => a.localeCompare(b))) {
      n += 1;
      lines.push(
        '',
        `[${n}] ${name}`,
        `  ${entry.count} requests on ${entry.byOperation.size} operations: ${[...entry.byOperation.keys()].sort().join(', ')}`,
      );
      const shortest = [...entry.byOperation.values()]
        .sort((a, b) => size(a.sent) - size(b.sent))
        .slice(0, EXAMPLES_PER_CLASS);
      for (const example of shortest)
        lines.push(...this.describe(example).map((l, i) => `  ${i === 0 ? '•' : ' '} ${l}`));
    }
    return lines.join('\n');
  }

  private describe({ sent, observed, note }: Example): string[] {
    const headers = Object.entries(sent.headers).map(([k, v]) => `${k}: ${JSON.stringify(this.labels.get(v) ?? v)}`);
    const lines = [`${sent.method} ${sent.url}`, `headers: {${headers.join(', ')}}`];
    if (sent.payload !== undefined) lines.push(`body (${sent.payload.length} chars): ${quoted(sent.payload)}`);
    lines.push(`→ ${observed.status} x-request-id=${String(observed.headers['x-request-id'])} ${quoted(observed.raw)}`);
    if (note) lines.push(note);
    return lines;
  }
}

function size(sent: Sent): number {
  return sent.url.length + (sent.payload?.length ?? 0) + JSON.stringify(sent.headers).length;
}

function quoted(text: string): string {
  const json = JSON.stringify(text);
  return json.length <= QUOTED_CHARS ? json : `${json.slice(0, QUOTED_CHARS)}…`;
}

// ---------------------------------------------------------------------------------------------
// Property 2: the scene of one malformed payout

interface Scene {
  api: Client;
  keys: Keys;
  quoteId: string;
  beneficiaryId: string;
}

/** A prefunded tenant with a registered beneficiary and an open quote; extra keys only when needed. */
async function payoutScene(t: TestApp, kind: string): Promise<Scene> {
  const admin = client(t.app, t.platformKey);
  const tenant = await fundedTenant(t, SCENE_FUNDING);
  const registered = await created(tenant.api.post('/v1/beneficiaries', beneficiary('V20111222')));
  const quoteId = await quote(tenant.api, SCENE_DELIVER);
  const keys: Keys = {
    customer: tenant.key,
    platform: t.platformKey,
    live: kind === 'live-mode key' ? (await issueKey(admin, tenant.tenantId, 'live')).key : 'bsk_live_not_issued',
    revoked: kind === 'revoked API key' ? (await revokedKey(admin, tenant.tenantId)).key : 'bsk_test_not_issued',
  };
  return { api: tenant.api, keys, quoteId, beneficiaryId: registered.id };
}

function validPayout(op: Operation, scene: Scene, idempotencyKey: string): Draft {
  return {
    operation: op,
    method: 'POST',
    pathValues: {},
    query: [],
    body: { quoteId: scene.quoteId, method: 'pago_movil', beneficiaryId: scene.beneficiaryId, sender: SENDER },
    contentType: 'application/json',
    headers: { 'x-api-key': scene.keys.customer, 'idempotency-key': idempotencyKey },
    keys: scene.keys,
    kind: 'well-formed',
    expect: 'any',
  };
}

/** What a malformed payout must have left as it was; a description of each thing it changed. */
async function changesLeftBy(t: TestApp, op: Operation, scene: Scene, idempotencyKey: string): Promise<string[]> {
  const changes: string[] = [];
  const quoteNow = await scene.api.get(`/v1/quotes/${scene.quoteId}`);
  if (quoteNow.body?.status !== 'open') changes.push(`quote ${quoteNow.body?.status ?? quoteNow.status}`);
  const position = await scene.api.get('/v1/treasury/position');
  if (position.body?.prefundingBalance !== SCENE_FUNDING.toString())
    changes.push(`prefundingBalance ${SCENE_FUNDING} → ${position.body?.prefundingBalance}`);
  const payments = await scene.api.get('/v1/payments');
  if (payments.body?.data?.length !== 0)
    changes.push(`${payments.body?.data?.length ?? payments.status} payments listed`);
  const valid = await send(t, render(validPayout(op, scene, idempotencyKey)));
  if (valid.status !== 201 || valid.headers['idempotent-replayed'] !== undefined) {
    changes.push(
      `the valid payout with the same Idempotency-Key answered ${valid.status} ${codeOf(valid)}${valid.headers['idempotent-replayed'] ? ' (replayed)' : ''}`,
    );
  }
  return changes;
}

// ---------------------------------------------------------------------------------------------

/**
 * The app under fuzz; `served` counts the requests it answers through its hooks (all of them on
 * POST /v1/payouts; a URL the router rejects never reaches a hook).
 */
function fuzzedApp(served?: { requests: number }): Parameters<typeof startTestApp>[0] {
  return {
    // A short rail timeout: a generated beneficiary may well be the sandbox's "rail hangs" trigger.
    // The failed-authentication limit (tested on its own) would otherwise answer 429 to every keyed
    // request after the first 20 bad keys, and the fuzzer would stop reaching the routes.
    env: { SANDBOX_RAIL_TIMEOUT_MS: '200', AUTH_FAILURE_LIMIT: '0' },
    beforeReady: (app) => {
      if (served) {
        app.addHook('onResponse', async () => {
          served.requests += 1;
        });
      }
    },
  };
}

describe('OpenAPI fuzz: every operation of the committed document', () => {
  const operations = documentedOperations();

  describe('property 1: no 5xx, every 4xx in the envelope, malformed requests refused', () => {
    let t: TestApp;
    let world: World;
    before(async () => {
      t = await startTestApp(fuzzedApp());
      world = await buildWorld(t);
    });
    after(async () => {
      await t.close();
    });

    it(`${OPERATION_RUNS} generated requests over ${operations.length} operations`, async (ctx) => {
      const log = new FailureLog(world.labels);
      const statuses = new Map<number, number>();
      const request = fc.oneof(
        ...operations.map((op) =>
          wellFormed(op, world).chain((draft) =>
            fc.oneof(
              { weight: WELL_FORMED_WEIGHT, arbitrary: fc.constant(draft) },
              { weight: MALFORMED_WEIGHT, arbitrary: mutations(op).map((m) => m.apply(draft)) },
            ),
          ),
        ),
      );
      const started = performance.now();
      await fc.assert(
        fc.asyncProperty(request, async (draft) => {
          const sent = render(draft);
          const observed = await send(t, sent);
          statuses.set(observed.status, (statuses.get(observed.status) ?? 0) + 1);
          for (const failure of judge(draft, observed)) log.record(failure, draft.operation.id, { sent, observed });
        }),
        { seed: SEED, numRuns: OPERATION_RUNS, endOnFailure: true },
      );
      const elapsed = Math.round(performance.now() - started);
      const histogram = JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)));
      ctx.diagnostic(`${ENGINE}: ${OPERATION_RUNS} generated requests in ${elapsed} ms; statuses ${histogram}`);

      const live = await client(t.app).get('/health/live');
      assert.equal(live.status, 200, `GET /health/live after the run: ${live.raw}`);
      assert.equal(log.size, 0, log.report('property 1'));
    });
  });

  describe('property 2: a malformed POST /v1/payouts changes no state', () => {
    let t: TestApp;
    const served = { requests: 0 };
    before(async () => {
      t = await startTestApp(fuzzedApp(served));
    });
    after(async () => {
      await t.close();
    });

    it(`${STATE_RUNS} malformed payouts, each on a real open quote, funded tenant and beneficiary`, async (ctx) => {
      const op = operations.find((o) => o.id === 'POST /v1/payouts');
      assert.ok(op, 'the document has POST /v1/payouts');
      const log = new FailureLog(new Map());
      // Real malformations only (an upper-case uuid may be served); a live-mode key is kept: whatever
      // it gets, it must not touch the test-mode quote, balance or key.
      const malformation = fc
        .oneof(...bodyMutations(op), ...headerMutations(op))
        .filter((m) => m.expect !== 'any' || m.kind === 'live-mode key');
      let run = 0;
      const started = performance.now();
      await fc.assert(
        fc.asyncProperty(malformation, async (m) => {
          run += 1;
          const scene = await payoutScene(t, m.kind);
          log.addLabels(keyLabels(scene.keys));
          const idempotencyKey = `fuzz-payout-${run}`;
          const draft = m.apply(validPayout(op, scene, idempotencyKey));
          const sent = render(draft);
          const observed = await send(t, sent);
          for (const failure of judge(draft, observed)) log.record(failure, op.id, { sent, observed });
          const changes = await changesLeftBy(t, op, scene, idempotencyKey);
          if (changes.length > 0) {
            log.record(
              `state changed · ${m.kind} · malformed payout answered ${observed.status} ${codeOf(observed)}`.trim(),
              op.id,
              {
                sent,
                observed,
                note: `changed: ${changes.join('; ')}`,
              },
            );
          }
        }),
        { seed: SEED, numRuns: STATE_RUNS, endOnFailure: true },
      );
      ctx.diagnostic(
        `${ENGINE}: ${STATE_RUNS} malformed payouts, ${served.requests} requests with their scenes and checks, in ${Math.round(performance.now() - started)} ms`,
      );
      assert.equal(log.size, 0, log.report('property 2'));
    });
  });
});
