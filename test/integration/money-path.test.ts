// The money path's promises that hold on either engine: credit per asset and never stuck, usage
// given back to the day it was counted, fundings recorded with their key, the reaper's bound, and a
// retry after a crash between the commit and the answer.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { keyHeldMs } from '../../src/domain/send-schedule.ts';
import { DailyCloseWorker } from '../../src/workers/daily-close.ts';
import type { RailAdapter, RailNotification } from '../../src/rails/rail.ts';
import { assertEnvelope, client, startTestApp, type TestApp } from '../support/harness.ts';
import {
  advanceAndReap,
  AMPLE_RAIL_TIMEOUT_MS,
  appWithRailTimeout,
  assertLedgerBalanced,
  beneficiary,
  fundedTenant,
  idempotencyKey,
  payout,
  position,
  quote,
  railLike,
  reapUntil,
  reaperOf,
  SENDER,
} from '../support/payouts.ts';
import { metricsHeaders } from '../support/metrics.ts';
import { until } from '../support/until.ts';

const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '3000',
  SANDBOX_REVERSE_DELAY_MS: '10000',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '1000',
};
/**
 * The rail timeout of the process that "dies" after its commit: its send never returns, and this is
 * when it answers anyway. Long enough that a retry made right after the commit still finds the key
 * held on a loaded machine; the test waits for that late answer at its end.
 */
const DYING_RAIL_TIMEOUT_MS = 3_000;

async function events(t: TestApp, paymentId: string): Promise<string[]> {
  const { rows } = await t.db.query<{ event_type: string }>(
    `SELECT event_type FROM outbox_events WHERE aggregate_id = $1 ORDER BY id`,
    [paymentId],
  );
  return rows.map((r) => r.event_type);
}

