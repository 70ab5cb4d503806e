import { businessDate } from '../../src/domain/caracas-time.ts';
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ManualClock } from '../support/clock.ts';
import { assertEnvelope, client, startTestApp, type TestApp } from '../support/harness.ts';
import {
  SENDER,
  AMPLE_RAIL_TIMEOUT_MS,
  appWithRailTimeout,
  advanceAndReap,
  assertLedgerBalanced,
  beneficiary,
  fundedTenant,
  idempotencyKey,
  payout,
  position,
  quote,
  railLike,
  reapUntil,
} from '../support/payouts.ts';

const ENV = { SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS), SANDBOX_SETTLE_DELAY_MS: '3000' };
/** The rail timeout of the process whose rail call never returns: when it answers unknown anyway. */
const CRASHED_RAIL_TIMEOUT_MS = 300;

describe('payouts under concurrency', () => {
  let t: TestApp;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(new Date());
    t = await startTestApp({ clock, env: ENV });
  });
  afterEach(async () => {
    await assertLedgerBalanced(t);
  });
  after(async () => {
    await t.close();
  });

  it('50 concurrent payouts against a balance covering 20: exactly 20 succeed, balance exactly 0', async () => {
    // 20 × (1,000,000 + 1% fee) = 20,200,000
    const tenant = await fundedTenant(t, 20_200_000n);
    const quotes = await Promise.all(Array.from({ length: 50 }, () => quote(tenant.api, 1_000_000)));
    const responses = await Promise.all(
      quotes.map((quoteId, i) =>
        payout(tenant.api, { quoteId, beneficiary: beneficiary(`V3000${String(i).padStart(4, '0')}`) }),
      ),
    );
    const ok = responses.filter((r) => r.status === 201);
    const refused = responses.filter((r) => r.status === 422);
    assert.equal(ok.length, 20, responses.map((r) => r.status).join(','));
    assert.equal(refused.length, 30);
    for (const r of refused) assert.equal(r.body.error.code, 'insufficient_tenant_funds');
    assert.equal((await position(tenant.api)).prefundingBalance, '0');
  });

  it('two concurrent payouts on one quote: one payout and one 409 quote_already_consumed', async () => {
    const tenant = await fundedTenant(t);
    const quoteId = await quote(tenant.api, 1_000_000);
    const [a, b] = await Promise.all([
      payout(tenant.api, { quoteId, beneficiary: beneficiary('V31000001') }),
      payout(tenant.api, { quoteId, beneficiary: beneficiary('V31000001') }),
    ]);
    const statuses = [a.status, b.status].sort();
    assert.deepEqual(statuses, [201, 409]);
    const conflict = a.status === 409 ? a : b;
    assertEnvelope(assert, conflict, 409, 'quote_already_consumed');
    assert.equal((await tenant.api.get(`/v1/quotes/${quoteId}`)).body.status, 'consumed');
  });

  it('an expired quote is 422 quote_expired and consumes nothing', async () => {
    const tenant = await fundedTenant(t);
    const quoteId = await quote(tenant.api, 1_000_000);
    clock.advance(61_000);
    const response = await payout(tenant.api, { quoteId, beneficiary: beneficiary('V31000002') });
    assertEnvelope(assert, response, 422, 'quote_expired');
    assert.equal((await tenant.api.get(`/v1/quotes/${quoteId}`)).body.status, 'expired');
  });

  it('idempotency: replay, mismatch, and 20 concurrent identical requests make one payout', async () => {
    const tenant = await fundedTenant(t);
    const quoteId = await quote(tenant.api, 1_000_000);
    const key = idempotencyKey();
    const body = { quoteId, method: 'pago_movil', beneficiary: beneficiary('V31000003'), sender: SENDER };
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => tenant.api.post('/v1/payouts', body, { 'idempotency-key': key })),
    );
    const created = responses.filter((r) => r.status === 201);
    assert.ok(created.length >= 1);
    const ids = new Set(created.map((r) => r.body.id));
    assert.equal(ids.size, 1, 'every 201 is the same payout');
    for (const r of responses) if (r.status !== 201) assertEnvelope(assert, r, 409, 'idempotency_request_in_progress');
    const { rows } = await t.db.query<{ n: bigint }>(
      'SELECT count(*)::bigint AS n FROM payments WHERE tenant_id = $1',
      [tenant.tenantId],
    );
    assert.equal(rows[0]!.n, 1n);

    const replay = await tenant.api.post('/v1/payouts', body, { 'idempotency-key': key });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.raw, created[0]!.raw);
    const mismatch = await tenant.api.post(
      '/v1/payouts',
      { ...body, method: 'transferencia' },
      { 'idempotency-key': key },
    );
    assertEnvelope(assert, mismatch, 409, 'idempotency_key_reused');
    const missing = await tenant.api.post('/v1/payouts', body);
    assertEnvelope(assert, missing, 400, 'idempotency_key_missing');
  });

  it('a crash between the ledger commit and the rail call is resolved by the reaper (submit by reference)', async () => {
    // A rail whose submit never arrives: the process "dies" after the ledger commit.
    const real = t.services.rails.test;
    const crashing = railLike(real, { submit: () => new Promise(() => undefined) });
    // A second process on the same database whose rail call never returns.
    const crashedApp = await appWithRailTimeout(t, CRASHED_RAIL_TIMEOUT_MS, { clock, testRail: crashing });
    const crashed = { ...t, app: crashedApp };
    try {
      const tenant = await fundedTenant(crashed);
      const response = await payout(tenant.api, { beneficiary: beneficiary('V31000004') });
      // The rail never answered: the payment is committed (charged) and unknown; the rail has no record.
      assert.equal(response.body.status, 'unknown');
      assert.equal((await real.lookup(response.body.id, 'test')).status, 'not_found');
      // The reaper of a healthy process finds it, learns the rail never saw it, submits by reference
      // (once a send by the payout path can no longer be running).
      const payment = async () => (await tenant.api.get(`/v1/payments/${response.body.id}`)).body;
      await reapUntil(
        t,
        clock,
        'the payment settled',
        async () => (await payment()).status === 'settled',
        async () => JSON.stringify((await payment()).events),
      );
      const { rows } = await t.db.query<{ n: bigint }>(
        'SELECT count(*)::bigint AS n FROM sandbox_rail_transfers WHERE reference = $1',
        [response.body.id],
      );
      assert.equal(rows[0]!.n, 1n, 'sent exactly once');
    } finally {
      await crashedApp.close();
    }
  });

  it('model test: random payout sequences keep the balance equal to a simple model', async () => {
    const outcomes = ['V20000000', 'V99990001', 'V99990004', 'V99990003', 'V99990006'] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ amount: fc.integer({ min: 50_000, max: 3_000_000 }), who: fc.constantFrom(...outcomes) }),
          { minLength: 1, maxLength: 8 },
        ),
        fc.integer({ min: 0, max: 12_000_000 }),
        async (steps, funding) => {
          await modelRun(steps, funding);
        },
      ),
      { numRuns: 12 },
    );
    async function modelRun(steps: Array<{ amount: number; who: string }>, funding: number) {
      const tenant = await fundedTenant(t, BigInt(funding));
      let model = BigInt(funding);
      let revenue = 0n;
      for (const [i, step] of steps.entries()) {
        const response = await payout(
          tenant.api,
          { beneficiary: beneficiary(step.who === 'V20000000' ? `V2${String(i).padStart(7, '0')}` : step.who) },
          step.amount,
        );
        const fee = BigInt(Math.ceil(step.amount / 100));
        const total = BigInt(step.amount) + fee;
        if (response.status === 422) {
          assert.equal(response.body.error.code, 'insufficient_tenant_funds');
          assert.ok(model < total, 'refused only when the model cannot cover it');
          continue;
        }
        assert.equal(response.status, 201, response.raw);
        // Below the floor fails before the ledger; every other outcome is charged first and a
        // later failure is compensated (added back below from the compensated payments).
        const failsBeforeLedger = step.amount < 92_500;
        if (!failsBeforeLedger) {
          model -= total;
          revenue += fee;
        }
      }
      // Outcomes resolved later (V99990003/6 fail) give the money back.
      await advanceAndReap(t, clock, 4000);
      const { rows } = await t.db.query<{ refunded: bigint; fees: bigint }>(
        `SELECT coalesce(sum(CASE WHEN compensated THEN source_amount ELSE 0 END), 0)::bigint AS refunded,
                    coalesce(sum(CASE WHEN compensated THEN (SELECT q.fee_amount FROM quotes q WHERE q.tenant_id = p.tenant_id AND q.id = p.quote_id) ELSE 0 END), 0)::bigint AS fees
               FROM payments p WHERE tenant_id = $1 AND status = 'failed'`,
        [tenant.tenantId],
      );
      model += rows[0]!.refunded;
      revenue -= rows[0]!.fees;
      const after = await position(tenant.api);
      assert.equal(BigInt(after.prefundingBalance), model);
      assert.equal(BigInt(after.platformRevenueFromTenant), revenue);
      assert.ok(model >= 0n);
    }
  });
});

