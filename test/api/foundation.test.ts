import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DOCS_CSP } from '../../src/http/plugins/openapi.ts';
import { assertEnvelope, client, createTenant, platformActor, startTestApp, type TestApp } from '../support/harness.ts';
import { metricsHeaders } from '../support/metrics.ts';

const UNKNOWN_UUID = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

describe('foundation: auth, errors, admin tenants and keys', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(async () => {
    await t.close();
  });

  describe('operations', () => {
    it('serves liveness and readiness without a key', async () => {
      const anon = client(t.app);
      assert.deepEqual((await anon.get('/health/live')).body, { status: 'ok' });
      const ready = await anon.get('/health/ready');
      assert.equal(ready.status, 200);
      assert.equal(ready.body.status, 'ok');
    });

    it('exposes Prometheus request counts and latency histograms per route', async () => {
      const anon = client(t.app);
      await anon.get('/health/live');
      const metrics = await anon.get('/metrics', metricsHeaders);
      assert.equal(metrics.status, 200);
      assert.match(String(metrics.headers['content-type']), /text\/plain/);
      assert.match(metrics.raw, /http_requests_total\{method="GET",route="\/health\/live",status_code="200"\} \d+/);
      assert.match(metrics.raw, /http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/health\/live"/);
    });

    it('serves the interactive reference at /docs without a key', async () => {
      const docs = await t.app.inject({ method: 'GET', url: '/docs/' });
      assert.equal(docs.statusCode, 200);
      assert.match(docs.body, /<html/i);
    });

    it('/docs may not be framed and runs only its own files; its "Try it out" calls the serving origin', async () => {
      for (const url of [
        '/docs',
        '/docs/',
        '/docs/json',
        '/docs/static/swagger-ui-bundle.js',
        '/docs/static/swagger-initializer.js',
      ]) {
        const answer = await t.app.inject({ method: 'GET', url });
        assert.equal(answer.statusCode, 200, url);
        assert.equal(answer.headers['content-security-policy'], DOCS_CSP, url);
        assert.equal(answer.headers['x-frame-options'], 'DENY', url);
        assert.equal(answer.headers['x-content-type-options'], 'nosniff', url);
      }
      assert.match(DOCS_CSP, /frame-ancestors 'none'/);
      assert.doesNotMatch(DOCS_CSP, /unsafe-inline|unsafe-eval|\*/);
      // The document's one server is relative: the origin that serves it, the one connect-src allows.
      const served = JSON.parse((await t.app.inject({ method: 'GET', url: '/docs/json' })).body);
      assert.deepEqual(
        served.servers.map((s: { url: string }) => s.url),
        ['/'],
      );
    });
  });

  describe('authentication', () => {
    it('401 api_key_missing without x-api-key', async () => {
      assertEnvelope(assert, await client(t.app).get('/v1/tenant/me'), 401, 'api_key_missing');
    });

    it('401 api_key_invalid for a malformed or unknown key', async () => {
      assertEnvelope(assert, await client(t.app, 'nope').get('/v1/tenant/me'), 401, 'api_key_invalid');
      const unknown = 'bsk_test_' + 'a'.repeat(40);
      const response = await client(t.app, unknown).get('/v1/tenant/me');
      assertEnvelope(assert, response, 401, 'api_key_invalid');
      assert.equal(response.body.error.type, 'authentication_error');
    });

    it('GET /v1/tenant/me returns the tenant context exactly', async () => {
      const tenant = await createTenant(t, { name: 'Remesas Uno', mode: 'live', scopes: ['payments:read'] });
      const me = await tenant.api.get('/v1/tenant/me');
      assert.equal(me.status, 200);
      assert.deepEqual(me.body, {
        tenantId: tenant.tenantId,
        name: 'Remesas Uno',
        mode: 'live',
        scopes: ['payments:read'],
        apiKeyId: tenant.keyId,
        isPlatform: false,
      });
    });

    it('a platform key is a platform context', async () => {
      const me = await client(t.app, t.platformKey).get('/v1/tenant/me');
      assert.equal(me.status, 200);
      assert.equal(me.body.isPlatform, true);
      assert.deepEqual(me.body.scopes, ['platform:admin']);
    });

    it('403 scope_missing on admin routes for a customer key, with meta.required', async () => {
      const tenant = await createTenant(t);
      const response = await tenant.api.post('/v1/admin/tenants', { name: 'x' });
      assertEnvelope(assert, response, 403, 'scope_missing');
      assert.deepEqual(response.body.error.meta, { required: ['platform:admin'] });
    });

    it('every admin route demands platform:admin', async () => {
      const tenant = await createTenant(t);
      const calls = [
        tenant.api.post('/v1/admin/tenants', { name: 'x' }),
        tenant.api.get(`/v1/admin/tenants/${tenant.tenantId}`),
        tenant.api.patch(`/v1/admin/tenants/${tenant.tenantId}`, { name: 'y' }),
        tenant.api.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'test' }),
        tenant.api.get(`/v1/admin/tenants/${tenant.tenantId}/api-keys`),
        tenant.api.delete(`/v1/admin/api-keys/${tenant.keyId}`),
      ];
      for (const response of await Promise.all(calls)) assertEnvelope(assert, response, 403, 'scope_missing');
    });

    it('checks the key before validating the body', async () => {
      const response = await client(t.app).post('/v1/admin/tenants', { name: 42 });
      assertEnvelope(assert, response, 401, 'api_key_missing');
      const bad = await t.app.inject({
        method: 'POST',
        url: '/v1/admin/tenants',
        headers: { 'content-type': 'application/json' },
        payload: '{oops',
      });
      assert.equal(bad.statusCode, 401);
    });

    it('a revoked key fails from the next request', async () => {
      const tenant = await createTenant(t);
      assert.equal((await tenant.api.get('/v1/tenant/me')).status, 200);
      const admin = client(t.app, t.platformKey);
      const revoked = await admin.delete(`/v1/admin/api-keys/${tenant.keyId}`);
      assert.equal(revoked.status, 200);
      assert.deepEqual(revoked.body, { id: tenant.keyId, revoked: true });
      assertEnvelope(assert, await tenant.api.get('/v1/tenant/me'), 401, 'api_key_invalid');
      assertEnvelope(assert, await admin.delete(`/v1/admin/api-keys/${UNKNOWN_UUID}`), 404, 'resource_not_found');
    });
  });

  describe('admin: tenants and keys', () => {
    it('creates a tenant with the default fee, spread and funding mode', async () => {
      const admin = client(t.app, t.platformKey);
      const created = await admin.post('/v1/admin/tenants', { name: 'Defaults' });
      assert.equal(created.status, 201);
      assert.match(created.body.id, /^[0-9a-f-]{36}$/);
      assert.equal(created.body.name, 'Defaults');
      assert.equal(created.body.creditEnabled, false);
      assert.equal(created.body.creditLimit, null);
      assert.equal(created.body.feeBps, 100);
      assert.equal(created.body.feeFixed, '0');
      assert.equal(created.body.spreadBps, 50);
      const read = await admin.get(`/v1/admin/tenants/${created.body.id}`);
      assert.deepEqual(read.body, created.body);
    });

    it('creates and updates credit, fee and spread settings', async () => {
      const admin = client(t.app, t.platformKey);
      const created = await admin.post('/v1/admin/tenants', {
        name: 'Credito',
        creditEnabled: true,
        creditLimit: 100000000,
        feeBps: 75,
        feeFixed: 500,
        spreadBps: 0,
      });
      assert.equal(created.status, 201);
      assert.equal(created.body.creditLimit, '100000000');
      assert.equal(created.body.feeFixed, '500');
      const patched = await admin.patch(`/v1/admin/tenants/${created.body.id}`, { creditLimit: null, feeBps: 120 });
      assert.equal(patched.status, 200);
      assert.equal(patched.body.creditLimit, null);
      assert.equal(patched.body.feeBps, 120);
      assert.equal(patched.body.spreadBps, 0);
      assert.equal(patched.body.creditEnabled, true);
    });

    it('rejects invalid tenant fields with validation_failed naming each field', async () => {
      const admin = client(t.app, t.platformKey);
      const response = await admin.post('/v1/admin/tenants', { feeBps: 20000, spreadBps: -1, feeFixed: 1.5 });
      assertEnvelope(assert, response, 400, 'validation_failed');
      const fields = response.body.error.meta.errors.map((e: { field: string }) => e.field).sort();
      assert.deepEqual(fields, ['feeBps', 'feeFixed', 'name', 'spreadBps']);
      for (const e of response.body.error.meta.errors) assert.equal(typeof e.message, 'string');
      assertEnvelope(assert, await admin.patch(`/v1/admin/tenants/${UNKNOWN_UUID}`, {}), 400, 'validation_failed');
      assertEnvelope(
        assert,
        await admin.post('/v1/admin/tenants', { name: 'x', feeBps: '100' }),
        400,
        'validation_failed',
      );
    });

    it('404 resource_not_found for an unknown tenant; 400 for a malformed id', async () => {
      const admin = client(t.app, t.platformKey);
      assertEnvelope(assert, await admin.get(`/v1/admin/tenants/${UNKNOWN_UUID}`), 404, 'resource_not_found');
      const malformed = await admin.get('/v1/admin/tenants/not-a-uuid');
      assertEnvelope(assert, malformed, 400, 'validation_failed');
      assert.equal(malformed.body.error.meta.errors[0].field, 'id');
      assertEnvelope(
        assert,
        await admin.post(`/v1/admin/tenants/${UNKNOWN_UUID}/api-keys`, { mode: 'test' }),
        404,
        'resource_not_found',
      );
    });

    it('issues keys in the documented format, shown once, with all eight scopes by default', async () => {
      const admin = client(t.app, t.platformKey);
      const tenant = await admin.post('/v1/admin/tenants', { name: 'Keys' });
      const test = await admin.post(`/v1/admin/tenants/${tenant.body.id}/api-keys`, { mode: 'test' });
      assert.equal(test.status, 201);
      assert.match(test.body.key, /^bsk_test_[0-9A-Za-z]{32,}$/);
      assert.equal(test.body.mode, 'test');
      assert.deepEqual(test.body.scopes, [
        'quotes:write',
        'beneficiaries:read',
        'beneficiaries:write',
        'payments:read',
        'payments:write',
        'treasury:read',
        'events:read',
        'events:write',
      ]);
      const live = await admin.post(`/v1/admin/tenants/${tenant.body.id}/api-keys`, {
        mode: 'live',
        scopes: ['events:read'],
      });
      assert.match(live.body.key, /^bsk_live_[0-9A-Za-z]{32,}$/);
      const list = await admin.get(`/v1/admin/tenants/${tenant.body.id}/api-keys`);
      assert.equal(list.body.data.length, 2);
      for (const key of list.body.data) {
        assert.equal(key.key, undefined, 'the key string is never shown again');
        assert.equal(key.last4.length, 4);
      }
      assert.equal(list.body.data[0].last4, test.body.key.slice(-4));
      assertEnvelope(
        assert,
        await admin.post(`/v1/admin/tenants/${tenant.body.id}/api-keys`, { mode: 'live', scopes: ['root'] }),
        400,
        'validation_failed',
      );
      assertEnvelope(
        assert,
        await admin.post(`/v1/admin/tenants/${tenant.body.id}/api-keys`, { mode: 'prod' }),
        400,
        'validation_failed',
      );
      assertEnvelope(
        assert,
        await admin.post(`/v1/admin/tenants/${tenant.body.id}/api-keys`, { mode: 'test', scopes: [] }),
        400,
        'validation_failed',
      );
    });

    it('the platform tenant is not an addressable customer tenant', async () => {
      const me = await client(t.app, t.platformKey).get('/v1/tenant/me');
      assertEnvelope(
        assert,
        await client(t.app, t.platformKey).get(`/v1/admin/tenants/${me.body.tenantId}`),
        404,
        'resource_not_found',
      );
    });
  });

  describe('errors from the framework carry the envelope', () => {
    it('malformed JSON → 400 invalid_json', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/admin/tenants',
        headers: { 'x-api-key': t.platformKey, 'content-type': 'application/json' },
        payload: '{"name": ',
      });
      assert.equal(response.statusCode, 400);
      assert.equal(response.json().error.code, 'invalid_json');
      assert.equal(response.json().error.type, 'invalid_request_error');
    });

    it('body over 64 KiB → 413 payload_too_large', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/admin/tenants',
        headers: { 'x-api-key': t.platformKey, 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'x'.repeat(70 * 1024) }),
      });
      assert.equal(response.statusCode, 413);
      assert.equal(response.json().error.code, 'payload_too_large');
    });

    it('wrong content type → 415 unsupported_media_type', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/admin/tenants',
        headers: { 'x-api-key': t.platformKey, 'content-type': 'text/plain' },
        payload: 'name=x',
      });
      assert.equal(response.statusCode, 415);
      assert.equal(response.json().error.code, 'unsupported_media_type');
    });

    it('a JSON body that is not an object → validation_failed', async () => {
      const response = await client(t.app, t.platformKey).post('/v1/admin/tenants', [1, 2]);
      assertEnvelope(assert, response, 400, 'validation_failed');
      const missing = await t.app.inject({
        method: 'POST',
        url: '/v1/admin/tenants',
        headers: { 'x-api-key': t.platformKey },
      });
      assert.equal(missing.statusCode, 400);
      assert.equal(missing.json().error.code, 'validation_failed');
    });

    it('unknown route → 404 route_not_found, with or without a key', async () => {
      assertEnvelope(assert, await client(t.app).get('/v1/nothing-here'), 404, 'route_not_found');
      assertEnvelope(assert, await client(t.app, t.platformKey).post('/v1/tenant/me', {}), 404, 'route_not_found');
    });

    it('x-request-id is echoed when sent and generated otherwise, on success and on error', async () => {
      const echoed = await client(t.app).get('/health/live', { 'x-request-id': 'trace-123' });
      assert.equal(echoed.headers['x-request-id'], 'trace-123');
      const generated = await client(t.app).get('/v1/tenant/me');
      assert.match(String(generated.headers['x-request-id']), /^req_[0-9a-f]{32}$/);
      assert.equal(generated.body.error.request_id, generated.headers['x-request-id']);
      const hostile = await client(t.app).get('/health/live', { 'x-request-id': 'bad id with spaces\u0001' });
      assert.match(String(hostile.headers['x-request-id']), /^req_/);
    });

    it('error bodies never contain stack traces', async () => {
      const response = await client(t.app, t.platformKey).post('/v1/admin/tenants', { name: 7 });
      assert.doesNotMatch(response.raw, /at .*\.ts:\d+|node_modules|stack/);
    });
  });
});

