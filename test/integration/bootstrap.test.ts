import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bootstrapIfEmpty, printBootstrap } from '../../src/services/bootstrap.ts';
import { client, createTestDatabase, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts';

describe('first-start bootstrap', () => {
  let database: TestDatabase;
  let t: TestApp;
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
    const result = await bootstrapIfEmpty(database.db, { dataDir, platformApiKey: undefined, publicBaseUrl: undefined, port: 3000 });
    assert.ok(result);
    const file = path.join(dataDir, 'bootstrap.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(saved.apiKey, result.apiKey);
    assert.match(saved.apiKey, /^bsk_test_[0-9A-Za-z]{32,}$/);
    assert.match(saved.platformApiKey, /^bsk_platform_[0-9A-Za-z]{32,}$/);
    assert.equal(saved.curl, `curl -s http://localhost:3000/v1/tenant/me -H 'x-api-key: ${result.apiKey}'`);

    const me = await client(t.app, result.apiKey).get('/v1/tenant/me');
    assert.equal(me.status, 200);
    assert.equal(me.body.mode, 'test');
    assert.equal(me.body.scopes.length, 8);
    const admin = await client(t.app, result.platformApiKey).get(`/v1/admin/tenants/${result.tenantId}`);
    assert.equal(admin.status, 200);

    let printed = '';
    printBootstrap(result, (text) => (printed += text));
    assert.match(printed, new RegExp(result.apiKey));
    assert.match(printed, /curl -s http:\/\/localhost:3000\/v1\/tenant\/me/);
  });

  it('runs only once', async () => {
    const again = await bootstrapIfEmpty(database.db, { dataDir, platformApiKey: undefined, publicBaseUrl: undefined, port: 3000 });
    assert.equal(again, undefined);
  });
});
