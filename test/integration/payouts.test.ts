import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { firstLookMs } from '../../src/domain/send-schedule.ts';
import { client, startTestApp, type TestApp } from '../support/harness.ts';
import {
  advanceAndReap,
  AMPLE_RAIL_TIMEOUT_MS,
  appWithRailTimeout,
  assertLedgerBalanced,
  beneficiary,
  fundedTenant,
  payout,
  position,
  quote,
  type FundedTenant,
} from '../support/payouts.ts';

const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '3000',
  SANDBOX_REVERSE_DELAY_MS: '10000',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '1000',
};
/** The rail timeout of the one payout here that is meant to time out (V99990009 hangs until it does). */
const HANG_RAIL_TIMEOUT_MS = 300;

describe('payouts through the sandbox rail', () => {
  let t: TestApp;
  let clock: ManualClock;
  let tenant: FundedTenant;
  before(async () => {
    clock = new ManualClock(new Date());
    t = await startTestApp({ clock, env: ENV });
    tenant = await fundedTenant(t);
  });
  afterEach(async () => {
    await assertLedgerBalanced(t);
  });
  after(async () => {
    await t.close();
  });

  it('default outcome: 201 submitted, then settled by the reaper, with the 2.4 shape exactly', async () => {
    const response = await payout(tenant.api, { beneficiary: beneficiary('V20111222') });
    assert.equal(response.status, 201, response.raw);
    const body = response.body;
    assert.deepEqual(Object.keys(body).sort(), [
      'amount',
      'asset',
      'bankReference',
      'beneficiary',
      'beneficiaryId',
      'feeAmount',
      'id',
      'message',
      'metadata',
      'method',
      'methodChanged',
      'methodRequested',
      'reason',
      'status',
      'totalDebited',
    ]);
    assert.deepEqual(body.metadata, {}, 'a payout without metadata reads back {}');
    assert.equal(body.status, 'submitted');
    assert.equal(body.bankReference, null);
    assert.equal(body.asset, 'BS');
    assert.equal(body.amount, '1000000');
    assert.equal(body.feeAmount, '10000');
    assert.equal(body.totalDebited, '1010000');
    assert.equal(body.method, 'pago_movil');
    assert.equal(body.methodRequested, 'pago_movil');
    assert.equal(body.methodChanged, false);
    assert.equal(body.reason, null);
    assert.deepEqual(body.beneficiary, {
      fullName: 'María Pérez',
      nationalId: 'V20111222',
      bankCode: '0102',
      instrument: 'pago_movil',
      accountCheck: 'not_checked',
      nationalIdCheck: 'not_checked',
    });

    await advanceAndReap(t, clock, 4000);
    const payment = await tenant.api.get(`/v1/payments/${body.id}`);
    assert.equal(payment.status, 200);
    assert.equal(payment.body.status, 'settled');
    assert.match(payment.body.bank_reference, /^\d{12}$/);
    assert.ok(payment.body.settled_at);
    assert.deepEqual(
      payment.body.events.map((e: any) => [e.from_status, e.to_status, e.reason, e.actor]),
      [
        [null, 'submitted', 'ledger_committed', 'api'],
        ['submitted', 'submitted', 'rail_accepted_async', 'api'],
        ['submitted', 'settled', 'resolved_by_reaper', 'reaper'],
      ],
    );
    assert.deepEqual(payment.body.events[0].metadata, { methodRequested: 'pago_movil', methodUsed: 'pago_movil' });
    const beneficiaryRead = await tenant.api.get(`/v1/beneficiaries/${body.beneficiaryId}`);
    assert.equal(beneficiaryRead.body.payout_count, 1);
    assert.ok(beneficiaryRead.body.last_success_at);
  });

  it('V99990001 settles at once', async () => {
    const response = await payout(tenant.api, { beneficiary: beneficiary('V99990001') });
    assert.equal(response.status, 201, response.raw);
    assert.equal(response.body.status, 'settled');
    assert.match(response.body.bankReference, /^\d{12}$/);
    assert.equal(response.body.totalDebited, '1010000');
  });

  it('V99990004 and V99990005 fail at the rail: 201 failed, entry reversed, nothing charged', async () => {
    const before = await position(tenant.api);
    for (const [id, reason] of [
      ['V99990004', 'beneficiary_mismatch'],
      ['V99990005', 'bank_unreachable'],
    ] as const) {
      const response = await payout(tenant.api, { beneficiary: beneficiary(id) });
      assert.equal(response.status, 201, response.raw);
      assert.equal(response.body.status, 'failed');
      assert.equal(response.body.reason, reason);
      assert.equal(response.body.feeAmount, '0');
      assert.equal(response.body.totalDebited, '0');
      const payment = await tenant.api.get(`/v1/payments/${response.body.id}`);
      assert.equal(payment.body.compensated, true);
      assert.equal(payment.body.fee_amount, '0');
      assert.equal(payment.body.status_reason, reason);
    }
    assert.deepEqual(await position(tenant.api), before);
  });

  it('V99990002 answers unknown (no totalDebited), then the reaper resolves it settled', async () => {
    const response = await payout(tenant.api, { beneficiary: beneficiary('V99990002') });
    assert.equal(response.body.status, 'unknown');
    assert.equal('totalDebited' in response.body, false);
    await advanceAndReap(t, clock, 4000);
    assert.equal((await tenant.api.get(`/v1/payments/${response.body.id}`)).body.status, 'settled');
  });

  it('V99990003 answers unknown, then resolves failed rail_rejected with the entry reversed', async () => {
    const before = await position(tenant.api);
    const response = await payout(tenant.api, { beneficiary: beneficiary('V99990003') });
    assert.equal(response.body.status, 'unknown');
    await advanceAndReap(t, clock, 4000);
    const payment = await tenant.api.get(`/v1/payments/${response.body.id}`);
    assert.equal(payment.body.status, 'failed');
    assert.equal(payment.body.status_reason, 'rail_rejected');
    assert.equal(payment.body.compensated, true);
    assert.deepEqual(await position(tenant.api), before);
  });

  it('V99990006 is submitted, then fails invalid_destination_account', async () => {
    const response = await payout(tenant.api, { beneficiary: beneficiary('V99990006') });
    assert.equal(response.body.status, 'submitted');
    await advanceAndReap(t, clock, 4000);
    const payment = await tenant.api.get(`/v1/payments/${response.body.id}`);
    assert.equal(payment.body.status, 'failed');
    assert.equal(payment.body.status_reason, 'invalid_destination_account');
  });

  it('V99990007 settles, then is reversed: the delivered amount returns, the fee is kept', async () => {
    const before = await position(tenant.api);
    const response = await payout(tenant.api, { beneficiary: beneficiary('V99990007') });
    assert.equal(response.body.status, 'submitted');
    await advanceAndReap(t, clock, 4000);
    assert.equal((await tenant.api.get(`/v1/payments/${response.body.id}`)).body.status, 'settled');
    await advanceAndReap(t, clock, 11_000);
    const payment = await tenant.api.get(`/v1/payments/${response.body.id}`);
    assert.equal(payment.body.status, 'reversed');
    assert.equal(payment.body.events.at(-1).actor, 'provider_event');
    const after = await position(tenant.api);
    assert.equal(
      BigInt(before.prefundingBalance) - BigInt(after.prefundingBalance),
      10000n,
      'only the fee stays charged',
    );
    assert.equal(BigInt(after.platformRevenueFromTenant) - BigInt(before.platformRevenueFromTenant), 10000n);
  });

  it('V99990008: preferred switches instrument (methodChanged), strict fails instrument_unsupported', async () => {
    const withAccount = beneficiary('V99990008', { accountNumber: '01020000000000000001' });
    const preferred = await payout(tenant.api, { beneficiary: withAccount, method: 'transferencia' });
    assert.equal(preferred.status, 201, preferred.raw);
    assert.equal(preferred.body.method, 'pago_movil');
    assert.equal(preferred.body.methodRequested, 'transferencia');
    assert.equal(preferred.body.methodChanged, true);
    const strict = await payout(tenant.api, {
      beneficiary: withAccount,
      method: 'transferencia',
      methodPolicy: 'strict',
    });
    assert.equal(strict.body.status, 'failed');
    assert.equal(strict.body.reason, 'instrument_unsupported');
    // Nothing was used: `method` is the instrument asked for, never null.
    assert.equal(strict.body.method, 'transferencia');
    assert.equal(strict.body.methodChanged, false);
    const payment = await tenant.api.get(`/v1/payments/${strict.body.id}`);
    assert.equal(payment.body.compensated, false);
    assert.deepEqual(
      payment.body.events.map((e: any) => [e.from_status, e.to_status, e.reason, e.actor]),
      [[null, 'failed', 'instrument_unsupported', 'api']],
    );
  });

  it('V99990009: the rail call times out → unknown; the reaper asks the rail and settles it', async () => {
    // A process of its own on the same database, with a short rail timeout: only this call times out.
    const impatient = await appWithRailTimeout(t, HANG_RAIL_TIMEOUT_MS, { clock });
    const started = Date.now();
    const response = await payout(client(impatient, tenant.key), { beneficiary: beneficiary('V99990009') }).finally(
      () => impatient.close(),
    );
    assert.ok(Date.now() - started >= HANG_RAIL_TIMEOUT_MS - 50, 'the call waited for the rail timeout');
    assert.equal(response.body.status, 'unknown');
    const payment = await tenant.api.get(`/v1/payments/${response.body.id}`);
    assert.equal(payment.body.events.at(-1).reason, 'rail_timeout');
    await advanceAndReap(t, clock, 4000);
    assert.equal((await tenant.api.get(`/v1/payments/${response.body.id}`)).body.status, 'settled');
  });

  it('failures before the rail: below the floor, missing phone, missing account (strict), no sender', async () => {
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ beneficiary: beneficiary('V20111223') }, 92499, 'amount_below_rail_minimum'],
      [{ beneficiary: beneficiary('V20111224', { phone: null }) }, 1_000_000, 'beneficiary_missing_phone'],
      [
        { beneficiary: beneficiary('V20111225'), method: 'transferencia', methodPolicy: 'strict' },
        1_000_000,
        'beneficiary_missing_account',
      ],
      [{ beneficiary: beneficiary('V20111226'), sender: undefined }, 1_000_000, 'sender_required'],
    ];
    const before = await position(tenant.api);
    for (const [body, amount, reason] of cases) {
      const response = await payout(tenant.api, body, amount);
      assert.equal(response.status, 201, response.raw);
      assert.equal(response.body.status, 'failed', `${reason}: ${response.raw}`);
      assert.equal(response.body.reason, reason);
      assert.equal(response.body.feeAmount, '0');
      assert.equal(response.body.totalDebited, '0');
      const payment = await tenant.api.get(`/v1/payments/${response.body.id}`);
      assert.equal(payment.body.compensated, false);
    }
    assert.deepEqual(await position(tenant.api), before, 'nothing charged');
  });

  it('transferencia without an account under preferred is delivered by pago_movil', async () => {
    const response = await payout(tenant.api, { beneficiary: beneficiary('V20111227'), method: 'transferencia' });
    assert.equal(response.body.status, 'submitted', response.raw);
    assert.equal(response.body.method, 'pago_movil');
    assert.equal(response.body.methodChanged, true);
  });

  it('the floor is exactly 1 token at the current USD rate', async () => {
    const atFloor = await payout(tenant.api, { beneficiary: beneficiary('V20111228') }, 92500);
    assert.equal(atFloor.body.status, 'submitted', atFloor.raw);
  });

  it('a USD rate raised just before a payout moves the floor for that very payout', async () => {
    const admin = client(t.app, t.platformKey);
    const quoteId = await quote(tenant.api, 100_000);
    try {
      assert.equal((await admin.put('/v1/admin/rates/USD', { market: '1000.01' })).status, 200);
      const below = await payout(tenant.api, { quoteId, beneficiary: beneficiary('V20111229') }, 100_000);
      assert.equal(below.body.status, 'failed', below.raw);
      assert.equal(below.body.reason, 'amount_below_rail_minimum');
      assert.match(below.body.message, /100001/);
    } finally {
      await admin.put('/v1/admin/rates/USD', { market: '925.00' });
    }
  });
});