describe('credit tenants: per asset, and never stuck after a close', () => {
  let t: TestApp;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    t = await startTestApp({ clock, env: ENV });
  });
  afterEach(async () => {
    await assertLedgerBalanced(t);
  });
  after(async () => {
    await t.close();
  });

  const close = (tenantId: string) =>
    client(t.app, t.platformKey).post(`/v1/admin/tenants/${tenantId}/close`, { mode: 'test' });

  it("the scheduled close of a Caracas day settles what was drawn by that day's end; a draw after midnight waits for the next one", async () => {
    const worker = new DailyCloseWorker(t.services.treasury, t.app.log);
    // 23:00 in Caracas on 2026-11-24 (UTC-4).
    clock.set(new Date('2026-11-25T03:00:00Z'));
    const tenant = await fundedTenant(t, 0n, { creditEnabled: true });
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V99990001') })).body.status, 'settled');
    // 00:30 on the 25th: the 24th has ended; a draw now belongs to the 25th.
    clock.set(new Date('2026-11-25T04:30:00Z'));
    assert.equal(
      (await payout(tenant.api, { beneficiary: beneficiary('V99990001') }, 2_000_000)).body.status,
      'settled',
    );
    assert.equal((await position(tenant.api)).creditDrawn, '3030000');
    await worker.runOnce();
    assert.equal((await position(tenant.api)).creditDrawn, '2020000', "the 24th's draw is settled, the 25th's is not");
    const { rows } = await t.db.query<{ business_date: string; amount: string }>(
      `SELECT business_date::text, amount::text FROM daily_closes WHERE tenant_id = $1`,
      [tenant.tenantId],
    );
    assert.deepEqual(rows, [{ business_date: '2026-11-24', amount: '1010000' }]);
    await worker.runOnce();
    assert.equal((await position(tenant.api)).creditDrawn, '2020000', 'a day closes once');

    // A tenant whose first draw comes after midnight: the close of the day before settles nothing,
    // is recorded, and is not tried again.
    const newcomer = await fundedTenant(t, 0n, { creditEnabled: true });
    await payout(newcomer.api, { beneficiary: beneficiary('V99990001') });
    await worker.runOnce();
    assert.equal((await position(newcomer.api)).creditDrawn, '1010000');
    assert.deepEqual(await t.services.treasury.dueCloses('2026-11-24', 10), []);

    // The next day's close settles the rest.
    clock.set(new Date('2026-11-26T04:30:00Z'));
    await worker.runOnce();
    assert.equal((await position(tenant.api)).creditDrawn, '0');
    assert.equal((await position(newcomer.api)).creditDrawn, '0');
  });

  it('a payout failing after the daily close resolves with payment.failed; its refund is owed, then netted by the next close', async () => {
    const tenant = await fundedTenant(t, 0n, { creditEnabled: true, creditLimit: 5_000_000 });
    const made = await payout(tenant.api, { beneficiary: beneficiary('V99990006') });
    assert.equal(made.body.status, 'submitted', made.raw);
    assert.equal((await position(tenant.api)).creditDrawn, '1010000');

    const closed = await close(tenant.tenantId);
    assert.equal(closed.status, 200, closed.raw);
    assert.equal(closed.body.closedAmount, '1010000');
    assert.deepEqual(closed.body.closed, [{ asset: 'BS', drawn: '1010000', owed: '0' }]);

    await advanceAndReap(t, clock, 6000);
    const payment = await tenant.api.get(`/v1/payments/${made.body.id}`);
    assert.equal(payment.body.status, 'failed', JSON.stringify(payment.body.events));
    assert.equal(payment.body.status_reason, 'invalid_destination_account');
    assert.equal(payment.body.compensated, true);
    assert.deepEqual(await events(t, made.body.id), ['payment.failed']);
    let pos = await position(tenant.api);
    assert.equal(pos.creditDrawn, '0', 'credit drawn never goes below zero');
    assert.equal(pos.prefundingBalance, '1010000', 'the refund shows in the position: owed to the tenant');
    assert.equal(pos.platformRevenueFromTenant, '0', 'a failed payout charges no fee');

    // The next close settles it: the tenant drew nothing, we owed it the refund.
    const next = await close(tenant.tenantId);
    assert.deepEqual(next.body.closed, [{ asset: 'BS', drawn: '0', owed: '1010000' }]);
    pos = await position(tenant.api);
    assert.equal(pos.prefundingBalance, '0');
    assert.equal(pos.creditDrawn, '0');
  });

  it('a reversal after the close: the delivered amount is owed to the tenant and netted against its next draw', async () => {
    const tenant = await fundedTenant(t, 0n, { creditEnabled: true });
    const made = await payout(tenant.api, { beneficiary: beneficiary('V99990007') });
    await advanceAndReap(t, clock, 4000);
    assert.equal((await tenant.api.get(`/v1/payments/${made.body.id}`)).body.status, 'settled');
    await close(tenant.tenantId);
    await advanceAndReap(t, clock, 11_000);
    assert.equal((await tenant.api.get(`/v1/payments/${made.body.id}`)).body.status, 'reversed');
    assert.deepEqual(await events(t, made.body.id), ['payment.settled', 'payment.reversed']);
    let pos = await position(tenant.api);
    assert.equal(pos.creditDrawn, '0');
    assert.equal(pos.prefundingBalance, '1000000', 'the delivered amount, fee kept');
    assert.equal(pos.platformRevenueFromTenant, '10000');

    const second = await payout(tenant.api, { beneficiary: beneficiary('V32100001') }, 2_000_000);
    assert.equal(second.status, 201, second.raw);
    pos = await position(tenant.api);
    assert.equal(pos.creditDrawn, '2020000');
    const next = await close(tenant.tenantId);
    assert.deepEqual(
      next.body.closed,
      [{ asset: 'BS', drawn: '2020000', owed: '1000000' }],
      'the tenant pays 1,020,000: its draw net of the refund',
    );
    pos = await position(tenant.api);
    assert.equal(pos.creditDrawn, '0');
    assert.equal(pos.prefundingBalance, '0');
  });

  it('credit terms are per asset: a USD draw is compared only with the USD ceiling, in USD minor units', async () => {
    const admin = client(t.app, t.platformKey);
    const tenant = await fundedTenant(t, 0n, { creditEnabled: true, creditLimit: 1, creditLimits: { USD: 2_500 } });
    const view = await admin.get(`/v1/admin/tenants/${tenant.tenantId}`);
    assert.deepEqual(view.body.creditLimits, { BS: '1', USD: '2500', USDC: null, VESC: null });
    const usdQuote = async () => {
      const q = await tenant.api.post('/v1/quotes', {
        spend: { asset: 'USD', amount: 1_200 },
        deliver: { asset: 'BS' },
      });
      assert.equal(q.status, 201, q.raw);
      return q.body.id as string;
    };
    assert.equal(
      (await payout(tenant.api, { quoteId: await usdQuote(), beneficiary: beneficiary('V32200001') })).status,
      201,
      'a BS ceiling of 1 does not limit a USD draw',
    );
    assert.equal(
      (await payout(tenant.api, { quoteId: await usdQuote(), beneficiary: beneficiary('V32200002') })).status,
      201,
    );
    const third = await payout(tenant.api, { quoteId: await usdQuote(), beneficiary: beneficiary('V32200003') });
    assertEnvelope(assert, third, 422, 'insufficient_tenant_funds');
    assert.deepEqual(third.body.error.meta, {
      asset: 'USD',
      required: '1200',
      credit_drawn: '2400',
      credit_limit: '2500',
    });
    const usd = (await tenant.api.get('/v1/treasury/position?asset=USD')).body;
    assert.deepEqual([usd.creditDrawn, usd.creditLimit, usd.creditAvailable], ['2400', '2500', '100']);
    assertEnvelope(
      assert,
      await payout(tenant.api, { beneficiary: beneficiary('V32200004') }),
      422,
      'insufficient_tenant_funds',
    );

    const closed = await admin.post(`/v1/admin/tenants/${tenant.tenantId}/close`, { mode: 'test' });
    assert.deepEqual(closed.body.closed, [{ asset: 'USD', drawn: '2400', owed: '0' }], 'the close settles every asset');
    assert.equal((await tenant.api.get('/v1/treasury/position?asset=USD')).body.creditDrawn, '0');

    const patched = await admin.patch(`/v1/admin/tenants/${tenant.tenantId}`, { creditLimits: { USDC: 5_000_000 } });
    assert.deepEqual(
      patched.body.creditLimits,
      { BS: '1', USD: '2500', USDC: '5000000', VESC: null },
      'a patch changes only the assets sent',
    );
    assertEnvelope(
      assert,
      await admin.patch(`/v1/admin/tenants/${tenant.tenantId}`, { creditLimit: 5, creditLimits: { BS: 6 } }),
      400,
      'validation_failed',
    );
  });
});