describe('credit tenants (daily close)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ env: ENV });
  });
  afterEach(async () => {
    await assertLedgerBalanced(t);
  });
  after(async () => {
    await t.close();
  });

  it('are not blocked by balance, draw credit up to creditLimit, and the close settles it', async () => {
    const tenant = await fundedTenant(t, 0n, { creditEnabled: true, creditLimit: 2_500_000 });
    const first = await payout(tenant.api, { beneficiary: beneficiary('V32000001') });
    assert.equal(first.status, 201, first.raw);
    const second = await payout(tenant.api, { beneficiary: beneficiary('V32000002') });
    assert.equal(second.status, 201);
    let pos = await position(tenant.api);
    assert.equal(pos.creditEnabled, true);
    assert.equal(pos.prefundingBalance, '0');
    assert.equal(pos.creditDrawn, '2020000');
    assert.equal(pos.creditLimit, '2500000');
    assert.equal(pos.creditAvailable, '480000');
    const third = await payout(tenant.api, { beneficiary: beneficiary('V32000003') });
    assertEnvelope(assert, third, 422, 'insufficient_tenant_funds');
    const closed = await client(t.app, t.platformKey).post(`/v1/admin/tenants/${tenant.tenantId}/close`, {
      mode: 'test',
    });
    assert.equal(closed.status, 200, closed.raw);
    assert.equal(closed.body.closedAmount, '2020000');
    assert.equal(closed.body.creditDrawn, '0');
    pos = await position(tenant.api);
    assert.equal(pos.creditAvailable, '2500000');
    assert.equal((await payout(tenant.api, { beneficiary: beneficiary('V32000004') })).status, 201);
  });

  it('the scheduled close runs once per Caracas day, whatever the number of workers', async () => {
    const tenant = await fundedTenant(t, 0n, { creditEnabled: true });
    await payout(tenant.api, { beneficiary: beneficiary('V32000005') });
    // The close of the day the draw was made in (it settles what stood at that day's end).
    const day = businessDate(t.services.clock.now());
    const [a, b] = await Promise.all([
      t.services.treasury.close(tenant.tenantId, 'test', day),
      t.services.treasury.close(tenant.tenantId, 'test', day),
    ]);
    assert.deepEqual([a.closedAmount, b.closedAmount].sort(), ['0', '1010000']);
    assert.equal((await position(tenant.api)).creditDrawn, '0');
  });
});
