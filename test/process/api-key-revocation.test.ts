// Two API processes on one PostgreSQL database: a key revoked through process A fails on process B
// from the very next request. Each round uses the key on B right before revoking it on A, so a cache
// on B (of any length) would answer 200 instead of 401.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINE } from '../support/harness.ts';
import { call, withServices } from '../support/process-scenario.ts';

const ROUNDS = 20;

describe(
  'API key revocation across processes',
  {
    skip:
      ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL): several processes share one database' : false,
  },
  () => {
    it(
      `a key revoked on process A fails on process B from the next request (${ROUNDS} rounds)`,
      { timeout: 110_000 },
      async () => {
        // Every round fails a key on purpose, all from 127.0.0.1: not a key guesser.
        await withServices(
          [{ role: 'api' }, { role: 'api' }],
          { AUTH_FAILURE_LIMIT: '0' },
          async ({ platformKey, cluster }) => {
            const [a, b] = [cluster.baseUrl(0), cluster.baseUrl(1)];
            const tenant = await call(a, platformKey, 'POST', '/v1/admin/tenants', { name: 'Revocada' });
            assert.equal(tenant.status, 201, tenant.text);
            for (let round = 0; round < ROUNDS; round += 1) {
              const issued = await call(a, platformKey, 'POST', `/v1/admin/tenants/${tenant.json.id}/api-keys`, {
                mode: 'test',
              });
              assert.equal(issued.status, 201, issued.text);
              const before = await call(b, issued.json.key, 'GET', '/v1/tenant/me');
              assert.equal(before.status, 200, `round ${round}, before the revocation: ${before.text}`);
              const revoked = await call(a, platformKey, 'DELETE', `/v1/admin/api-keys/${issued.json.id}`);
              assert.deepEqual(revoked.json, { id: issued.json.id, revoked: true }, revoked.text);
              const after = await call(b, issued.json.key, 'GET', '/v1/tenant/me');
              assert.equal(
                after.status,
                401,
                `round ${round}, after the revocation: ${after.text}\n${cluster.report()}`,
              );
              assert.equal(after.json?.error?.code, 'api_key_invalid', after.text);
            }
          },
        );
      },
    );
  },
);
