// The OpenAPI document states rules that code checks (x-validated-in-code) and messages the code
// builds: each is shown here to be the same rule as the code's, so a generated client that compiles
// sends what the server accepts, and what the document says a webhook carries is what is sent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { eventPayload, PAYOUT_FAILURE_REASONS, type OutcomeEventType } from '../../src/domain/payment-messages.ts';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { PgliteDatabase } from '../../src/db/pglite.ts';
import { validateBeneficiary } from '../../src/domain/beneficiary.ts';
import { planQuote } from '../../src/domain/quote-request.ts';
import { validateSender } from '../../src/domain/sender.ts';
import { deliveryBody, deliveryHeaders } from '../../src/domain/webhooks.ts';
import { ApiError } from '../../src/domain/errors.ts';
import { closeObjectSchemas } from '../../src/http/input-hygiene.ts';
import { readIdempotencyKey } from '../../src/http/plugins/idempotency.ts';
import { RegisterBeneficiaryBody } from '../../src/http/schemas/beneficiaries.ts';
import { ASSETS, componentSchemas, VALIDATED_IN_CODE } from '../../src/http/schemas/common.ts';
import { IdempotencyKeyHeaders } from '../../src/http/schemas/headers.ts';
import { SenderBlock } from '../../src/http/schemas/payouts.ts';
import { CreateQuoteBody } from '../../src/http/schemas/quotes.ts';
import { WEBHOOK_DELIVERY_HEADERS } from '../../src/http/schemas/webhooks.ts';
import { validatorCompiler } from '../../src/http/validation.ts';

/** A validator that applies every keyword of the document, as a strict client-side validator would. */
function documentValidator(schema: unknown) {
  const ajv = new Ajv({ strict: false, allErrors: true });
  for (const component of componentSchemas()) ajv.addSchema(component as object);
  return ajv.compile(schema as object);
}

/** The service's request validator for one part (it leaves `x-validated-in-code` keywords to the code). */
function serviceValidator(schema: unknown, httpPart: 'body' | 'headers') {
  return validatorCompiler({ schema, httpPart, method: 'POST', url: '/test' } as never) as unknown as (
    data: unknown,
  ) => boolean;
}

const side = fc.record(
  { asset: fc.constantFrom(...ASSETS), amount: fc.constantFrom(1, 5_000_000, 9_007_199_254_740_991) },
  { requiredKeys: ['asset'] },
);
const quoteBodies = fc.record({ deliver: side, spend: side }, { requiredKeys: [] });

describe('the quote body of the document', () => {
  closeObjectSchemas(CreateQuoteBody);

  it('its oneOf (deliver-fixed | spend-fixed) accepts exactly the bodies the quote rules accept', () => {
    const strict = documentValidator(CreateQuoteBody);
    fc.assert(
      fc.property(quoteBodies, (body) => {
        assert.equal(strict(body), planQuote(body).ok, JSON.stringify(body));
      }),
      { numRuns: 2_000 },
    );
    // Every combination of the fields that matter, not only what the generator happened to draw.
    for (const deliver of [undefined, ...ASSETS.flatMap((asset) => [{ asset }, { asset, amount: 1 }])]) {
      for (const spend of [undefined, ...ASSETS.flatMap((asset) => [{ asset }, { asset, amount: 1 }])]) {
        const body = { ...(deliver ? { deliver } : {}), ...(spend ? { spend } : {}) };
        assert.equal(strict(body), planQuote(body).ok, JSON.stringify(body));
      }
    }
  });

  it('the service leaves the modes to the quote rules (their messages), and still refuses what the fields forbid', () => {
    const validate = serviceValidator(CreateQuoteBody, 'body');
    fc.assert(fc.property(quoteBodies, (body) => validate(body)));
    assert.equal(validate({}), true, '{} reaches the rules, which answer "Give an amount on exactly one side"');
    assert.equal(validate({ deliver: { asset: 'BS', amount: '5' } }), false);
    assert.equal(validate({ deliver: { asset: 'BS', amount: 5 }, extra: 1 }), false);
    assert.equal(validate({ deliver: { asset: 'EUR', amount: 5 } }), false);
  });
});

