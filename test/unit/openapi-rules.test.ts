// The OpenAPI document states rules that code checks (x-validated-in-code) and messages the code
// builds: each is shown here to be the same rule as the code's, so a generated client that compiles
// sends what the server accepts, and what the document says a webhook carries is what is sent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { eventPayload, PAYOUT_FAILURE_REASONS, type OutcomeEventType } from '../../src/domain/payment-messages.ts';
import { planQuote } from '../../src/domain/quote-request.ts';
import { validateSender } from '../../src/domain/sender.ts';
import { deliveryBody, deliveryHeaders } from '../../src/domain/webhooks.ts';
import { ApiError } from '../../src/http/errors.ts';
import { closeObjectSchemas } from '../../src/http/input-hygiene.ts';
import { readIdempotencyKey } from '../../src/http/plugins/idempotency.ts';
import { ASSETS, componentSchemas } from '../../src/http/schemas/common.ts';
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
  return validatorCompiler({ schema, httpPart, method: 'POST', url: '/test' } as never) as unknown as (data: unknown) => boolean;
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
  const SENDER = { nationalId: 'V12345678', nationality: 'VEN', firstName: 'Ana', lastName: 'Rojas', phone: '04141234567', email: 'ana@example.com' };
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
      if (!checked.ok) assert.deepEqual(checked.errors.map((e) => e.field).sort(), missingRequired.map((name) => `sender.${name}`).sort());
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
      const reasons = type === 'payment.failed' ? PAYOUT_FAILURE_REASONS : type === 'payment.reversed' ? ['returned_by_bank', 'a live rail’s own words'] : [undefined];
      for (const reason of reasons) {
        for (const source of [payment, { ...payment, metadata: {} }, { ...payment, method: null }]) {
          if (source.method === null && type !== 'payment.failed') continue; // only a failure can come before an instrument was used
          const body = JSON.parse(deliveryBody({ id: 42n, eventType: type, attempt: 3, payloadText: JSON.stringify(eventPayload(source, type, reason)) }));
          const validate = documentValidator({ $ref: name });
          assert.ok(validate(body), `${type} ${reason}: ${JSON.stringify(validate.errors)}`);
          assert.ok(union(body), `${type} as WebhookEvent`);
          for (const other of Object.values(components).filter((n) => n !== name)) assert.equal(documentValidator({ $ref: other })(body), false, `${type} is not ${other}`);
        }
      }
    }
  });

  it('the callbacks list every header a delivery carries', () => {
    const headers = deliveryHeaders({ eventId: '42', eventType: 'payment.settled', attempt: 1, body: '{}', timestampMs: 1_700_000_000_000, secrets: ['whsec_a', 'whsec_b'] });
    assert.deepEqual(Object.keys(WEBHOOK_DELIVERY_HEADERS).sort(), Object.keys(headers).sort());
  });
});
