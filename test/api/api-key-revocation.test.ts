// A revoked key fails from the next request on every app that shares the database, not only on the
// one that revoked it. The second app stands for another process: on PostgreSQL it has a pool of its
// own; on PGlite (one engine per database) it shares the handle, which still catches a per-app cache.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.ts';
import type { Database } from '../../src/db/database.ts';
import { PostgresDatabase } from '../../src/db/postgres.ts';
import type { App } from '../../src/http/types.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  createTestDatabase,
  ENGINE,
  startTestApp,
  type TestApp,
  type TestDatabase,
} from '../support/harness.ts';

const ROUNDS = 20;

describe(`API key revocation across app instances (${ENGINE})`, () => {
  let database: TestDatabase;
  let a: TestApp;
  let secondDb: Database | undefined;
  let b: App;

  before(async () => {
    database = await createTestDatabase();
    // Every round fails a key on purpose, all from one address (the injector's): not a key guesser.
    a = await startTestApp({ database, env: { AUTH_FAILURE_LIMIT: '0' } });
    secondDb = database.url ? new PostgresDatabase(database.url, 4) : undefined;
    b = (await buildApp({ config: a.config, db: secondDb ?? database.db })).app;
    await b.ready();
  });
  after(async () => {
    await b?.close();
    await secondDb?.close();
    await a?.close();
    await database?.drop();
  });

  it('a key revoked on one app fails on the other from the next request, every round', async () => {
    const adminOnA = client(a.app, a.platformKey);
    const tenant = await createTenant(a, { name: 'Revocada' });
    for (let round = 0; round < ROUNDS; round += 1) {
      const issued = await adminOnA.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'test' });
      assert.equal(issued.status, 201, issued.raw);
      const onB = client(b, issued.body.key);
      // Used on B just before the revocation, so anything B remembered about it would be fresh.
      const me = await onB.get('/v1/tenant/me');
      assert.equal(me.status, 200, `round ${round}: ${me.raw}`);
      assert.equal(me.body.apiKeyId, issued.body.id);
      const revoked = await adminOnA.delete(`/v1/admin/api-keys/${issued.body.id}`);
      assert.deepEqual(revoked.body, { id: issued.body.id, revoked: true });
      assertEnvelope(assert, await onB.get('/v1/tenant/me'), 401, 'api_key_invalid');
      assertEnvelope(assert, await client(a.app, issued.body.key).get('/v1/tenant/me'), 401, 'api_key_invalid');
    }
  });

  it('requests in flight during a revocation do not carry it over to later requests', async () => {
    const adminOnA = client(a.app, a.platformKey);
    const tenant = await createTenant(a, { name: 'En vuelo' });
    const onB = client(b, tenant.key);
    // A burst keeps B's lookups busy while the revocation commits on A.
    const burst = Array.from({ length: 50 }, () => onB.get('/v1/tenant/me'));
    const revoked = await adminOnA.delete(`/v1/admin/api-keys/${tenant.keyId}`);
    assert.equal(revoked.status, 200);
    const next = onB.get('/v1/tenant/me');
    for (const response of await Promise.all(burst)) assert.ok([200, 401].includes(response.status), response.raw);
    assertEnvelope(assert, await next, 401, 'api_key_invalid');
  });

  it('concurrent requests with different keys each get their own tenant', async () => {
    const tenants = await Promise.all(
      ['Uno', 'Dos', 'Tres'].map((name) => createTenant(a, { name: `Remesas ${name}` })),
    );
    const unknown = 'bsk_test_' + 'Z'.repeat(40);
    const asks = Array.from({ length: 60 }, (_, i) => (i % 4 === 3 ? undefined : tenants[i % 4]));
    const answers = await Promise.all(asks.map((t) => client(b, t?.key ?? unknown).get('/v1/tenant/me')));
    answers.forEach((response, i) => {
      const expected = asks[i];
      if (expected) {
        assert.equal(response.status, 200, response.raw);
        assert.equal(response.body.tenantId, expected.tenantId);
        assert.equal(response.body.apiKeyId, expected.keyId);
      } else {
        assertEnvelope(assert, response, 401, 'api_key_invalid');
      }
    });
  });
});
