// Several rails at once: routing rules, failover only when the first rail provably did not receive
// the transfer, a send of unknown fate staying on its rail, the breaker, the admin API and its audit.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { RAILS_TRIED_MAX } from '../../src/services/payouts.ts';
import { RAIL_SETTINGS_TTL_MS } from '../../src/services/rail-registry.ts';
import { Reaper } from '../../src/workers/reaper.ts';
import { FixtureRail } from '../support/fixture-rail.ts';
import { assertEnvelope, client, startTestApp, type Client, type TestApp } from '../support/harness.ts';
import { metricsHeaders, valueOf } from '../support/metrics.ts';
import { AMPLE_RAIL_TIMEOUT_MS, assertLedgerBalanced, beneficiary, fundedTenant, payout } from '../support/payouts.ts';

/**
 * Short, for the hang case: the fixture rails answer at once (no I/O, no database), so no other call
 * to them can reach it however loaded the machine. The sandbox's calls are the exception (see below).
 */
const RAIL_TIMEOUT_MS = 300;

describe('several rails: routing, failover, breaker', () => {
  let t: TestApp;
  let admin: Client;
  let api: Client;
  let tenantId: string;
  const clock = new ManualClock('2026-03-02T15:00:00Z');
  const alpha = new FixtureRail('alpha', ['test']);
  const beta = new FixtureRail('beta', ['test']);
  /** A connector whose configuration gives no modes: live. */
  const gamma = new FixtureRail('gamma');

  const reaper = (railTimeoutMs = RAIL_TIMEOUT_MS) =>
    new Reaper(t.db, clock, t.services.railRegistry, t.services.outcomes, {
      intervalMs: 1000,
      railTimeoutMs,
      railQueueMaxAgeMs: t.config.railQueueMaxAgeS * 1000,
    });
  const railOf = async (paymentId: string) => {
    const shown = await admin.get(`/v1/admin/tenants/${tenantId}/payments/${paymentId}`);
    assert.equal(shown.status, 200, shown.raw);
    return shown.body.rail as string | null;
  };
  /** Earlier cases' refusals and timeouts may have opened a breaker: each probe closes it (both rails are healthy). */
  const closeBreakers = async () => {
    clock.advance(30_000);
    for (const name of ['alpha', 'beta'])
      assert.equal(await t.services.railRegistry.named(name)!.breaker.probeIfDue(), 'closed');
  };
  const sends = (reference: string) => [...alpha.received, ...beta.received].filter((r) => r === reference).length;

  before(async () => {
    t = await startTestApp({
      clock,
      env: {
        SANDBOX_RAIL_TIMEOUT_MS: String(RAIL_TIMEOUT_MS),
        RAIL_BREAKER_FAILURES: '2',
        RAIL_BREAKER_OPEN_MS: '30000',
      },
      deps: { connectors: [alpha, beta, gamma] },
    });
    admin = client(t.app, t.platformKey);
    ({ tenantId, api } = await fundedTenant(t));
  });
  after(async () => {
    await t?.close();
  });

  it('connectors serve the modes their configuration gives; the list shows them in the default order, the sandbox last', async () => {
    const listed = await admin.get('/v1/admin/rails');
    assert.equal(listed.status, 200, listed.raw);
    assert.deepEqual(
      listed.body.data.map((r: { name: string }) => r.name),
      ['alpha', 'beta', 'gamma', 'sandbox'],
    );
    assert.deepEqual(listed.body.data.find((r: { name: string }) => r.name === 'gamma').modes, ['live']);
    const sandbox = listed.body.data.find((r: { name: string }) => r.name === 'sandbox');
    assert.deepEqual(
      [sandbox.kind, sandbox.modes, sandbox.configured, sandbox.breaker.state, sandbox.health.ok],
      ['sandbox', ['test'], false, 'closed', true],
    );
  });

  it('modes never meet on a rail: the sandbox serves test only and a connector its one mode, whatever an admin or a stored row says', async () => {
    const refused = await admin.patch('/v1/admin/rails/sandbox', { modes: ['live'] });
    assertEnvelope(assert, refused, 400, 'validation_failed');
    assert.match(refused.raw, /test and live payments never share a rail/);
    assertEnvelope(
      assert,
      await admin.patch('/v1/admin/rails/gamma', { modes: ['test', 'live'] }),
      400,
      'validation_failed',
    );
    assertEnvelope(assert, await admin.patch('/v1/admin/rails/alpha', { modes: ['live'] }), 400, 'validation_failed');
    // A row written by hand (or before a rail served one mode) is not in force for the foreign mode.
    const inForce = t.services.railRegistry.settingsOf([
      { name: 'sandbox', modes: ['test', 'live'], instruments: ['pago_movil'], enabled: true },
    ]);
    assert.deepEqual(inForce.find((s) => s.name === 'sandbox')!.modes, ['test']);
    // And below routing, every call naming a payment's mode is checked before the adapter: nothing is sent.
    const asked = alpha.lookups.length;
    await assert.rejects(
      t.services.railRegistry.named('alpha')!.adapter.lookup('00000000-0000-4000-8000-00000000abcd', 'live'),
      { name: 'RailModeMismatch' },
    );
    assert.equal(alpha.lookups.length, asked, 'the live lookup never reached the test rail');
  });

  it('the admin API stores settings and rules with audit rows; an unknown rail is 404', async () => {
    const updated = await admin.patch('/v1/admin/rails/beta', { instruments: ['pago_movil'] });
    assert.equal(updated.status, 200, updated.raw);
    assert.deepEqual([updated.body.instruments, updated.body.configured], [['pago_movil'], true]);
    assertEnvelope(assert, await admin.patch('/v1/admin/rails/ghost', { enabled: false }), 404, 'resource_not_found');
    assertEnvelope(
      assert,
      await admin.post('/v1/admin/rails/routes', { priority: 1, rail: 'ghost' }),
      404,
      'resource_not_found',
    );
    assertEnvelope(
      assert,
      await admin.post('/v1/admin/rails/routes', { priority: 1, rail: 'beta', minAmount: 10, maxAmount: 5 }),
      400,
      'validation_failed',
    );
    const rule = await admin.post('/v1/admin/rails/routes', { priority: 5, rail: 'beta', bankCode: '0134' });
    assert.equal(rule.status, 201, rule.raw);
    assert.equal((await admin.delete(`/v1/admin/rails/routes/${rule.body.id}`)).status, 200);
    assertEnvelope(assert, await admin.delete(`/v1/admin/rails/routes/${rule.body.id}`), 404, 'resource_not_found');
    assert.equal(
      (await admin.patch('/v1/admin/rails/beta', { instruments: ['pago_movil', 'transferencia'] })).status,
      200,
    );

    const audit = await admin.get('/v1/admin/audit?limit=10');
    const actions = audit.body.data.map(
      (row: { action: string; target_type?: string; targetType?: string }) => row.action,
    );
    assert.deepEqual(
      actions.slice(0, 4),
      ['rail.update', 'rail_route.delete', 'rail_route.create', 'rail.update'],
      audit.raw,
    );
    const first = audit.body.data[3];
    assert.deepEqual(
      [first.before.instruments, first.after.instruments],
      [['pago_movil', 'transferencia'], ['pago_movil']],
    );
  });

  it('with no rule a payout goes to the first rail in the default order; the admin view shows it, the tenant view does not', async () => {
    const made = await payout(api, { beneficiary: beneficiary() });
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, 'submitted');
    assert.equal('rail' in made.body, false, 'the public answer is unchanged');
    assert.equal(await railOf(made.body.id), 'alpha');
    assert.equal(sends(made.body.id), 1);
  });

  it('rules route by bank code, amount and instrument, by priority', async () => {
    const rules = [
      await admin.post('/v1/admin/rails/routes', { priority: 10, rail: 'beta', bankCode: '0134' }),
      await admin.post('/v1/admin/rails/routes', { priority: 20, rail: 'beta', minAmount: 5_000_000 }),
      await admin.post('/v1/admin/rails/routes', { priority: 30, rail: 'beta', instrument: 'transferencia' }),
      await admin.post('/v1/admin/rails/routes', { priority: 5, rail: 'alpha', bankCode: '0105' }),
    ];
    for (const rule of rules) assert.equal(rule.status, 201, rule.raw);
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ beneficiary: beneficiary('V20111222', { bankCode: '0134' }) }, 1_000_000, 'beta'],
      [{ beneficiary: beneficiary() }, 6_000_000, 'beta'],
      [{ beneficiary: beneficiary() }, 1_000_000, 'alpha'],
      [
        { method: 'transferencia', beneficiary: beneficiary('V20111222', { accountNumber: '01020123450123456789' }) },
        1_000_000,
        'beta',
      ],
      [{ beneficiary: beneficiary('V20111222', { bankCode: '0105' }) }, 6_000_000, 'alpha'],
    ];
    for (const [body, amount, rail] of cases) {
      const made = await payout(api, body, amount);
      assert.equal(made.status, 201, made.raw);
      assert.equal(await railOf(made.body.id), rail, JSON.stringify(body));
      assert.equal(sends(made.body.id), 1);
    }
    for (const rule of rules) assert.equal((await admin.delete(`/v1/admin/rails/routes/${rule.body.id}`)).status, 200);
  });

  it('a rail that provably did not receive it: the payout goes to the next rail, recorded, sent once there', async () => {
    alpha.behaviour = 'refuse';
    const made = await payout(api, { beneficiary: beneficiary() });
    alpha.behaviour = 'ok';
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, 'submitted');
    assert.equal(await railOf(made.body.id), 'beta');
    assert.deepEqual(
      [alpha.received.includes(made.body.id), beta.received.filter((r) => r === made.body.id).length],
      [false, 1],
    );
    assert.ok(RAILS_TRIED_MAX >= 2);
    const failovers = (await admin.get('/v1/admin/rails')).body.data.find(
      (r: { name: string }) => r.name === 'alpha',
    ).counts;
    assert.equal(failovers.failovers, 1);
    assert.equal(failovers.failures.not_received, 1);
  });

  it('a send whose fate is unknown stays on its rail: unknown, and the reaper asks that rail only', async () => {
    alpha.behaviour = 'hang';
    const made = await payout(api, { beneficiary: beneficiary() });
    alpha.behaviour = 'ok';
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, 'unknown');
    assert.equal(await railOf(made.body.id), 'alpha');
    assert.equal(sends(made.body.id), 1);
    alpha.settle(made.body.id);
    clock.advance(60_000);
    for (let i = 0; i < 3; i += 1) await reaper().runOnce();
    assert.equal((await api.get(`/v1/payments/${made.body.id}`)).body.status, 'settled');
    assert.deepEqual(
      [alpha.lookups.includes(made.body.id), beta.lookups.includes(made.body.id), beta.received.includes(made.body.id)],
      [true, false, false],
    );
    assert.equal(sends(made.body.id), 1, 'never sent again, never sent to another rail');
  });

  it('no rail received it: it stays submitted on the last rail tried, and the reaper sends it there once that rail answers', async () => {
    await closeBreakers();
    // The sandbox would be the third rail tried: out of the way, the two connectors are all there is.
    assert.equal((await admin.patch('/v1/admin/rails/sandbox', { enabled: false })).status, 200);
    alpha.behaviour = 'refuse';
    beta.behaviour = 'refuse';
    const made = await payout(api, { beneficiary: beneficiary() });
    assert.equal((await admin.patch('/v1/admin/rails/sandbox', { enabled: true })).status, 200);
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, 'submitted', 'nothing recorded: no rail has it');
    assert.equal(await railOf(made.body.id), 'beta');
    assert.equal(sends(made.body.id), 0);
    beta.behaviour = 'ok';
    clock.advance(60_000);
    for (let i = 0; i < 3; i += 1) await reaper().runOnce();
    alpha.behaviour = 'ok';
    assert.deepEqual(
      [
        beta.received.filter((r) => r === made.body.id).length,
        alpha.received.includes(made.body.id),
        alpha.lookups.includes(made.body.id),
      ],
      [1, false, false],
    );
    assert.equal(await railOf(made.body.id), 'beta', 'the reaper never moves a payment');
  });

  it('an open breaker routes new payouts to the next rail without trying it; its health probe closes it', async () => {
    await closeBreakers();
    // One success resets the count; then two refusals in a row open alpha's breaker.
    assert.equal(await railOf((await payout(api, { beneficiary: beneficiary() })).body.id), 'alpha');
    alpha.behaviour = 'refuse';
    for (let i = 0; i < 2; i += 1)
      assert.equal(await railOf((await payout(api, { beneficiary: beneficiary() })).body.id), 'beta');
    const breaker = t.services.railRegistry.named('alpha')!.breaker;
    assert.equal(breaker.state, 'open');
    const refusedBefore = (await admin.get('/v1/admin/rails')).body.data.find(
      (r: { name: string }) => r.name === 'alpha',
    ).counts.failures.not_received;
    const skipped = await payout(api, { beneficiary: beneficiary() });
    assert.equal(await railOf(skipped.body.id), 'beta');
    const alphaView = (await admin.get('/v1/admin/rails')).body.data.find((r: { name: string }) => r.name === 'alpha');
    assert.deepEqual(
      [alphaView.breaker.state, alphaView.counts.failures.not_received],
      ['open', refusedBefore],
      'not even tried',
    );

    alpha.behaviour = 'ok';
    alpha.healthy = false;
    clock.advance(30_000);
    assert.equal(await breaker.probeIfDue(), 'open', 'an unhealthy probe opens it again');
    alpha.healthy = true;
    clock.advance(30_000);
    assert.equal(await breaker.probeIfDue(), 'closed');
    assert.equal(await railOf((await payout(api, { beneficiary: beneficiary() })).body.id), 'alpha');
  });

  it('a live payout goes to the connector serving live mode; test payouts never do', async () => {
    const key = await admin.post(`/v1/admin/tenants/${tenantId}/api-keys`, { mode: 'live' });
    assert.equal(key.status, 201, key.raw);
    const funded = await admin.post(
      `/v1/admin/tenants/${tenantId}/fundings`,
      { mode: 'live', asset: 'BS', amount: 100_000_000 },
      { 'idempotency-key': `fund-live-${tenantId}` },
    );
    assert.equal(funded.status, 201, funded.raw);
    const live = client(t.app, key.body.key);
    const made = await payout(live, { beneficiary: beneficiary() });
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, 'submitted');
    assert.equal(await railOf(made.body.id), 'gamma');
    assert.deepEqual(gamma.received, [made.body.id]);
  });

  it("a payment from before payments recorded their rail is asked of its mode's default rail, the sandbox for test", async () => {
    for (const name of ['alpha', 'beta'])
      assert.equal((await admin.patch(`/v1/admin/rails/${name}`, { enabled: false })).status, 200);
    const made = await payout(api, { beneficiary: beneficiary() });
    for (const name of ['alpha', 'beta'])
      assert.equal((await admin.patch(`/v1/admin/rails/${name}`, { enabled: true })).status, 200);
    assert.equal(await railOf(made.body.id), 'sandbox');
    await t.db.query('UPDATE payments SET rail = NULL WHERE id = $1', [made.body.id]);
    clock.advance(60_000);
    // The sandbox answers from the database, slower than the fixture rails on a loaded machine: its
    // reaper waits for it as long as a test that does not test the timeout does.
    for (let i = 0; i < 3; i += 1) await reaper(AMPLE_RAIL_TIMEOUT_MS).runOnce();
    assert.equal((await api.get(`/v1/payments/${made.body.id}`)).body.status, 'settled');
    assert.deepEqual([alpha.lookups.includes(made.body.id), beta.lookups.includes(made.body.id)], [false, false]);
  });

  it("the first start's platform key may not change a rail that serves live payouts", async () => {
    const actor = { keyId: '00000000-0000-4000-8000-000000000001', tenantId: tenantId, requestId: null };
    await assert.rejects(
      t.services.railAdmin.update('alpha', { modes: ['test', 'live'] }, actor, { testModeOnly: true }),
      { code: 'bootstrap_key_test_only' },
    );
    assert.deepEqual(
      (await t.services.railAdmin.update('alpha', { enabled: true }, actor, { testModeOnly: true })).modes,
      ['test'],
      'a test-only rail it may change',
    );
  });

  it('a disabled rail takes no new payouts; the setting reaches routing at once in this process', async () => {
    assert.ok(RAIL_SETTINGS_TTL_MS > 0);
    assert.equal((await admin.patch('/v1/admin/rails/alpha', { enabled: false })).status, 200);
    assert.equal(await railOf((await payout(api, { beneficiary: beneficiary() })).body.id), 'beta');
    assert.equal((await admin.patch('/v1/admin/rails/alpha', { enabled: true })).status, 200);
  });

  it('many concurrent payouts while the first rail refuses: each sent exactly once across both rails, the ledger balanced', async () => {
    alpha.behaviour = 'refuse';
    const made = await Promise.all(Array.from({ length: 40 }, () => payout(api, { beneficiary: beneficiary() })));
    alpha.behaviour = 'ok';
    for (const response of made) assert.equal(response.status, 201, response.raw);
    for (const response of made) {
      assert.equal(sends(response.body.id), 1, `payment ${response.body.id} sent once`);
      const rail = await railOf(response.body.id);
      assert.ok((rail === 'beta' ? beta : alpha).received.includes(response.body.id), 'sent to the rail it records');
    }
    await assertLedgerBalanced(t);
  });

  it('the per-rail series: sends, failures by reason, latency, failovers, breaker state', async () => {
    const scraped = await t.app.inject({ method: 'GET', url: '/metrics', headers: metricsHeaders });
    assert.equal(scraped.statusCode, 200);
    const text = scraped.body;
    const sent = await admin.get('/v1/admin/rails');
    const counts = (name: string) => sent.body.data.find((r: { name: string }) => r.name === name).counts;
    assert.ok(
      valueOf(text, 'bolivar_rail_calls_total', { rail: 'beta', operation: 'submit' })! >= counts('beta').sends,
    );
    assert.equal(
      valueOf(text, 'bolivar_rail_failures_total', { rail: 'alpha', reason: 'not_received' }),
      counts('alpha').failures.not_received,
    );
    assert.equal(valueOf(text, 'bolivar_rail_failures_total', { rail: 'alpha', reason: 'timeout' }), 1);
    assert.equal(
      valueOf(text, 'bolivar_rail_failovers_total', { from: 'alpha', to: 'beta' }),
      counts('alpha').failovers,
    );
    assert.ok(valueOf(text, 'bolivar_rail_call_duration_seconds_count', { rail: 'alpha', operation: 'submit' })! > 0);
    const states = { closed: 0, half_open: 1, open: 2 } as const;
    assert.equal(t.services.railRegistry.named('alpha')!.breaker.state, 'open', 'the refusals above opened it');
    for (const name of ['alpha', 'beta', 'sandbox']) {
      assert.equal(
        valueOf(text, 'bolivar_rail_breaker_state', { rail: name }),
        states[t.services.railRegistry.named(name)!.breaker.state],
        name,
      );
    }
  });
});