describe('rate limiting per API key', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: { RATE_LIMIT_RPS: '3' } });
  });
  after(async () => {
    await t.close();
  });

  it('429 rate_limited with Retry-After past RATE_LIMIT_RPS, counted per key', async () => {
    // Keys made directly by the service: the admin key has a budget of its own to spend.
    const actor = await platformActor(t);
    const tenant = await t.services.tenants.create({ name: 'Limited' }, actor);
    const a = { api: client(t.app, (await t.services.tenants.issueKey(tenant.id, 'test', actor)).key) };
    const b = { api: client(t.app, (await t.services.tenants.issueKey(tenant.id, 'test', actor)).key) };
    const results = [];
    for (let i = 0; i < 5; i += 1) results.push(await a.api.get('/v1/tenant/me'));
    const limited = results.filter((r) => r.status === 429);
    assert.ok(limited.length >= 1, 'at least one request is limited');
    const first = limited[0]!;
    assertEnvelope(assert, first, 429, 'rate_limited');
    assert.equal(first.body.error.type, 'rate_limit_error');
    assert.ok(Number(first.headers['retry-after']) >= 1);
    assert.equal((await b.api.get('/v1/tenant/me')).status, 200, 'another key has its own budget');
    assert.equal((await client(t.app).get('/health/live')).status, 200, 'health is never limited');
  });
});
