// The Idempotency-Key header is declared in the route schemas (so the OpenAPI document and generated
// clients have it), and the answers about it are still those of the Idempotency-Key layer, in the
// same order: key 401 → scope 403 → header missing 400 idempotency_key_missing → header malformed
// 400 validation_failed naming `Idempotency-Key` → the body. The schema's own header validation
// never answers first, nor otherwise. Also: the response headers the document declares are sent.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { IDEMPOTENCY_KEY_FORMAT_MESSAGE } from '../../src/http/plugins/idempotency.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  startTestApp,
  type Client,
  type InjectResult,
  type TestApp,
} from '../support/harness.ts';
import { beneficiary, fundedTenant, idempotencyKey, quote, SENDER } from '../support/payouts.ts';

/** Malformed where the header is optional; on a required route an empty one counts as missing. */
const MALFORMED = ['k'.repeat(256), 'clé-1', 'tab\there', ''];

function assertMalformedKey(response: InjectResult): void {
  assertEnvelope(assert, response, 400, 'validation_failed');
  assert.deepEqual(
    response.body.error.meta.errors,
    [{ field: 'Idempotency-Key', message: IDEMPOTENCY_KEY_FORMAT_MESSAGE }],
    response.raw,
  );
}

describe('the Idempotency-Key header on the real routes', () => {
  let t: TestApp;
  let api: Client;
  let admin: Client;
  let tenantId: string;
  before(async () => {
    t = await startTestApp();
    const tenant = await fundedTenant(t, 1_000_000_000n);
    api = tenant.api;
    tenantId = tenant.tenantId;
    admin = client(t.app, t.platformKey);
  });
  after(async () => {
    await t.close();
  });

  it('POST /v1/payouts: 401, then 403, then idempotency_key_missing, then the key format, then the body', async () => {
    const quoteId = await quote(api, 1_000_000);
    const body = { quoteId, method: 'pago_movil', beneficiary: beneficiary(), sender: SENDER };
    assertEnvelope(assert, await client(t.app).post('/v1/payouts', body), 401, 'api_key_missing');
    const readOnly = await createTenant(t, { scopes: ['payments:read'] });
    assertEnvelope(assert, await readOnly.api.post('/v1/payouts', body), 403, 'scope_missing');
    assertEnvelope(assert, await api.post('/v1/payouts', body), 400, 'idempotency_key_missing');
    assertEnvelope(
      assert,
      await api.post('/v1/payouts', body, { 'idempotency-key': '' }),
      400,
      'idempotency_key_missing',
    );
    assertEnvelope(assert, await api.post('/v1/payouts', { quoteId: 'nope' }), 400, 'idempotency_key_missing');
    for (const bad of MALFORMED.filter((k) => k !== '')) {
      assertMalformedKey(await api.post('/v1/payouts', body, { 'idempotency-key': bad }));
      assertMalformedKey(await api.post('/v1/payouts', { quoteId: 'nope' }, { 'idempotency-key': bad }));
    }
    const invalidBody = await api.post(
      '/v1/payouts',
      { quoteId: 'nope', method: 'pago_movil', beneficiary: beneficiary() },
      { 'idempotency-key': idempotencyKey() },
    );
    assertEnvelope(assert, invalidBody, 400, 'validation_failed');
    assert.deepEqual(
      invalidBody.body.error.meta.errors.map((e: { field: string }) => e.field),
      ['quoteId'],
    );
    // Header names are case-insensitive; the longest key there is works.
    const key = `~ !${'k'.repeat(252)}`;
    const paid = await api.post('/v1/payouts', body, { 'IDEMPOTENCY-KEY': key });
    assert.equal(paid.status, 201, paid.raw);
    const replay = await api.post('/v1/payouts', body, { 'Idempotency-Key': key });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.raw, paid.raw);
  });

  it('admin fundings: required the same way', async () => {
    const funding = { mode: 'test', asset: 'BS', amount: 1_000 };
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/tenants/${tenantId}/fundings`, funding),
      400,
      'idempotency_key_missing',
    );
    assertMalformedKey(
      await admin.post(`/v1/admin/tenants/${tenantId}/fundings`, funding, { 'idempotency-key': 'clé' }),
    );
    assertEnvelope(assert, await api.post(`/v1/admin/tenants/${tenantId}/fundings`, funding), 403, 'scope_missing');
    const funded = await admin.post(`/v1/admin/tenants/${tenantId}/fundings`, funding, {
      'idempotency-key': idempotencyKey(),
    });
    assert.equal(funded.status, 201, funded.raw);
  });

  it('POST /v1/quotes and POST /v1/beneficiaries: optional, and checked when sent', async () => {
    const quoteBody = { deliver: { asset: 'BS', amount: 1_000_000 } };
    const registration = beneficiary('V20111999');
    assert.equal((await api.post('/v1/quotes', quoteBody)).status, 201);
    assert.equal((await api.post('/v1/beneficiaries', registration)).status, 201);
    for (const bad of MALFORMED) {
      assertMalformedKey(await api.post('/v1/quotes', quoteBody, { 'idempotency-key': bad }));
      assertMalformedKey(await api.post('/v1/beneficiaries', registration, { 'idempotency-key': bad }));
    }
    // The quote rules still answer the mode (the schema's oneOf leaves it to them), with the key or without.
    const noAmount = await api.post('/v1/quotes', {}, { 'idempotency-key': idempotencyKey() });
    assertEnvelope(assert, noAmount, 400, 'validation_failed');
    assert.equal(noAmount.body.error.meta.errors[0].field, 'deliver.amount');
    const key = idempotencyKey();
    const first = await api.post('/v1/quotes', quoteBody, { 'idempotency-key': key });
    const again = await api.post('/v1/quotes', quoteBody, { 'idempotency-key': key });
    assert.equal(first.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.id, first.body.id);
  });
});

describe('response headers the document declares', () => {
  let t: TestApp;
  let api: Client;
  before(async () => {
    t = await startTestApp({ env: { RATE_LIMIT_RPS: '3' } });
    ({ api } = await createTenant(t));
  });
  after(async () => {
    await t.close();
  });

  it('x-request-id on every answer; the per-key rate-limit headers once the limit counted the request; Retry-After on 429', async () => {
    const unauthenticated = await client(t.app).get('/v1/tenant/me');
    assert.ok(unauthenticated.headers['x-request-id']);
    assert.equal(unauthenticated.headers['x-ratelimit-limit'], undefined, 'a 401 is answered before the limit counts');
    const ok = await api.get('/v1/tenant/me');
    assert.equal(ok.status, 200);
    assert.ok(ok.headers['x-request-id']);
    assert.equal(ok.headers['x-ratelimit-limit'], '3');
    assert.match(String(ok.headers['x-ratelimit-remaining']), /^[0-9]+$/);
    assert.match(String(ok.headers['x-ratelimit-reset']), /^[0-9]+$/);
    const notFound = await api.get('/v1/quotes/3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f');
    assertEnvelope(assert, notFound, 404, 'resource_not_found');
    assert.ok(notFound.headers['x-ratelimit-limit']);
    let limited = notFound;
    for (let i = 0; i < 5 && limited.status !== 429; i += 1) limited = await api.get('/v1/tenant/me');
    assertEnvelope(assert, limited, 429, 'rate_limited');
    assert.match(String(limited.headers['retry-after']), /^[0-9]+$/);
    assert.equal(limited.headers['x-ratelimit-remaining'], '0');
    assert.equal(limited.body.error.request_id, limited.headers['x-request-id']);
  });
});
