// The reconciliation's admin routes: who may call them, what a request queues (one run per tenant and
// mode, never a second while one is open), the list's pages and filters, and a run with its evidence.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RECONCILIATION_CHECKS } from '../../src/domain/reconciliation.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  startTestApp,
  walkPages,
  type Client,
  type TestApp,
} from '../support/harness.ts';

const RUN_KEYS = [
  'id',
  'tenantId',
  'mode',
  'trigger',
  'status',
  'scope',
  'sinceRunId',
  'clean',
  'requestedAt',
  'startedAt',
  'finishedAt',
  'discrepancyCount',
  'checks',
  'examined',
  'error',
];
const UNKNOWN_UUID = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';

describe('admin reconciliation routes', () => {
  let t: TestApp;
  let admin: Client;
  let tenants: Array<{ tenantId: string; api: Client }>;

  before(async () => {
    // An API-only process queues runs and never runs them: the test runs the queue when it wants to.
    t = await startTestApp({ env: { ROLE: 'api', RECONCILE_INTERVAL_S: '0' } });
    admin = client(t.app, t.platformKey);
    tenants = [await createTenant(t, { name: 'Uno' }), await createTenant(t, { name: 'Dos', mode: 'live' })];
  });
  after(async () => {
    await t.close();
  });

  it('answer the platform key only', async () => {
    assertEnvelope(assert, await client(t.app).post('/v1/admin/reconciliation/runs', {}), 401, 'api_key_missing');
    assertEnvelope(assert, await tenants[0]!.api.post('/v1/admin/reconciliation/runs', {}), 403, 'scope_missing');
    assertEnvelope(assert, await tenants[0]!.api.get('/v1/admin/reconciliation/runs'), 403, 'scope_missing');
  });

  it('refuse an unknown tenant, a malformed id, an unknown mode or field', async () => {
    assertEnvelope(
      assert,
      await admin.post('/v1/admin/reconciliation/runs', { tenantId: UNKNOWN_UUID }),
      404,
      'resource_not_found',
    );
    const platform = (await admin.get('/v1/tenant/me')).body.tenantId as string;
    assertEnvelope(
      assert,
      await admin.post('/v1/admin/reconciliation/runs', { tenantId: platform }),
      404,
      'resource_not_found',
    );
    for (const body of [
      { tenantId: 'nope' },
      { mode: 'sandbox' },
      { scope: 'partial' },
      { tenantId: tenants[0]!.tenantId, extra: 1 },
      [],
    ]) {
      assertEnvelope(assert, await admin.post('/v1/admin/reconciliation/runs', body), 400, 'validation_failed');
    }
    // A body is required, `{}` for every tenant: an empty one is refused like on every other route.
    const empty = await t.app.inject({
      method: 'POST',
      url: '/v1/admin/reconciliation/runs',
      headers: { 'x-api-key': t.platformKey, 'content-type': 'application/json' },
      payload: '',
    });
    assert.equal(empty.statusCode, 400, empty.body);
    assertEnvelope(assert, await admin.get(`/v1/admin/reconciliation/runs/${UNKNOWN_UUID}`), 404, 'resource_not_found');
    assertEnvelope(assert, await admin.get('/v1/admin/reconciliation/runs/nope'), 400, 'validation_failed');
    assertEnvelope(assert, await admin.get('/v1/admin/reconciliation/runs?cursor=garbage'), 400, 'validation_failed');
    assertEnvelope(assert, await admin.get('/v1/admin/reconciliation/runs?status=done'), 400, 'validation_failed');
    const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM reconciliation_runs`);
    assert.equal(rows[0]!.n, 0, 'nothing was queued');
  });

  it('queue one run per tenant and mode, answer the open one instead of a second, and run them when a worker drains the queue', async () => {
    const [uno, dos] = [tenants[0]!, tenants[1]!];
    const one = await admin.post('/v1/admin/reconciliation/runs', { tenantId: uno.tenantId, mode: 'test' });
    assert.equal(one.status, 202, one.raw);
    assert.equal(one.body.total, 1);
    const run = one.body.data[0];
    assert.deepEqual(Object.keys(run), RUN_KEYS);
    assert.deepEqual(
      [run.tenantId, run.mode, run.trigger, run.status, run.clean, run.startedAt],
      [uno.tenantId, 'test', 'operator', 'queued', null, null],
    );
    assert.deepEqual(
      run.checks.map((c: { check: string }) => c.check),
      RECONCILIATION_CHECKS,
    );

    const both = await admin.post('/v1/admin/reconciliation/runs', { tenantId: uno.tenantId });
    assert.deepEqual(both.body.data.map((r: { mode: string }) => r.mode).sort(), ['live', 'test']);
    assert.equal(
      both.body.data.find((r: { mode: string }) => r.mode === 'test').id,
      run.id,
      'the run already waiting, not a second one',
    );

    // Without a tenant: every tenant and mode with books (a key or an account) — Uno's test key, Dos's live key.
    const all = await admin.post('/v1/admin/reconciliation/runs', {});
    assert.equal(all.status, 202, all.raw);
    const partitions = all.body.data.map((r: { tenantId: string; mode: string }) => `${r.tenantId}/${r.mode}`).sort();
    assert.deepEqual(partitions, [`${uno.tenantId}/test`, `${dos.tenantId}/live`].sort());

    await t.services.reconciliation.drain();
    const done = await admin.get(`/v1/admin/reconciliation/runs/${run.id}`);
    assert.equal(done.status, 200, done.raw);
    assert.deepEqual(Object.keys(done.body), [...RUN_KEYS, 'discrepancies']);
    assert.deepEqual(
      [done.body.status, done.body.clean, done.body.discrepancyCount, done.body.error, done.body.discrepancies],
      ['completed', true, 0, null, []],
    );
    assert.ok(done.body.checks.every((c: { verdict: string }) => c.verdict === 'pass'));
    assert.ok(Date.parse(done.body.finishedAt) >= Date.parse(done.body.startedAt));

    const again = await admin.post('/v1/admin/reconciliation/runs', { tenantId: uno.tenantId, mode: 'test' });
    assert.notEqual(again.body.data[0].id, run.id, 'a finished run does not hold the next one back');

    // Each request is one audit row of the platform key, with the runs it queued (or found waiting).
    const trail = (await admin.get('/v1/admin/audit?action=reconciliation.start&limit=100')).body.data.reverse();
    const me = (await admin.get('/v1/tenant/me')).body;
    assert.deepEqual(
      trail.map((e: { actorKeyId: string; targetId: string; targetMode: string | null; after: { total: number } }) => [
        e.actorKeyId,
        e.targetId,
        e.targetMode,
        e.after.total,
      ]),
      [
        [me.apiKeyId, uno.tenantId, 'test', 1],
        [me.apiKeyId, uno.tenantId, null, 2],
        [me.apiKeyId, 'all', null, 2],
        [me.apiKeyId, uno.tenantId, 'test', 1],
      ],
    );
    assert.deepEqual(trail[0].after.runs, [run.id]);
  });

  it('list runs newest first, page by page, filtered by tenant, mode and status', async () => {
    const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM reconciliation_runs`);
    const walked = await walkPages(admin, '/v1/admin/reconciliation/runs', 2, RUN_KEYS);
    assert.equal(walked.ids.length, rows[0]!.n);
    assert.equal(new Set(walked.ids).size, walked.ids.length, 'no run twice');
    const listed = (await admin.get('/v1/admin/reconciliation/runs?limit=100')).body.data as Array<{
      requestedAt: string;
      tenantId: string;
      mode: string;
      status: string;
    }>;
    const times = listed.map((r) => Date.parse(r.requestedAt));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
      'newest first',
    );

    const uno = tenants[0]!.tenantId;
    const mine = (await admin.get(`/v1/admin/reconciliation/runs?tenantId=${uno}&mode=test&limit=100`)).body
      .data as typeof listed;
    assert.deepEqual(
      mine.map((r) => `${r.tenantId}/${r.mode}`),
      listed.filter((r) => r.tenantId === uno && r.mode === 'test').map((r) => `${r.tenantId}/${r.mode}`),
    );
    assert.equal(mine.length, 2);
    const queued = (await admin.get('/v1/admin/reconciliation/runs?status=queued&limit=100')).body
      .data as typeof listed;
    assert.deepEqual(
      queued.map((r) => r.status),
      ['queued'],
    );
  });

  it('a full run by default; an incremental one starts from the last completed run, and one still waiting becomes full when a full one is asked for', async () => {
    const uno = tenants[0]!;
    const full = await admin.post('/v1/admin/reconciliation/runs', { tenantId: uno.tenantId, mode: 'test' });
    assert.equal(full.body.data[0].scope, 'full');
    await t.services.reconciliation.drain();
    const last = await admin.get(`/v1/admin/reconciliation/runs/${full.body.data[0].id}`);
    assert.deepEqual([last.body.status, last.body.scope, last.body.sinceRunId], ['completed', 'full', null]);

    const incremental = await admin.post('/v1/admin/reconciliation/runs', {
      tenantId: uno.tenantId,
      mode: 'test',
      scope: 'incremental',
    });
    assert.equal(incremental.status, 202, incremental.raw);
    assert.equal(incremental.body.data[0].scope, 'incremental');
    await t.services.reconciliation.drain();
    const ran = await admin.get(`/v1/admin/reconciliation/runs/${incremental.body.data[0].id}`);
    assert.deepEqual(
      [ran.body.status, ran.body.scope, ran.body.sinceRunId, ran.body.clean],
      ['completed', 'incremental', last.body.id, true],
    );

    const waiting = await admin.post('/v1/admin/reconciliation/runs', {
      tenantId: uno.tenantId,
      mode: 'test',
      scope: 'incremental',
    });
    const upgraded = await admin.post('/v1/admin/reconciliation/runs', { tenantId: uno.tenantId, mode: 'test' });
    assert.deepEqual(
      [upgraded.body.data[0].id, upgraded.body.data[0].scope],
      [waiting.body.data[0].id, 'full'],
      'the same run, now full',
    );
    await t.services.reconciliation.drain();
    const proven = await admin.get(`/v1/admin/reconciliation/runs/${waiting.body.data[0].id}`);
    assert.deepEqual([proven.body.scope, proven.body.sinceRunId], ['full', null]);
  });
});