describe('the sender block of the document', () => {
  const SENDER = {
    nationalId: 'V12345678',
    nationality: 'VEN',
    firstName: 'Ana',
    lastName: 'Rojas',
    phone: '04141234567',
    email: 'ana@example.com',
  };
  const fields = Object.keys(SENDER) as Array<keyof typeof SENDER>;

  it('requires exactly the fields the sender rules require (all but nationality)', () => {
    const required = (SenderBlock as { required?: string[] }).required ?? [];
    assert.deepEqual([...required].sort(), fields.filter((f) => f !== 'nationality').sort());
    for (let mask = 0; mask < 2 ** fields.length; mask += 1) {
      const missing = fields.filter((_, i) => mask & (2 ** i));
      const input = Object.fromEntries(Object.entries(SENDER).filter(([name]) => !missing.includes(name as never)));
      const checked = validateSender(input);
      const missingRequired = missing.filter((name) => required.includes(name));
      assert.equal(checked.ok, missingRequired.length === 0, `without ${missing.join(', ') || 'nothing'}`);
      if (!checked.ok)
        assert.deepEqual(
          checked.errors.map((e) => e.field).sort(),
          missingRequired.map((name) => `sender.${name}`).sort(),
        );
    }
  });

  it('the service leaves `required` to the sender rules (every field at once, with its format)', () => {
    const validate = serviceValidator(SenderBlock, 'body');
    assert.equal(validate({ email: 'ana@example.com' }), true);
    assert.equal(validate({ ...SENDER, phone: 4141234567 }), false, 'JSON types are still the schema’s');
    assert.equal(documentValidator(SenderBlock)({ email: 'ana@example.com' }), false);
  });
});

describe('the Idempotency-Key header of the document', () => {
  /** readIdempotencyKey's verdict: the check that answers, before the schema runs. */
  function accepted(value: string): boolean {
    try {
      readIdempotencyKey({ headers: { 'idempotency-key': value } } as never);
      return true;
    } catch (error) {
      assert.ok(error instanceof ApiError && error.code === 'validation_failed');
      return false;
    }
  }

  it('states the same form the service checks, so the route schema can never answer first or otherwise', () => {
    const schema = serviceValidator(IdempotencyKeyHeaders(true), 'headers');
    const document = documentValidator(IdempotencyKeyHeaders(true).properties['Idempotency-Key']);
    const values = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({ unit: 'grapheme-ascii', minLength: 250, maxLength: 260 }),
      fc.uuid(),
      fc.constantFrom('', ' ', '~', 'clé', 'tab\there', 'k'.repeat(255), 'k'.repeat(256)),
    );
    fc.assert(
      fc.property(values, (value) => {
        const verdict = accepted(value);
        assert.equal(schema({ 'idempotency-key': value }), verdict, JSON.stringify(value));
        assert.equal(document(value), verdict, JSON.stringify(value));
      }),
      { numRuns: 3_000 },
    );
    // Required on the schema is the auth hook's 400 idempotency_key_missing, which runs earlier.
    assert.equal(schema({}), false);
    assert.equal(serviceValidator(IdempotencyKeyHeaders(false), 'headers')({}), true);
  });
});

describe('webhook deliveries of the document', () => {
  const payment = {
    id: '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f',
    payout_asset: 'BS',
    payout_amount: 5_000_000n,
    bank_reference: 'SBX-000123',
    method: 'pago_movil',
    method_requested: 'pago_movil',
    status_reason: null,
    metadata: { order_id: '6735' },
  };
  const components: Record<OutcomeEventType, string> = {
    'payment.settled': 'PaymentSettledEvent',
    'payment.failed': 'PaymentFailedEvent',
    'payment.reversed': 'PaymentReversedEvent',
  };

  it('each body, as the dispatcher builds it, is its named component, and the union tells them apart', () => {
    const union = documentValidator({ $ref: 'WebhookEvent' });
    for (const [type, name] of Object.entries(components) as Array<[OutcomeEventType, string]>) {
      const reasons =
        type === 'payment.failed'
          ? PAYOUT_FAILURE_REASONS
          : type === 'payment.reversed'
            ? ['returned_by_bank', 'a live rail’s own words']
            : [undefined];
      for (const reason of reasons) {
        for (const source of [payment, { ...payment, metadata: {} }, { ...payment, method: null }]) {
          if (source.method === null && type !== 'payment.failed') continue; // only a failure can come before an instrument was used
          const body = JSON.parse(
            deliveryBody({
              id: 42n,
              eventType: type,
              attempt: 3,
              payloadText: JSON.stringify(eventPayload(source, type, reason)),
            }),
          );
          const validate = documentValidator({ $ref: name });
          assert.ok(validate(body), `${type} ${reason}: ${JSON.stringify(validate.errors)}`);
          assert.ok(union(body), `${type} as WebhookEvent`);
          for (const other of Object.values(components).filter((n) => n !== name))
            assert.equal(documentValidator({ $ref: other })(body), false, `${type} is not ${other}`);
        }
      }
    }
  });

  it('the callbacks list every header a delivery carries', () => {
    const headers = deliveryHeaders({
      eventId: '42',
      eventType: 'payment.settled',
      attempt: 1,
      body: '{}',
      timestampMs: 1_700_000_000_000,
      secrets: ['whsec_a', 'whsec_b'],
    });
    assert.deepEqual(Object.keys(WEBHOOK_DELIVERY_HEADERS).sort(), Object.keys(headers).sort());
  });
});

