import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import {
  bootstrapIfEmpty,
  printBootstrap,
  syncPlatformKey,
  type BootstrapResult,
} from '../../src/services/bootstrap.ts';
import {
  assertEnvelope,
  client,
  createTestDatabase,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from '../support/harness.ts';

describe('first-start bootstrap', () => {
  let database: TestDatabase;
  let t: TestApp;
  let result: BootstrapResult;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-boot-'));
  before(async () => {
    database = await createTestDatabase();
    t = await startTestApp({ database });
  });
  after(async () => {
    await t.close();
    await database.drop();
  });

  it('creates a sandbox tenant with a test key holding all eight scopes, written 0600', async () => {
    result = (await bootstrapIfEmpty(database.db, {
      dataDir,
      platformApiKey: undefined,
      publicBaseUrl: undefined,
      port: 3000,
    }))!;
    assert.ok(result);
    const file = path.join(dataDir, 'bootstrap.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(saved.apiKey, result.apiKey);
    assert.match(saved.apiKey, /^bsk_test_[0-9A-Za-z]{32,}$/);
    assert.match(saved.platformApiKey, /^bsk_platform_[0-9A-Za-z]{32,}$/);
    assert.equal(saved.platformApiKey, result.platformApiKey);
    assert.equal(saved.curl, `curl -s http://localhost:3000/v1/tenant/me -H 'x-api-key: ${result.apiKey}'`);

    const me = await client(t.app, result.apiKey).get('/v1/tenant/me');
    assert.equal(me.status, 200);
    assert.equal(me.body.mode, 'test');
    assert.equal(me.body.scopes.length, 8);
    const admin = await client(t.app, result.platformApiKey).get(`/v1/admin/tenants/${result.tenantId}`);
    assert.equal(admin.status, 200);
  });

  it('prints the test key and where the platform key is, never the platform key itself', () => {
    let printed = '';
    printBootstrap(result, (text) => (printed += text));
    assert.match(printed, new RegExp(result.apiKey));
    assert.match(printed, /curl -s http:\/\/localhost:3000\/v1\/tenant\/me/);
    assert.ok(!printed.includes(result.platformApiKey!), 'the platform key is not printed');
    assert.doesNotMatch(printed, /bsk_platform_/);
    assert.match(printed, /platform key: +saved in the file below, never printed .*set PLATFORM_API_KEY for live mode/);
    assert.ok(printed.includes(`saved to:      ${path.join(dataDir, 'bootstrap.json')} (mode 0600)`));
  });

  it('the bootstrap platform key administers test mode only: every live-mode change needs PLATFORM_API_KEY', async () => {
    const bootstrapAdmin = client(t.app, result.platformApiKey);
    const tenant = await bootstrapAdmin.post('/v1/admin/tenants', { name: 'Prueba' });
    assert.equal(tenant.status, 201, 'mode-less administration is open to it');
    const id = tenant.body.id as string;
    assert.equal((await bootstrapAdmin.post(`/v1/admin/tenants/${id}/api-keys`, { mode: 'test' })).status, 201);
    assert.equal(
      (
        await bootstrapAdmin.post(
          `/v1/admin/tenants/${id}/fundings`,
          { mode: 'test', asset: 'BS', amount: 1000 },
          { 'idempotency-key': 'f-test' },
        )
      ).status,
      201,
    );

    const live: Array<[string, string, unknown, Record<string, string>?]> = [
      ['POST', `/v1/admin/tenants/${id}/api-keys`, { mode: 'live' }],
      [
        'POST',
        `/v1/admin/tenants/${id}/fundings`,
        { mode: 'live', asset: 'BS', amount: 1000 },
        { 'idempotency-key': 'f-live' },
      ],
      ['POST', `/v1/admin/tenants/${id}/close`, { mode: 'live' }],
      ['PUT', `/v1/admin/tenants/${id}/webhook-endpoint`, { mode: 'live', url: 'https://example.com/hooks' }],
      ['POST', `/v1/admin/tenants/${id}/webhook-endpoint/rotate-secret`, { mode: 'live' }],
    ];
    for (const [method, url, body, headers] of live) {
      const call = method === 'PUT' ? bootstrapAdmin.put : bootstrapAdmin.post;
      const refused = await call(url, body, headers);
      assertEnvelope(assert, refused, 403, 'bootstrap_key_test_only');
      assert.deepEqual(refused.body.error.meta, { mode: 'live' });
      assert.match(refused.body.error.message, /set PLATFORM_API_KEY/);
    }
    const keys = await client(t.app, t.platformKey).get(`/v1/admin/tenants/${id}/api-keys`);
    assert.deepEqual(
      keys.body.data.map((k: { mode: string }) => k.mode),
      ['test'],
      'nothing live was made',
    );

    // The PLATFORM_API_KEY key does all of it, with the same Idempotency-Key the refusal did not claim.
    const envAdmin = client(t.app, t.platformKey);
    assert.equal((await envAdmin.post(`/v1/admin/tenants/${id}/api-keys`, { mode: 'live' })).status, 201);
    assert.equal(
      (
        await envAdmin.post(
          `/v1/admin/tenants/${id}/fundings`,
          { mode: 'live', asset: 'BS', amount: 1000 },
          { 'idempotency-key': 'f-live' },
        )
      ).status,
      201,
    );
  });

  it('once PLATFORM_API_KEY is set, the bootstrap platform key is revoked', async () => {
    const chosen = generateApiKey('platform');
    assert.deepEqual(await syncPlatformKey(database.db, chosen), { revokedBootstrapKeys: 1 });
    assertEnvelope(
      assert,
      await client(t.app, result.platformApiKey).get(`/v1/admin/tenants/${result.tenantId}`),
      401,
      'api_key_invalid',
    );
    assert.equal((await client(t.app, chosen).get(`/v1/admin/tenants/${result.tenantId}`)).status, 200);
    assert.equal((await client(t.app, result.apiKey).get('/v1/tenant/me')).status, 200, 'the sandbox test key stays');
    assert.deepEqual(
      await syncPlatformKey(database.db, chosen),
      { revokedBootstrapKeys: 0 },
      'a later start has nothing to revoke',
    );
  });

  it('runs only once', async () => {
    const again = await bootstrapIfEmpty(database.db, {
      dataDir,
      platformApiKey: undefined,
      publicBaseUrl: undefined,
      port: 3000,
    });
    assert.equal(again, undefined);
  });
});