describe('limit usage is given back to the business day it was counted', () => {
  let t: TestApp;
  let clock: ManualClock;
  before(async () => {
    // 23:59:30 in Caracas (UTC−4) on 22 November.
    clock = new ManualClock(new Date('2026-11-23T03:59:30Z'));
    t = await startTestApp({ clock, env: ENV });
  });
  after(async () => {
    await t.close();
  });

  it('a payout counted before Caracas midnight and failed after it gives back to the earlier day', async () => {
    const tenant = await fundedTenant(t);
    const made = await payout(tenant.api, { beneficiary: beneficiary('V99990006') });
    assert.equal(made.status, 201, made.raw);
    const usage = async () => {
      const { rows } = await t.db.query<{ day: string; amount: bigint; count: bigint }>(
        `SELECT business_date::text AS day, amount, count FROM limit_usage WHERE tenant_id = $1 AND subject_kind = 'tenant' ORDER BY business_date`,
        [tenant.tenantId],
      );
      return rows.map((r) => `${r.day}:${r.amount}/${r.count}`);
    };
    assert.deepEqual(await usage(), ['2026-11-22:1000000/1']);
    await advanceAndReap(t, clock, 6000); // 00:00:06 on the 23rd in Caracas: the rail rejects it now
    assert.equal((await tenant.api.get(`/v1/payments/${made.body.id}`)).body.status, 'failed');
    assert.deepEqual(await usage(), ['2026-11-22:0/0'], 'given back where it was counted; nothing touched on the 23rd');
  });
});