/** The document the app generates (not the committed file): a route added since `npm run openapi` is checked too. */
async function generatedDocument(): Promise<any> {
  const db = await PgliteDatabase.open(undefined);
  const { app } = await buildApp({ config: loadConfig({ LOG_LEVEL: 'silent' }), db });
  try {
    await app.ready();
    return JSON.parse(JSON.stringify(app.swagger()));
  } finally {
    await app.close();
    await db.close();
  }
}

interface Accepted {
  /** `POST /v1/payouts body.sender.phone`, `GET /v1/payments query limit`: the route and the field. */
  where: string;
  schema: Record<string, any>;
}

/** Every schema node a request may carry: parameters (path, query, header) and bodies, $refs followed. */
function acceptedSchemas(doc: any): Accepted[] {
  const found: Accepted[] = [];
  const resolve = (node: any): any =>
    typeof node?.$ref === 'string' ? resolve(doc.components.schemas[node.$ref.split('/').pop()]) : node;
  const walk = (raw: any, where: string, path: Set<any>) => {
    const node = resolve(raw);
    if (node === null || typeof node !== 'object' || path.has(node)) return;
    const inner = new Set(path).add(node);
    found.push({ where, schema: node });
    for (const [name, child] of Object.entries(node.properties ?? {})) walk(child, `${where}.${name}`, inner);
    if (node.items) walk(node.items, `${where}[]`, inner);
    if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${where}.<key>`, inner);
    for (const keyword of ['oneOf', 'anyOf', 'allOf'])
      for (const child of node[keyword] ?? []) walk(child, where, inner);
  };
  for (const [route, operations] of Object.entries<any>(doc.paths)) {
    for (const [method, operation] of Object.entries<any>(operations)) {
      const at = `${method.toUpperCase()} ${route}`;
      for (const parameter of operation.parameters ?? [])
        walk(parameter.schema, `${at} ${parameter.in} ${parameter.name}`, new Set());
      for (const content of Object.values<any>(operation.requestBody?.content ?? {}))
        walk(content.schema, `${at} body`, new Set());
    }
  }
  return found;
}

const typeOf = (schema: Record<string, any>) => [schema.type].flat();

describe('everything the document accepts is bounded', () => {
  let accepted: Accepted[];

  it('every string a request carries declares maxLength; every integer its format and range; every array maxItems', async () => {
    accepted = acceptedSchemas(await generatedDocument());
    assert.ok(
      accepted.filter((a) => typeOf(a.schema).includes('string')).length > 100,
      'the walk reaches the request strings',
    );
    const unbounded = accepted.flatMap(({ where, schema }) => {
      const types = typeOf(schema);
      const missing: string[] = [];
      if (types.includes('string') && typeof schema.maxLength !== 'number') missing.push('a string without maxLength');
      if (
        types.includes('integer') &&
        !(
          ['int32', 'int64'].includes(schema.format) &&
          typeof schema.minimum === 'number' &&
          typeof schema.maximum === 'number'
        )
      ) {
        missing.push('an integer without format (int32 or int64), minimum and maximum');
      }
      if (types.includes('array') && typeof schema.maxItems !== 'number') missing.push('an array without maxItems');
      return missing.map((what) => `${where}: ${what}`);
    });
    assert.deepEqual(
      unbounded,
      [],
      `bound every accepted value in its TypeBox schema (src/http/schemas, or the route):\n${unbounded.join('\n')}`,
    );
  });

  it('a maxLength the validator enforces refuses nothing its pattern, format or enum accepted', () => {
    const enforced = accepted.filter(
      ({ schema }) => typeOf(schema).includes('string') && !(schema[VALIDATED_IN_CODE] ?? []).includes('maxLength'),
    );
    for (const { where, schema } of enforced) {
      const longest = [
        ...(schema.enum ?? []).filter((v: unknown) => typeof v === 'string').map((v: string) => [...v].length),
        schema.format === 'uuid' ? 36 : 0,
        schema.format === 'date' ? 10 : 0,
      ];
      assert.ok(
        Math.max(...longest) <= schema.maxLength,
        `${where}: maxLength ${schema.maxLength} below its enum or format`,
      );
      if (typeof schema.pattern === 'string') {
        const fits = fc.check(
          fc.property(fc.stringMatching(new RegExp(schema.pattern)), (value) => [...value].length <= schema.maxLength),
          { numRuns: 300 },
        );
        assert.ok(
          !fits.failed,
          `${where}: pattern ${schema.pattern} accepts ${JSON.stringify(fits.counterexample)}, longer than maxLength ${schema.maxLength}`,
        );
      }
    }
  });

  // Bodies whose own rules check length and format (after trimming): past the stated maxLength, a
  // value in the field's own form (its example, last character repeated) is refused by those rules,
  // so the bound is never below what they accept.
  it("the maxLength left to the service's rules is never below what those rules accept", () => {
    const banks = { pago_movil: new Set(['0102']), transferencia: new Set(['0102']) };
    const beneficiary = { fullName: 'María Pérez', nationalId: 'V12345678', bankCode: '0102', phone: '04141234567' };
    const sender = {
      nationalId: 'V12345678',
      firstName: 'María',
      lastName: 'Pérez',
      phone: '04141234567',
      email: 'maria.perez@example.com',
    };
    assert.equal(validateBeneficiary(beneficiary, banks).ok, true);
    assert.equal(validateSender(sender).ok, true);
    const blocks: Array<[string, Record<string, any>, (field: string, value: string) => Array<{ field: string }>]> = [
      [
        'beneficiary',
        RegisterBeneficiaryBody,
        (field, value) => {
          const r = validateBeneficiary({ ...beneficiary, [field]: value }, banks);
          return r.ok ? [] : r.errors;
        },
      ],
      [
        'sender',
        SenderBlock,
        (field, value) => {
          const r = validateSender({ ...sender, [field]: value });
          return r.ok ? [] : r.errors;
        },
      ],
    ];
    let checked = 0;
    for (const [block, schema, errorsWith] of blocks) {
      for (const [field, raw] of Object.entries<any>(schema.properties)) {
        if (!(raw[VALIDATED_IN_CODE] ?? []).includes('maxLength')) continue;
        const example = String(raw.example);
        const longer = example + example.at(-1)!.repeat(raw.maxLength + 1 - [...example].length);
        assert.ok(
          errorsWith(field, longer).some((e) => e.field.endsWith(field)),
          `${block}.${field}: ${JSON.stringify(longer)} (${raw.maxLength + 1} characters) is accepted by its rules`,
        );
        checked += 1;
      }
    }
    assert.equal(checked, 12, 'every length-checked field of both blocks');
    // And the request validator leaves those bounds to the rules: what they accept today (surrounding
    // spaces do not count) still passes the schema.
    const padded = `  ${'María'.padEnd(100, 'a')}  `;
    assert.equal(validateBeneficiary({ ...beneficiary, fullName: padded }, banks).ok, true);
    assert.equal(serviceValidator(RegisterBeneficiaryBody, 'body')({ ...beneficiary, fullName: padded }), true);
    const spaced = [...'04141234567'].join(' - '); // 41 characters, valid: separators are ignored
    assert.equal(validateSender({ ...sender, phone: spaced }).ok, true);
    assert.equal(
      serviceValidator(SenderBlock, 'body')({ ...sender, phone: spaced }),
      true,
      'a long phone is left to the sender rules',
    );
  });
});