describe('the rail acceptance (submitted → submitted, rail_accepted_async) is recorded once', () => {
  const acceptances = (events: any[]) => events.filter((e) => e.reason === 'rail_accepted_async').map((e) => e.actor);
  const transitionsOf = async (api: FundedTenant['api'], id: string) =>
    (await api.get(`/v1/payments/${id}`)).body.events as any[];

  it('by the payout path, with the default timings (first check already after the settlement)', async () => {
    const clock = new ManualClock(new Date());
    const t = await startTestApp({
      clock,
      env: {
        SANDBOX_SETTLE_DELAY_MS: '3000',
        SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
        REAPER_INTERVAL_MS: '1000',
      },
    });
    try {
      const tenant = await fundedTenant(t);
      const response = await payout(tenant.api, { beneficiary: beneficiary('V20112001') });
      assert.equal(response.body.status, 'submitted', response.raw);
      assert.deepEqual(acceptances(await transitionsOf(tenant.api, response.body.id)), ['api']);
      await advanceAndReap(t, clock, 4000);
      const events = await transitionsOf(tenant.api, response.body.id);
      assert.deepEqual(
        events.map((e) => e.reason),
        ['ledger_committed', 'rail_accepted_async', 'resolved_by_reaper'],
      );
      await assertLedgerBalanced(t);
    } finally {
      await t.close();
    }
  });

  it('and not again when the reaper hears "still processing" from the rail', async () => {
    const clock = new ManualClock(new Date());
    // The first check (the send window, the rail timeout and a reaper interval) comes before the
    // settlement (twice the rail timeout): the reaper asks while the rail still says processing, then
    // again after it settled.
    const settleDelayMs = 2 * AMPLE_RAIL_TIMEOUT_MS;
    const firstLook = firstLookMs({ railTimeoutMs: AMPLE_RAIL_TIMEOUT_MS, reaperIntervalMs: 1000 }, settleDelayMs);
    assert.ok(firstLook < settleDelayMs, `the first check (${firstLook} ms) comes before the settlement`);
    const t = await startTestApp({
      clock,
      env: {
        SANDBOX_SETTLE_DELAY_MS: String(settleDelayMs),
        SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
        REAPER_INTERVAL_MS: '1000',
      },
    });
    try {
      const tenant = await fundedTenant(t);
      const response = await payout(tenant.api, { beneficiary: beneficiary('V20112002') });
      assert.equal(response.body.status, 'submitted', response.raw);
      await advanceAndReap(t, clock, firstLook);
      assert.equal((await tenant.api.get(`/v1/payments/${response.body.id}`)).body.status, 'submitted');
      assert.deepEqual(acceptances(await transitionsOf(tenant.api, response.body.id)), ['api']);
      await advanceAndReap(t, clock, settleDelayMs - firstLook + 1000);
      const events = await transitionsOf(tenant.api, response.body.id);
      assert.deepEqual(
        events.map((e) => [e.to_status, e.reason]),
        [
          ['submitted', 'ledger_committed'],
          ['submitted', 'rail_accepted_async'],
          ['settled', 'resolved_by_reaper'],
        ],
      );
      await assertLedgerBalanced(t);
    } finally {
      await t.close();
    }
  });
});
