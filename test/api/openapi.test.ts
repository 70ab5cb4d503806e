import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { EVENT_TYPES } from '../../src/domain/webhooks.ts';
import { ERROR_CODES } from '../../src/domain/errors.ts';
import { PAYMENT_STATUSES } from '../../src/http/schemas/payouts.ts';
import { client, startTestApp, type TestApp } from '../support/harness.ts';

type Operation = {
  operationId?: string;
  security?: Array<Record<string, unknown>>;
  parameters?: any[];
  requestBody?: any;
  responses: Record<string, any>;
  callbacks?: any;
};
/** An operation that takes the API key (the document's default), not one public or behind its own token. */
const keyedByApiKey = (op: Operation) =>
  op.security === undefined || op.security.some((scheme) => 'ApiKeyAuth' in scheme);

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  /** Every documented operation, as [method, path, operation]. */
  let operations: Array<[string, string, Operation]>;
  /** A response, its `$ref` to components.responses resolved. */
  const response = (r: any) =>
    typeof r?.$ref === 'string' ? doc.components.responses[r.$ref.replace('#/components/responses/', '')] : r;
  const header = (h: any) =>
    typeof h?.$ref === 'string' ? doc.components.headers[h.$ref.replace('#/components/headers/', '')] : h;
  const byId = (id: string) => operations.find(([, , op]) => op.operationId === id)![2];
  const schema = (name: string) => doc.components.schemas[name];

  before(async () => {
    t = await startTestApp();
    doc = (await client(t.app).get('/v1/openapi.json')).body;
    operations = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
      Object.entries<Operation>(item).map(([method, op]) => [method, path, op] as [string, string, Operation]),
    );
  });
  after(async () => {
    await t.close();
  });

  it('is OpenAPI 3.0.3 with the x-api-key security scheme, served without a key', () => {
    assert.equal(doc.openapi, '3.0.3');
    assert.deepEqual(doc.components.securitySchemes.ApiKeyAuth, {
      type: 'apiKey',
      in: 'header',
      name: 'x-api-key',
      description: 'bsk_test_…, bsk_live_… or bsk_platform_…',
    });
    assert.deepEqual(doc.security, [{ ApiKeyAuth: [] }]);
  });

  it('documents every error answer with the envelope, error.code narrowed to the codes of its status', () => {
    assert.deepEqual(schema('ErrorEnvelope').properties.error.properties.code.enum, Object.keys(ERROR_CODES));
    let keyed = 0;
    for (const [method, path, operation] of operations) {
      for (const [status, raw] of Object.entries(operation.responses)) {
        if (Number(status) < 400 || path === '/v1/sandbox/webhooks/failing') continue;
        const answer = response(raw);
        const [envelope, narrowing] = answer.content['application/json'].schema.allOf;
        assert.equal(envelope.$ref, '#/components/schemas/ErrorEnvelope', `${method} ${path} ${status}`);
        const codes: string[] = narrowing.properties.error.properties.code.enum;
        assert.ok(codes.length > 0);
        for (const code of codes) {
          assert.equal(
            ERROR_CODES[code as keyof typeof ERROR_CODES]?.status,
            Number(status),
            `${method} ${path}: ${code} under ${status}`,
          );
          assert.ok(
            answer.description.includes(`\`${code}\``) || path === '/v1/sandbox/webhooks/sink',
            `${method} ${path} ${status} describes ${code}`,
          );
        }
      }
      if (!keyedByApiKey(operation)) continue;
      keyed += 1;
      assert.ok(path.startsWith('/v1/'), `${path} is under /v1`);
      assert.ok(operation.operationId, `${method} ${path} has an operationId`);
      const codesOf = (status: string) =>
        response(operation.responses[status])?.content['application/json'].schema.allOf[1].properties.error.properties
          .code.enum;
      assert.deepEqual(codesOf('401'), ['api_key_missing', 'api_key_invalid'], `${method} ${path}`);
      // A payout batch may also be refused while the tenant has its maximum of batches being recorded.
      assert.deepEqual(
        codesOf('429'),
        operation.operationId === 'createPayoutBatch'
          ? ['rate_limited', 'payout_batches_in_progress']
          : ['rate_limited'],
      );
      assert.deepEqual(codesOf('500'), ['internal_error']);
      assert.ok(codesOf('400').includes('validation_failed'));
    }
    assert.ok(keyed >= 30);
  });

  it('lists per operation the codes it can return', () => {
    const codes = (id: string) =>
      Object.entries(byId(id).responses)
        .filter(([status]) => Number(status) >= 400)
        .flatMap(
          ([, r]) => response(r).content['application/json'].schema.allOf[1].properties.error.properties.code.enum,
        );
    assert.deepEqual(codes('createPayout').sort(), [
      'api_key_invalid',
      'api_key_missing',
      'idempotency_key_missing',
      'idempotency_key_reused',
      'idempotency_request_in_progress',
      'insufficient_tenant_funds',
      'internal_error',
      'invalid_json',
      'limit_exceeded',
      'overloaded',
      'payload_too_large',
      'quote_already_consumed',
      'quote_expired',
      'rate_limited',
      'rate_unavailable',
      'resource_not_found',
      'scope_missing',
      'service_unavailable',
      'unsupported_media_type',
      'validation_failed',
    ]);
    assert.ok(!codes('createQuote').includes('idempotency_key_missing'), 'the key is optional on quotes');
    assert.ok(codes('createQuote').includes('idempotency_key_reused'));
    assert.ok(!codes('getQuote').includes('invalid_json'), 'a GET takes no body');
    assert.ok(!codes('getTenantMe').includes('scope_missing'), 'needs no scope');
    assert.deepEqual(
      codes('healthLive'),
      ['validation_failed', 'rate_limited', 'internal_error', 'service_unavailable'],
      'public routes have a per-address limit',
    );
    assert.deepEqual(codes('metrics'), [
      'validation_failed',
      'metrics_token_invalid',
      'route_not_found',
      'rate_limited',
      'internal_error',
      'service_unavailable',
    ]);
    // The platform routes whose body names a mode refuse a live change made with the first start's platform key.
    const guarded = operations
      .filter(
        ([, path, op]) => path.startsWith('/v1/admin/') && codes(op.operationId!).includes('bootstrap_key_test_only'),
      )
      .map(([, , op]) => op.operationId)
      .sort();
    assert.deepEqual(guarded, [
      'adminCloseTenant',
      'adminCreateRailRoute',
      'adminFundTenant',
      'adminIssueApiKey',
      'adminRotateWebhookSecret',
      'adminSetCustomerSender',
      'adminSetDefaultSender',
      'adminSetWebhookEndpoint',
      'adminUpdateRail',
    ]);
  });

  it('gives every answer a description of its own, and x-request-id', () => {
    for (const [method, path, operation] of operations) {
      for (const [status, raw] of Object.entries(operation.responses)) {
        const answer = response(raw);
        assert.ok(
          answer.description && answer.description !== 'Default Response',
          `${method} ${path} ${status}: ${answer.description}`,
        );
        assert.ok(header(answer.headers?.['x-request-id']), `${method} ${path} ${status} has x-request-id`);
        if (status === '429' || status === '503')
          assert.ok(header(answer.headers['Retry-After']), `${method} ${path} ${status} has Retry-After`);
        // The per-key limit counts a request once its key and scope are known.
        const counted = keyedByApiKey(operation) && status !== '401' && status !== '403';
        for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
          assert.equal(answer.headers[name] !== undefined, counted, `${method} ${path} ${status} ${name}`);
        }
      }
    }
    assert.ok(!JSON.stringify(doc).includes('Default Response'));
  });

  it('declares the Idempotency-Key header where it is accepted, and idempotent-replayed on the answers a key stores', () => {
    const expected: Record<string, boolean> = {
      createPayout: true,
      createPayoutBatch: true,
      adminFundTenant: true,
      createQuote: false,
      registerBeneficiary: false,
    };
    for (const [method, path, operation] of operations) {
      const parameter = operation.parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
      const id = operation.operationId ?? '';
      if (!(id in expected)) {
        assert.equal(parameter, undefined, `${method} ${path} takes no Idempotency-Key`);
        continue;
      }
      assert.equal(parameter.required, expected[id], id);
      assert.deepEqual(
        { ...parameter.schema, example: undefined },
        {
          type: 'string',
          minLength: 1,
          maxLength: 255,
          pattern: '^[\\x20-\\x7e]+$',
          'x-error-message': parameter.schema['x-error-message'],
          example: undefined,
        },
      );
      for (const [status, raw] of Object.entries(operation.responses)) {
        const stored = Number(status) < 300 || status === '409' || status === '422';
        assert.equal(response(raw).headers['idempotent-replayed'] !== undefined, stored, `${id} ${status}`);
      }
    }
  });

  it('request bodies are as strict as the server: closed objects, the quote modes, the sender rule', () => {
    const payout = byId('createPayout').requestBody.content['application/json'].schema;
    assert.equal(payout.additionalProperties, false);
    assert.equal(payout.properties.beneficiary.additionalProperties, false);
    assert.equal(payout.properties.sender.additionalProperties, false);
    assert.deepEqual(payout.properties.sender.required, ['nationalId', 'firstName', 'lastName', 'phone', 'email']);
    assert.deepEqual(payout.properties.sender['x-validated-in-code'], ['required']);
    const quote = byId('createQuote').requestBody.content['application/json'].schema;
    assert.equal(quote.additionalProperties, false);
    assert.deepEqual(
      quote.oneOf.map((mode: any) => [mode.title, mode.required]),
      [
        ['DeliverFixedQuote', ['deliver']],
        ['SpendFixedQuote', ['spend', 'deliver']],
      ],
    );
    assert.deepEqual(quote.oneOf[0].properties.spend.properties, {
      asset: { type: 'string', enum: ['BS'], maxLength: 2, description: 'Bolivares: the only asset delivered' },
    });
    assert.equal(quote.oneOf[0].properties.spend.additionalProperties, false, 'deliver mode: no spend.amount');
  });

  it('enumerates statuses, transitions, actors, reasons and event types', () => {
    const transition = schema('Payment').properties.events.items.properties;
    assert.deepEqual(transition.to_status.enum, [...PAYMENT_STATUSES]);
    // A nullable enum lists null too: under OpenAPI 3.0.3, `nullable` does not widen `enum`.
    assert.deepEqual(transition.from_status.enum, [...PAYMENT_STATUSES, null]);
    assert.equal(transition.from_status.nullable, true);
    assert.equal(schema('PayoutResult').properties.reason.enum.at(-1), null);
    assert.deepEqual(transition.actor.enum, ['api', 'provider_event', 'reaper', 'system']);
    assert.match(transition.reason.description, /open set/i);
    assert.ok(schema('PayoutResult').properties.reason.enum.includes('beneficiary_mismatch'));
    assert.deepEqual(schema('EventRecord').properties.event_type.enum, [...EVENT_TYPES]);
    assert.deepEqual(schema('EventRecord').properties.status.enum, ['pending', 'published', 'dead']);
  });

  it('describes the webhooks: named event bodies and the callbacks of POST /v1/payouts with the signature headers', () => {
    const callbacks = byId('createPayout').callbacks;
    assert.deepEqual(Object.keys(callbacks), ['paymentSettled', 'paymentFailed', 'paymentReversed']);
    const expected: Array<[string, string]> = [
      ['paymentSettled', 'PaymentSettledEvent'],
      ['paymentFailed', 'PaymentFailedEvent'],
      ['paymentReversed', 'PaymentReversedEvent'],
    ];
    for (const [name, component] of expected) {
      const [delivery] = Object.values<any>(callbacks[name]);
      assert.equal(
        delivery.post.requestBody.content['application/json'].schema.$ref,
        `#/components/schemas/${component}`,
      );
      const headers = delivery.post.parameters
        .filter((p: any) => p.in === 'header' && p.required)
        .map((p: any) => p.name);
      for (const signed of [
        'x-signature',
        'x-timestamp',
        'x-event-id',
        'x-event-type',
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
      ]) {
        assert.ok(headers.includes(signed), `${name} ${signed}`);
      }
      assert.ok(delivery.post.responses['2XX']);
      const body = schema(component);
      assert.deepEqual(body.required, ['id', 'eventType', 'attempt', 'payload']);
      assert.ok(schema(body.properties.payload.$ref.replace('#/components/schemas/', '')).properties.metadata);
    }
    assert.deepEqual(schema('WebhookEvent').discriminator.propertyName, 'eventType');
  });

  it('matches the committed openapi.json (generated, never hand-edited)', () => {
    const committed = JSON.parse(readFileSync('openapi.json', 'utf8'));
    assert.deepEqual(committed, doc);
  });
});
