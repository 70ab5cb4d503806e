import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { assertEnvelope, client, startTestApp, type Client, type TestApp } from '../support/harness.ts';
import {
  advanceAndReap,
  AMPLE_RAIL_TIMEOUT_MS,
  assertLedgerBalanced,
  beneficiary,
  fundedTenant,
  payout,
  quote,
} from '../support/payouts.ts';

const ENV = {
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  SANDBOX_SETTLE_DELAY_MS: '3000',
  SANDBOX_REVERSE_DELAY_MS: '10000',
};
// 2026-11-21 23:59 in Caracas (UTC−4) is 2026-11-22 03:59 UTC.
const BEFORE_MIDNIGHT = '2026-11-22T03:59:00Z';

describe('configured limit rules', () => {
  let t: TestApp;
  let clock: ManualClock;
  let admin: Client;
  before(async () => {
    clock = new ManualClock('2026-11-21T15:00:00Z');
    t = await startTestApp({ clock, env: ENV });
    admin = client(t.app, t.platformKey);
    // Rates are only fresh for 24 h of the (manual) clock; keep them fresh as it moves.
  });
  afterEach(async () => {
    await assertLedgerBalanced(t);
  });
  after(async () => {
    await t.close();
  });

  async function rule(body: Record<string, unknown>) {
    const response = await admin.post('/v1/admin/limit-rules', {
      per_tx_max: 100_000_000,
      daily_max: 100_000_000,
      ...body,
    });
    assert.equal(response.status, 201, response.raw);
    return response.body;
  }

  it('concurrent rules for one target: every request answers 201 and exactly one rule stays live', async () => {
    const tenant = await fundedTenant(t);
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        admin.post('/v1/admin/limit-rules', {
          scope: 'tenant',
          tenantId: tenant.tenantId,
          method: 'pago_movil',
          per_tx_max: 1000 + i,
          daily_max: 100_000,
        }),
      ),
    );
    for (const response of responses) assert.equal(response.status, 201, response.raw);
    const live = (await admin.get(`/v1/admin/limit-rules?tenantId=${tenant.tenantId}`)).body.data.filter(
      (r: { tenantId: string | null; method: string }) => r.tenantId === tenant.tenantId && r.method === 'pago_movil',
    );
    assert.equal(live.length, 1, JSON.stringify(live));
  });

  it('admin API: create, list, delete; validation of scope fields', async () => {
    const tenant = await fundedTenant(t);
    const created = await rule({
      scope: 'tenant',
      tenantId: tenant.tenantId,
      method: '*',
      per_tx_max: 500000,
      daily_max: 2000000,
      monthly_max: 9000000,
      daily_count_max: 4,
    });
    assert.deepEqual(
      { ...created, id: undefined, created_at: undefined },
      {
        id: undefined,
        created_at: undefined,
        scope: 'tenant',
        tenantId: tenant.tenantId,
        subjectId: null,
        method: '*',
        per_tx_max: '500000',
        daily_max: '2000000',
        monthly_max: '9000000',
        daily_count_max: '4',
      },
    );
    const list = await admin.get(`/v1/admin/limit-rules?tenantId=${tenant.tenantId}`);
    assert.ok(list.body.data.some((r: { id: string }) => r.id === created.id));
    assertEnvelope(
      assert,
      await admin.post('/v1/admin/limit-rules', { scope: 'tenant', method: '*', per_tx_max: 1, daily_max: 1 }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await admin.post('/v1/admin/limit-rules', {
        scope: 'customer',
        tenantId: tenant.tenantId,
        method: '*',
        per_tx_max: 1,
        daily_max: 1,
      }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await admin.post('/v1/admin/limit-rules', {
        scope: 'platform',
        tenantId: tenant.tenantId,
        method: '*',
        per_tx_max: 1,
        daily_max: 1,
      }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await admin.post('/v1/admin/limit-rules', {
        scope: 'tenant',
        tenantId: tenant.tenantId,
        method: 'cash',
        per_tx_max: 1,
        daily_max: 1,
      }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await admin.post('/v1/admin/limit-rules', {
        scope: 'tenant',
        tenantId: tenant.tenantId,
        method: '*',
        per_tx_max: 0,
        daily_max: 1,
      }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await tenant.api.post('/v1/admin/limit-rules', { scope: 'platform', method: '*', per_tx_max: 1, daily_max: 1 }),
      403,
      'scope_missing',
    );
    const deleted = await admin.delete(`/v1/admin/limit-rules/${created.id}`);
    assert.deepEqual(deleted.body, { id: created.id, deleted: true });
    assertEnvelope(assert, await admin.delete(`/v1/admin/limit-rules/${created.id}`), 404, 'resource_not_found');
  });

  it('instrument caps always apply: 422 limit_exceeded naming rule, cap and scope', async () => {
    const tenant = await fundedTenant(t);
    const response = await payout(tenant.api, { beneficiary: beneficiary('V40000001') }, 10_000_001);
    assertEnvelope(assert, response, 422, 'limit_exceeded');
    assert.deepEqual(response.body.error.meta, {
      rule: 'per_tx_max',
      cap: '10000000',
      scope: 'instrument',
      method: 'pago_movil',
      attempted: '10000001',
      exceeded_by: '1',
    });
    const transfer = await payout(
      tenant.api,
      { beneficiary: beneficiary('V40000002', { accountNumber: '01020000000000000002' }), method: 'transferencia' },
      10_000_001,
    );
    assert.equal(transfer.status, 201, 'transferencia allows up to 50,000,000');
    const over = await payout(
      tenant.api,
      { beneficiary: beneficiary('V40000002', { accountNumber: '01020000000000000002' }), method: 'transferencia' },
      50_000_001,
    );
    assert.equal(over.body.error.meta.cap, '50000000');
  });

  it('each of the four rules gives 422 limit_exceeded with its name', async () => {
    const tenant = await fundedTenant(t);
    await rule({
      scope: 'tenant',
      tenantId: tenant.tenantId,
      method: '*',
      per_tx_max: 2_000_000,
      daily_max: 3_000_000,
      monthly_max: 4_000_000,
      daily_count_max: 2,
    });
    const perTx = await payout(tenant.api, { beneficiary: beneficiary('V40000010') }, 2_000_001);
    assert.equal(perTx.body.error.meta.rule, 'per_tx_max');
    assert.equal(perTx.body.error.meta.scope, 'tenant');
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V40000011') }, 2_000_000)).status, 201);
    const daily = await payout(tenant.api, { beneficiary: beneficiary('V40000012') }, 1_500_000);
    assert.equal(daily.body.error.meta.rule, 'daily_max');
    assert.equal(daily.body.error.meta.exceeded_by, '500000');
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V40000013') }, 500_000)).status, 201);
    const count = await payout(tenant.api, { beneficiary: beneficiary('V40000014') }, 100_000);
    assert.equal(count.body.error.meta.rule, 'daily_count_max');
    // Next day: the day resets, the month does not.
    clock.advance(24 * 3600 * 1000);
    await admin.put('/v1/admin/rates/USD', { market: '925.00' });
    const monthly = await payout(tenant.api, { beneficiary: beneficiary('V40000015') }, 1_600_000);
    assert.equal(monthly.body.error.meta.rule, 'monthly_max', monthly.raw);
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V40000016') }, 1_500_000)).status, 201);
  });

  it('a more specific rule replaces a stricter general one (no intersection)', async () => {
    const tenant = await fundedTenant(t);
    await rule({ scope: 'tenant', tenantId: tenant.tenantId, method: '*', per_tx_max: 200_000, daily_max: 200_000 });
    const customerId = '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b3c5';
    await rule({
      scope: 'customer',
      tenantId: tenant.tenantId,
      subjectId: customerId,
      method: 'pago_movil',
      per_tx_max: 3_000_000,
      daily_max: 3_000_000,
    });
    assert.equal(
      (await payout(tenant.api, { beneficiary: beneficiary('V40000020'), customerId }, 2_000_000)).status,
      201,
    );
    const noCustomer = await payout(tenant.api, { beneficiary: beneficiary('V40000021') }, 2_000_000);
    assert.equal(noCustomer.body.error.meta.scope, 'tenant');
  });

  it('days are Caracas days: 23:59 counts on the day, 00:01 starts a new one', async () => {
    clock.set(BEFORE_MIDNIGHT);
    await admin.put('/v1/admin/rates/USD', { market: '925.00' });
    const tenant = await fundedTenant(t);
    await rule({
      scope: 'tenant',
      tenantId: tenant.tenantId,
      method: '*',
      per_tx_max: 1_000_000,
      daily_max: 1_000_000,
      daily_count_max: 1,
    });
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V40000030') }, 1_000_000)).status, 201);
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V40000031') }, 100_000)).status, 422);
    const usageBefore = await tenant.api.get('/v1/limits/usage');
    assert.equal(usageBefore.body.usage.day_count, '1');
    clock.advance(2 * 60 * 1000); // 00:01 Caracas, next day
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V40000032') }, 1_000_000)).status, 201);
    const usage = await tenant.api.get('/v1/limits/usage');
    assert.deepEqual(usage.body.usage, { day_amount: '1000000', day_count: '1', month_amount: '2000000' });
  });

  it('months are Caracas months', async () => {
    clock.set('2026-12-01T03:59:00Z'); // 2026-11-30 23:59 Caracas
    await admin.put('/v1/admin/rates/USD', { market: '925.00' });
    const tenant = await fundedTenant(t);
    await rule({
      scope: 'tenant',
      tenantId: tenant.tenantId,
      method: '*',
      per_tx_max: 1_000_000,
      daily_max: 1_000_000,
      monthly_max: 1_000_000,
    });
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V40000040') }, 1_000_000)).status, 201);
    clock.advance(2 * 60 * 1000); // 2026-12-01 00:01 Caracas
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V40000041') }, 1_000_000)).status, 201);
    const usage = await tenant.api.get('/v1/limits/usage');
    assert.equal(usage.body.usage.month_amount, '1000000');
  });

  it('30 concurrent payouts against daily_count_max 10 give exactly 10', async () => {
    await admin.put('/v1/admin/rates/USD', { market: '925.00' });
    const tenant = await fundedTenant(t);
    await rule({
      scope: 'tenant',
      tenantId: tenant.tenantId,
      method: '*',
      per_tx_max: 10_000_000,
      daily_max: 1_000_000_000,
      daily_count_max: 10,
    });
    const quotes = await Promise.all(Array.from({ length: 30 }, () => quote(tenant.api, 100_000)));
    const responses = await Promise.all(
      quotes.map((quoteId, i) =>
        payout(tenant.api, { quoteId, beneficiary: beneficiary(`V4100${String(i).padStart(4, '0')}`) }),
      ),
    );
    assert.equal(responses.filter((r) => r.status === 201).length, 10);
    for (const r of responses.filter((r) => r.status !== 201)) assert.equal(r.body.error.meta.rule, 'daily_count_max');
  });

  it('concurrent amounts never jointly pass daily_max', async () => {
    const tenant = await fundedTenant(t);
    await rule({
      scope: 'tenant',
      tenantId: tenant.tenantId,
      method: 'pago_movil',
      per_tx_max: 10_000_000,
      daily_max: 1_000_000,
    });
    const quotes = await Promise.all(Array.from({ length: 12 }, () => quote(tenant.api, 300_000)));
    const responses = await Promise.all(
      quotes.map((quoteId, i) =>
        payout(tenant.api, { quoteId, beneficiary: beneficiary(`V4200${String(i).padStart(4, '0')}`) }),
      ),
    );
    assert.equal(responses.filter((r) => r.status === 201).length, 3);
    const usage = await tenant.api.get('/v1/limits/usage');
    assert.equal(usage.body.usage.day_amount, '900000');
  });

  it('failed and reversed payouts stop counting; usage after mixed outcomes', async () => {
    await admin.put('/v1/admin/rates/USD', { market: '925.00' });
    const tenant = await fundedTenant(t);
    await rule({
      scope: 'tenant',
      tenantId: tenant.tenantId,
      method: '*',
      per_tx_max: 5_000_000,
      daily_max: 5_000_000,
      daily_count_max: 3,
    });
    const settled = await payout(tenant.api, { beneficiary: beneficiary('V99990001') }, 1_000_000);
    assert.equal(settled.body.status, 'settled');
    const failed = await payout(tenant.api, { beneficiary: beneficiary('V99990004') }, 1_000_000);
    assert.equal(failed.body.status, 'failed');
    const reversedLater = await payout(tenant.api, { beneficiary: beneficiary('V99990007') }, 1_000_000);
    const failsLater = await payout(tenant.api, { beneficiary: beneficiary('V99990006') }, 1_000_000);
    assert.equal(reversedLater.status, 201);
    assert.equal(failsLater.status, 201);
    let usage = await tenant.api.get('/v1/limits/usage');
    assert.deepEqual(usage.body.usage, { day_amount: '3000000', day_count: '3', month_amount: '3000000' });
    assert.deepEqual(usage.body.limit, {
      scope: 'tenant',
      method: '*',
      per_tx_max: '5000000',
      daily_max: '5000000',
      monthly_max: null,
      daily_count_max: '3',
    });
    await advanceAndReap(t, clock, 4000); // V99990006 fails, V99990007 settles
    await advanceAndReap(t, clock, 11_000); // V99990007 reversed
    usage = await tenant.api.get('/v1/limits/usage');
    assert.deepEqual(usage.body.usage, { day_amount: '1000000', day_count: '1', month_amount: '1000000' });
    assert.equal((await tenant.api.get('/v1/limits/usage?asset=USD')).body.usage.day_amount, '0');
  });

  it('usage for a customer, and null limit when no rule', async () => {
    const tenant = await fundedTenant(t);
    const customerId = '0b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b3c6';
    await payout(tenant.api, { beneficiary: beneficiary('V40000050'), customerId }, 200_000);
    await payout(tenant.api, { beneficiary: beneficiary('V40000051') }, 300_000);
    const mine = await tenant.api.get(`/v1/limits/usage?customerId=${customerId}`);
    assert.deepEqual(mine.body, {
      asset: 'BS',
      usage: { day_amount: '200000', day_count: '1', month_amount: '200000' },
      limit: null,
    });
    const all = await tenant.api.get('/v1/limits/usage');
    assert.equal(all.body.usage.day_amount, '500000');
    assertEnvelope(assert, await tenant.api.get('/v1/limits/usage?customerId=nope'), 400, 'validation_failed');
    assertEnvelope(assert, await tenant.api.get('/v1/limits/usage?asset=EUR'), 400, 'validation_failed');
  });
});