describe('fundings: the key and the ledger entry in one transaction', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: ENV });
  });
  after(async () => {
    await t.close();
  });

  it('a retry is credited once and answered the same; another body is 409; concurrent retries credit once', async () => {
    const tenant = await fundedTenant(t, 0n);
    const admin = client(t.app, t.platformKey);
    const fund = (amount: number, key: string) =>
      admin.post(
        `/v1/admin/tenants/${tenant.tenantId}/fundings`,
        { mode: 'test', asset: 'BS', amount },
        { 'idempotency-key': key },
      );
    const first = await fund(5_000, 'wire-1');
    assert.equal(first.status, 201, first.raw);
    assert.equal(first.body.prefundingBalance, '5000');
    const again = await fund(5_000, 'wire-1');
    assert.equal(again.status, 201);
    assert.equal(again.raw, first.raw);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assertEnvelope(assert, await fund(6_000, 'wire-1'), 409, 'idempotency_key_reused');
    const racing = await Promise.all(Array.from({ length: 10 }, () => fund(7_000, 'wire-2')));
    assert.ok(
      racing.every((r) => r.status === 201),
      racing.map((r) => r.status).join(','),
    );
    assert.equal(new Set(racing.map((r) => r.raw)).size, 1, 'every answer is the one stored');
    assert.equal((await position(tenant.api)).prefundingBalance, '12000');
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger_transactions WHERE tenant_id = $1 AND kind = 'funding'`,
      [tenant.tenantId],
    );
    assert.equal(rows[0]!.n, 2);
  });
});

describe('the reaper asks on a backoff, and stops at its bound', () => {
  let t: TestApp;
  let clock: ManualClock;
  // A rail that takes every transfer and never says how it ended.
  let silent: RailAdapter;
  before(async () => {
    clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    t = await startTestApp({
      clock,
      env: { ...ENV, REAPER_CHECK_ATTEMPTS_MAX: '3', REAPER_BACKOFF_MAX_MS: '4000' },
      deps: {
        testRail: (silent = {
          name: 'silent',
          instrumentAvailable: async () => true,
          submit: async () => ({ status: 'processing' }),
          lookup: async () => ({ status: 'processing' }),
          pendingNotifications: async () => [],
          acknowledgeNotification: async () => undefined,
          banks: async () => [],
          health: async () => ({ ok: true }),
        }),
      },
    });
  });
  after(async () => {
    await t.close();
  });

  it('parks a payment the rail cannot resolve after REAPER_CHECK_ATTEMPTS_MAX questions; an operator re-queues it', async () => {
    assert.ok(silent);
    const tenant = await fundedTenant(t);
    const made = await payout(tenant.api, { beneficiary: beneficiary('V32300001') });
    assert.equal(made.body.status, 'submitted');
    const row = async () =>
      (
        await t.db.query<{
          check_attempts: number;
          next_check_at: Date | null;
          resolution_parked_at: Date | null;
          status: string;
        }>(`SELECT check_attempts, next_check_at, resolution_parked_at, status FROM payments WHERE id = $1`, [
          made.body.id,
        ])
      ).rows[0]!;
    const waits: number[] = [];
    for (let pass = 0; pass < 6 && (await row()).next_check_at; pass += 1) {
      const due = (await row()).next_check_at!.getTime();
      clock.set(new Date(due));
      await advanceAndReap(t, clock, 0, 1);
      const after = await row();
      if (after.next_check_at) waits.push(after.next_check_at.getTime() - clock.now().getTime());
    }
    const parked = await row();
    assert.equal(parked.check_attempts, 3);
    assert.equal(parked.next_check_at, null, 'no longer asked');
    assert.ok(parked.resolution_parked_at);
    assert.equal(parked.status, 'submitted', 'never invented');
    assert.deepEqual(waits, [1000, 2000], 'each wait doubles (REAPER_INTERVAL_MS, then twice that)');
    const metrics = await client(t.app).get('/metrics', metricsHeaders);
    assert.match(metrics.raw, /bolivar_reaper_parked_payments_total 1/);
    assert.match(metrics.raw, /bolivar_payments_parked_unresolved 1/);

    const admin = client(t.app, t.platformKey);
    const requeued = await admin.post(`/v1/admin/payments/${made.body.id}/recheck`);
    assert.equal(requeued.status, 200, requeued.raw);
    assert.equal(requeued.body.checkAttempts, 0);
    const fresh = await row();
    assert.equal(fresh.resolution_parked_at, null);
    assert.equal(fresh.next_check_at?.getTime(), clock.now().getTime());
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/payments/00000000-0000-4000-8000-000000000000/recheck`),
      404,
      'resource_not_found',
    );
  });
});

describe('a crash between the batch commit and the answer', () => {
  let t: TestApp;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    t = await startTestApp({ clock, env: ENV });
  });
  after(async () => {
    await t.close();
  });

  it('the retry with the same key answers 201 with that payment (never quote_already_consumed); another body is 409', async () => {
    const real = t.services.rails.test;
    // A process whose rail call never returns: it committed the payout and then died before answering.
    const dying = await appWithRailTimeout(t, DYING_RAIL_TIMEOUT_MS, {
      clock,
      testRail: railLike(real, { submit: () => new Promise(() => undefined) }),
    });
    const tenant = await fundedTenant(t);
    const quoteId = await quote(tenant.api, 1_000_000);
    const key = idempotencyKey();
    const body = { quoteId, method: 'pago_movil', beneficiary: beneficiary('V32400001'), sender: SENDER };
    // (It is not really dead: its rail call times out after DYING_RAIL_TIMEOUT_MS of real time, and
    // then it answers, late.)
    const late = dying.inject({
      method: 'POST',
      url: '/v1/payouts',
      headers: { 'x-api-key': tenant.key, 'content-type': 'application/json', 'idempotency-key': key },
      payload: JSON.stringify(body),
    });
    const paymentId = await until(
      'the batch committed',
      async () => {
        const { rows } = await t.db.query<{ id: string }>(`SELECT id FROM payments WHERE tenant_id = $1`, [
          tenant.tenantId,
        ]);
        return rows[0]?.id;
      },
      { timeoutMs: 5000, intervalMs: 10 },
    );
    assert.ok(paymentId, 'the batch committed');

    const retry = () => tenant.api.post('/v1/payouts', body, { 'idempotency-key': key });
    assertEnvelope(assert, await retry(), 409, 'idempotency_request_in_progress');
    // Past the key's hold: the dying process's send window, its rail timeout, and a margin.
    clock.advance(keyHeldMs({ railTimeoutMs: DYING_RAIL_TIMEOUT_MS, reaperIntervalMs: t.config.reaperIntervalMs }) + 1);
    const answered = await retry();
    assert.equal(answered.status, 201, answered.raw);
    assert.equal(answered.body.id, paymentId);
    assert.equal(answered.headers['idempotent-replayed'], 'true');
    assertEnvelope(
      assert,
      await tenant.api.post('/v1/payouts', { ...body, method: 'transferencia' }, { 'idempotency-key': key }),
      409,
      'idempotency_key_reused',
    );

    // The rail never got it: once a send by the payout path can no longer be running, the reaper sends
    // it by our reference and it settles, once.
    await reapUntil(
      t,
      clock,
      'the payment settled',
      async () => (await tenant.api.get(`/v1/payments/${paymentId}`)).body.status === 'settled',
    );
    assert.deepEqual(await events(t, paymentId), ['payment.settled']);
    const { rows } = await t.db.query<{ submissions: number }>(
      `SELECT submissions FROM sandbox_rail_transfers WHERE reference = $1`,
      [paymentId],
    );
    assert.deepEqual(rows, [{ submissions: 1 }]);
    // The first request's own answer, once its send timed out, is that send's answer: unknown, whatever
    // happened to the payment since. Stored under the key, it is what a retry replays from then on.
    const original = await late;
    assert.equal(original.statusCode, 201, original.body);
    assert.equal(JSON.parse(original.body).status, 'unknown');
    const replayed = await retry();
    assert.deepEqual(
      [replayed.body.id, replayed.body.status, replayed.headers['idempotent-replayed']],
      [paymentId, 'unknown', 'true'],
    );
    await assertLedgerBalanced(t);
  });
});

describe('a return whose notification names the wrong tenant, or none', () => {
  it('still reverses the payment, found by its id, once, whether the notification names another tenant or none', async () => {
    const clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    const t = await startTestApp({ clock, env: ENV });
    try {
      const cases: ReadonlyArray<readonly [string, (n: RailNotification) => RailNotification]> = [
        ['another tenant', (n: RailNotification) => ({ ...n, tenantId: '00000000-0000-4000-8000-000000000000' })],
        ['no tenant', (n: RailNotification) => ({ ...n, tenantId: undefined, mode: undefined })],
      ];
      for (const [what, rewrite] of cases) {
        const tenant = await fundedTenant(t);
        const made = await payout(tenant.api, { beneficiary: beneficiary('V99990007') });
        await advanceAndReap(t, clock, 4000);
        assert.equal((await tenant.api.get(`/v1/payments/${made.body.id}`)).body.status, 'settled', what);
        clock.advance(11_000);
        const real = t.services.rails.test;
        const reaper = reaperOf(t, {
          test: railLike(real, {
            pendingNotifications: async (n) => (await real.pendingNotifications(n)).map(rewrite),
          }),
        });
        for (let i = 0; i < 3; i += 1) await reaper.runOnce();
        assert.equal((await tenant.api.get(`/v1/payments/${made.body.id}`)).body.status, 'reversed', what);
        assert.deepEqual(await events(t, made.body.id), ['payment.settled', 'payment.reversed'], what);
        assert.deepEqual(
          (await t.services.rails.test.pendingNotifications(1_000)).filter((n) => n.reference === made.body.id),
          [],
          `${what}: acknowledged`,
        );
      }
      await assertLedgerBalanced(t);
    } finally {
      await t.close();
    }
  });
});
