// POST /v1/sandbox/payments/{id}/simulate: an outcome applied now through the outcome path, the
// sandbox rail's record rewritten with it, and never a second, different outcome afterwards.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  ENGINE,
  startInstances,
  startTestApp,
  type Client,
  type Instances,
  type TestApp,
} from '../support/harness.ts';
import {
  advanceAndReap,
  AMPLE_RAIL_TIMEOUT_MS,
  assertLedgerBalanced,
  beneficiary,
  type FundedTenant,
  fundedTenant,
  payout,
  position,
  reaperOf,
} from '../support/payouts.ts';
import { dispatcherFor, eventsOfPayment, setEndpoint, TestReceiver } from '../support/webhooks.ts';

const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '3000',
  SANDBOX_REVERSE_DELAY_MS: '10000',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '1000',
};
const FUNDING = 1_000_000_000n;
const DELIVER = 1_000_000n;
const FEE = 10_000n;

const PAYLOAD_KEYS: Record<string, string[]> = {
  'payment.settled': ['amount', 'asset', 'bankReference', 'metadata', 'method', 'paymentId'],
  'payment.failed': ['amount', 'asset', 'metadata', 'method', 'paymentId', 'reason'],
  'payment.reversed': ['amount', 'asset', 'bankReference', 'metadata', 'method', 'paymentId', 'reason'],
};

let nationalIds = 0;
/** A national id that triggers nothing in the sandbox: the default schedule (settles after the delay). */
function plainId(): string {
  nationalIds += 1;
  return `V4${String(nationalIds).padStart(7, '0')}`;
}

const simulate = (api: Client, id: string, body: unknown) => api.post(`/v1/sandbox/payments/${id}/simulate`, body);

async function pay(api: Client, nationalId: string, expected: string): Promise<string> {
  const made = await payout(api, { beneficiary: beneficiary(nationalId) }, Number(DELIVER));
  assert.equal(made.status, 201, made.raw);
  assert.equal(made.body.status, expected, made.raw);
  return made.body.id;
}

async function outboxOf(
  t: TestApp,
  tenantId: string,
  paymentId: string,
): Promise<Array<{ type: string; payload: Record<string, unknown> }>> {
  return (await eventsOfPayment(t.db, tenantId, paymentId)).map((e: any) => ({
    type: e.event_type,
    payload: JSON.parse(e.payload_text),
  }));
}

describe(`sandbox simulation on ${ENGINE}`, () => {
  let t: TestApp;
  let clock: ManualClock;
  let receiver: TestReceiver;

  before(async () => {
    clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    t = await startTestApp({ clock, env: ENV });
    receiver = await TestReceiver.start();
  });
  afterEach(async () => {
    await assertLedgerBalanced(t);
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  /** A funded tenant whose test endpoint is the receiver. */
  async function tenant(): Promise<FundedTenant> {
    const made = await fundedTenant(t, FUNDING);
    await setEndpoint(t, made.tenantId, receiver.url(`/hook/${made.tenantId}`));
    return made;
  }

  /** Delivers what is due; the event types the receiver got for this payment, in order. */
  async function delivered(paymentId: string): Promise<string[]> {
    const d = dispatcherFor(t.db, clock);
    try {
      await d.dispatchDue();
    } finally {
      await d.close();
    }
    return receiver.requests.filter((r) => r.body?.payload?.paymentId === paymentId).map((r) => r.body.eventType);
  }

  /** The answer is the payment as GET returns it, its last transition the simulated one, by `system`. */
  async function assertAnswer(
    api: Client,
    answer: { status: number; body: any; raw: string },
    last: { from: string; to: string; reason: string },
  ) {
    assert.equal(answer.status, 200, answer.raw);
    const read = await api.get(`/v1/payments/${answer.body.id}`);
    assert.deepEqual(answer.body, read.body, 'the answer is GET /v1/payments/{id}');
    const transition = answer.body.events.at(-1);
    assert.deepEqual(
      { from: transition.from_status, to: transition.to_status, reason: transition.reason, actor: transition.actor },
      { ...last, actor: 'system' },
    );
  }

  async function railSays(paymentId: string) {
    return t.services.rails.test!.lookup(paymentId, 'test');
  }

  // V99990002 answers unconfirmed: the payout is `unknown` until the reaper asks.
  for (const [from, nationalId] of [
    ['submitted', plainId],
    ['unknown', () => 'V99990002'],
  ] as const) {
    it(`settle ${from === 'unknown' ? 'an' : 'a'} ${from} payment: settled now with a bank reference, the in-flight amount delivered, one payment.settled`, async () => {
      const { api, tenantId } = await tenant();
      const id = await pay(api, nationalId(), from);
      const answer = await simulate(api, id, { outcome: 'settle' });
      await assertAnswer(api, answer, { from, to: 'settled', reason: 'simulated_settlement' });
      const p = answer.body;
      assert.equal(p.status, 'settled');
      assert.equal(p.status_reason, 'simulated_settlement');
      assert.match(p.bank_reference, /^[0-9]{12}$/);
      assert.equal(p.settled_at, clock.now().toISOString());
      assert.equal(p.compensated, false);
      assert.equal(p.fee_amount, String(FEE));

      const pos = await position(api);
      assert.equal(pos.prefundingBalance, String(FUNDING - DELIVER - FEE));
      assert.equal(pos.platformRevenueFromTenant, String(FEE));
      assert.deepEqual(await outboxOf(t, tenantId, id), [
        {
          type: 'payment.settled',
          payload: {
            paymentId: id,
            asset: 'BS',
            amount: String(DELIVER),
            bankReference: p.bank_reference,
            method: 'pago_movil',
            metadata: {},
          },
        },
      ]);
      assert.deepEqual(await delivered(id), ['payment.settled']);
      assert.deepEqual(
        await railSays(id),
        { status: 'settled', bankReference: p.bank_reference, settledAt: clock.now() },
        'the rail says the same',
      );
    });

    it(`fail ${from === 'unknown' ? 'an' : 'a'} ${from} payment: failed with the reason, the charge returned (compensated, fee 0), one payment.failed`, async () => {
      const { api, tenantId } = await tenant();
      const id = await pay(api, nationalId(), from);
      const reason = from === 'submitted' ? 'invalid_destination_account' : undefined;
      const answer = await simulate(api, id, reason ? { outcome: 'fail', reason } : { outcome: 'fail' });
      const expected = reason ?? 'rail_rejected';
      await assertAnswer(api, answer, { from, to: 'failed', reason: expected });
      const p = answer.body;
      assert.equal(p.status, 'failed');
      assert.equal(p.status_reason, expected);
      assert.equal(p.compensated, true);
      assert.equal(p.fee_amount, '0');
      assert.equal(p.bank_reference, null);
      assert.equal(p.settled_at, null);

      const pos = await position(api);
      assert.equal(pos.prefundingBalance, String(FUNDING), 'the whole charge is back');
      assert.equal(pos.platformRevenueFromTenant, '0', 'a failed payout charges no fee');
      const usage = await api.get('/v1/limits/usage');
      assert.equal(usage.body.usage.day_amount, '0', 'the limit usage is given back');
      assert.deepEqual(await outboxOf(t, tenantId, id), [
        {
          type: 'payment.failed',
          payload: {
            paymentId: id,
            asset: 'BS',
            amount: String(DELIVER),
            method: 'pago_movil',
            reason: expected,
            metadata: {},
          },
        },
      ]);
      assert.deepEqual(await delivered(id), ['payment.failed']);
      assert.deepEqual(await railSays(id), { status: 'failed', reason: expected });
    });
  }

  it('reverse a settled payment: reversed, the delivered amount back in the balance, the fee kept, one payment.reversed', async () => {
    const { api, tenantId } = await tenant();
    const id = await pay(api, 'V99990001', 'settled');
    const settled = (await api.get(`/v1/payments/${id}`)).body;
    const answer = await simulate(api, id, { outcome: 'reverse' });
    await assertAnswer(api, answer, { from: 'settled', to: 'reversed', reason: 'returned_by_bank' });
    const p = answer.body;
    assert.equal(p.status, 'reversed');
    assert.equal(p.status_reason, 'returned_by_bank');
    assert.equal(p.bank_reference, settled.bank_reference, 'the settlement is kept');
    assert.equal(p.settled_at, settled.settled_at);
    assert.equal(p.fee_amount, String(FEE));
    assert.equal(p.compensated, false);

    const pos = await position(api);
    assert.equal(pos.prefundingBalance, String(FUNDING - FEE), 'the delivered amount is back, the fee kept');
    assert.equal(pos.platformRevenueFromTenant, String(FEE));
    const events = await outboxOf(t, tenantId, id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.settled', 'payment.reversed'],
    );
    assert.deepEqual(events[1]!.payload, {
      paymentId: id,
      asset: 'BS',
      amount: String(DELIVER),
      bankReference: settled.bank_reference,
      method: 'pago_movil',
      reason: 'returned_by_bank',
      metadata: {},
    });
    assert.deepEqual(await delivered(id), ['payment.settled', 'payment.reversed']);
    assert.deepEqual(await railSays(id), {
      status: 'reversed',
      bankReference: settled.bank_reference,
      reason: 'returned_by_bank',
    });
    const pending = await t.services.rails.test!.pendingNotifications(1_000);
    assert.deepEqual(
      pending.filter((n) => n.reference === id),
      [],
      'no return notification is left to apply again',
    );
  });

  it("settle then reverse by simulation, with a reason: both events, payloads of the rail's shape, the balance net of the fee", async () => {
    const { api, tenantId } = await tenant();
    const id = await pay(api, plainId(), 'submitted');
    const settled = await simulate(api, id, { outcome: 'settle' });
    assert.equal(settled.status, 200, settled.raw);
    clock.advance(1_000);
    const reversed = await simulate(api, id, { outcome: 'reverse', reason: 'beneficiary_mismatch' });
    await assertAnswer(api, reversed, { from: 'settled', to: 'reversed', reason: 'beneficiary_mismatch' });
    const events = await outboxOf(t, tenantId, id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.settled', 'payment.reversed'],
    );
    for (const e of events) assert.deepEqual(Object.keys(e.payload).sort(), PAYLOAD_KEYS[e.type]);
    assert.equal(events[1]!.payload.reason, 'beneficiary_mismatch');
    assert.equal((await position(api)).prefundingBalance, String(FUNDING - FEE));
    assert.deepEqual(await delivered(id), ['payment.settled', 'payment.reversed']);
  });

  describe('the rail agrees afterwards: its scheduled outcomes never apply a second one', () => {
    it('V99990006 settled by simulation stays settled past its scheduled failure, with one event', async () => {
      const { api, tenantId } = await tenant();
      const id = await pay(api, 'V99990006', 'submitted');
      const answer = await simulate(api, id, { outcome: 'settle' });
      assert.equal(answer.status, 200, answer.raw);
      for (const step of [4_000, 60_000]) await advanceAndReap(t, clock, step);
      const p = (await api.get(`/v1/payments/${id}`)).body;
      assert.equal(p.status, 'settled');
      assert.equal(p.bank_reference, answer.body.bank_reference);
      assert.deepEqual(
        (await outboxOf(t, tenantId, id)).map((e) => e.type),
        ['payment.settled'],
      );
      assert.equal((await railSays(id)).status, 'settled', 'the scheduled failure is gone');
      assert.equal((await position(api)).prefundingBalance, String(FUNDING - DELIVER - FEE));
      assert.deepEqual(await delivered(id), ['payment.settled']);
    });

    it('V99990007 settled by simulation is not returned later: no return is scheduled any more', async () => {
      const { api, tenantId } = await tenant();
      const id = await pay(api, 'V99990007', 'submitted');
      assert.equal((await simulate(api, id, { outcome: 'settle' })).status, 200);
      for (const step of [4_000, 11_000, 60_000]) await advanceAndReap(t, clock, step);
      assert.equal((await api.get(`/v1/payments/${id}`)).body.status, 'settled');
      assert.deepEqual(
        (await outboxOf(t, tenantId, id)).map((e) => e.type),
        ['payment.settled'],
      );
      assert.equal((await railSays(id)).status, 'settled');
      assert.deepEqual(
        (await t.services.rails.test!.pendingNotifications(1_000)).filter((n) => n.reference === id),
        [],
      );
    });

    it('a default payment failed by simulation is not settled after the delay', async () => {
      const { api, tenantId } = await tenant();
      const id = await pay(api, plainId(), 'submitted');
      assert.equal((await simulate(api, id, { outcome: 'fail', reason: 'bank_unreachable' })).status, 200);
      for (const step of [4_000, 60_000]) await advanceAndReap(t, clock, step);
      assert.equal((await api.get(`/v1/payments/${id}`)).body.status, 'failed');
      assert.deepEqual(
        (await outboxOf(t, tenantId, id)).map((e) => e.type),
        ['payment.failed'],
      );
      assert.deepEqual(await railSays(id), { status: 'failed', reason: 'bank_unreachable' });
      assert.equal((await position(api)).prefundingBalance, String(FUNDING));
    });

    it('V99990007 settled by the rail and returned by simulation before its scheduled return: one reversal', async () => {
      const { api, tenantId } = await tenant();
      const id = await pay(api, 'V99990007', 'submitted');
      await advanceAndReap(t, clock, 4_000);
      assert.equal((await api.get(`/v1/payments/${id}`)).body.status, 'settled');
      assert.equal(
        (await simulate(api, id, { outcome: 'reverse', reason: 'invalid_destination_account' })).status,
        200,
      );
      for (const step of [11_000, 60_000]) await advanceAndReap(t, clock, step);
      const p = (await api.get(`/v1/payments/${id}`)).body;
      assert.equal(p.status, 'reversed');
      assert.equal(p.status_reason, 'invalid_destination_account');
      assert.deepEqual(
        (await outboxOf(t, tenantId, id)).map((e) => e.type),
        ['payment.settled', 'payment.reversed'],
      );
      assert.equal((await position(api)).prefundingBalance, String(FUNDING - FEE), 'returned once');
      assert.deepEqual(await railSays(id), {
        status: 'reversed',
        bankReference: p.bank_reference,
        reason: 'invalid_destination_account',
      });
    });

    it('a transfer the rail has no record of yet is recorded with the simulated outcome', async () => {
      const { api } = await tenant();
      const id = await pay(api, plainId(), 'submitted');
      // As if the payout path had committed and not yet called the rail.
      await t.db.query('DELETE FROM sandbox_rail_transfers WHERE reference = $1', [id]);
      assert.deepEqual(await railSays(id), { status: 'not_found' });
      const answer = await simulate(api, id, { outcome: 'settle' });
      assert.equal(answer.status, 200, answer.raw);
      assert.deepEqual(await railSays(id), {
        status: 'settled',
        bankReference: answer.body.bank_reference,
        settledAt: clock.now(),
      });
    });
  });

  describe('refusals change nothing', () => {
    /** Everything a refused call could have touched, to compare before and after. */
    async function snapshot(api: Client, tenantId: string, id: string) {
      return {
        payment: (await api.get(`/v1/payments/${id}`)).body,
        events: await outboxOf(t, tenantId, id),
        position: await position(api),
        rail: await railSays(id),
      };
    }

    it('409 payment_already_resolved: settle or fail of a settled, failed or reversed payment', async () => {
      const { api, tenantId } = await tenant();
      const settled = await pay(api, 'V99990001', 'settled');
      const failed = await pay(api, 'V99990004', 'failed');
      const reversed = await pay(api, 'V99990001', 'settled');
      assert.equal((await simulate(api, reversed, { outcome: 'reverse' })).status, 200);
      for (const [id, status] of [
        [settled, 'settled'],
        [failed, 'failed'],
        [reversed, 'reversed'],
      ] as const) {
        const before = await snapshot(api, tenantId, id);
        for (const body of [
          { outcome: 'settle' },
          { outcome: 'fail' },
          { outcome: 'fail', reason: 'bank_unreachable' },
        ]) {
          const answer = await simulate(api, id, body);
          assertEnvelope(assert, answer, 409, 'payment_already_resolved');
          assert.equal(answer.body.error.type, 'invalid_request_error');
          assert.deepEqual(answer.body.error.meta, { status });
        }
        assert.deepEqual(await snapshot(api, tenantId, id), before, `${status}: nothing changed`);
      }
    });

    it('409 payment_not_settled: reverse of a submitted, unknown, failed or reversed payment', async () => {
      const { api, tenantId } = await tenant();
      const submitted = await pay(api, plainId(), 'submitted');
      const unknown = await pay(api, 'V99990002', 'unknown');
      const failed = await pay(api, 'V99990005', 'failed');
      const reversed = await pay(api, 'V99990001', 'settled');
      assert.equal((await simulate(api, reversed, { outcome: 'reverse' })).status, 200);
      for (const [id, status] of [
        [submitted, 'submitted'],
        [unknown, 'unknown'],
        [failed, 'failed'],
        [reversed, 'reversed'],
      ] as const) {
        const before = await snapshot(api, tenantId, id);
        const answer = await simulate(api, id, { outcome: 'reverse', reason: 'returned_by_bank' });
        assertEnvelope(assert, answer, 409, 'payment_not_settled');
        assert.equal(answer.body.error.type, 'invalid_request_error');
        assert.deepEqual(answer.body.error.meta, { status });
        assert.deepEqual(await snapshot(api, tenantId, id), before, `${status}: nothing changed`);
      }
    });

    it('404 for a live key, another tenant and an unknown id; 403 without payments:write; 401 without a key', async () => {
      const { api, tenantId } = await tenant();
      const id = await pay(api, plainId(), 'submitted');
      const before = await snapshot(api, tenantId, id);
      const admin = client(t.app, t.platformKey);
      const live = await admin.post(`/v1/admin/tenants/${tenantId}/api-keys`, { mode: 'live' });
      assert.equal(live.status, 201, live.raw);
      assertEnvelope(
        assert,
        await simulate(client(t.app, live.body.key), id, { outcome: 'settle' }),
        404,
        'resource_not_found',
      );
      const other = await createTenant(t, { name: 'Otra' });
      assertEnvelope(assert, await simulate(other.api, id, { outcome: 'settle' }), 404, 'resource_not_found');
      assertEnvelope(
        assert,
        await simulate(api, '6f1c2a4e-1111-4c2b-9d3e-000000000099', { outcome: 'settle' }),
        404,
        'resource_not_found',
      );
      const readOnly = await createTenant(t, { scopes: ['payments:read'] });
      const forbidden = await simulate(readOnly.api, id, { outcome: 'settle' });
      assertEnvelope(assert, forbidden, 403, 'scope_missing');
      assert.deepEqual(forbidden.body.error.meta, { required: ['payments:write'] });
      assertEnvelope(assert, await simulate(client(t.app), id, { outcome: 'settle' }), 401, 'api_key_missing');
      assert.deepEqual(await snapshot(api, tenantId, id), before);
    });

    it('400 validation_failed naming the field', async () => {
      const { api, tenantId } = await tenant();
      const id = await pay(api, plainId(), 'submitted');
      const before = await snapshot(api, tenantId, id);
      const cases: Array<[unknown, string]> = [
        [{}, 'outcome'],
        [{ outcome: 'refund' }, 'outcome'],
        [{ outcome: 'settle', reason: 'rail_rejected' }, 'reason'],
        [{ outcome: 'fail', reason: 'not_a_reason' }, 'reason'],
        [{ outcome: 'fail', reason: 'returned_by_bank' }, 'reason'],
        [{ outcome: 'fail', reason: 'amount_below_rail_minimum' }, 'reason'],
        [{ outcome: 'reverse', reason: 42 }, 'reason'],
        [{ outcome: 'settle', bankReference: '123456789012' }, 'bankReference'],
      ];
      for (const [body, field] of cases) {
        const answer = await simulate(api, id, body);
        assertEnvelope(assert, answer, 400, 'validation_failed');
        assert.ok(
          answer.body.error.meta.errors.some((e: any) => e.field === field),
          `${JSON.stringify(body)}: ${answer.raw}`,
        );
      }
      assertEnvelope(assert, await simulate(api, 'not-a-uuid', { outcome: 'settle' }), 400, 'validation_failed');
      // Validation comes before existence: an unknown id with a bad body is still a 400.
      assertEnvelope(
        assert,
        await simulate(api, '6f1c2a4e-1111-4c2b-9d3e-000000000099', { outcome: 'settle', reason: 'rail_rejected' }),
        400,
        'validation_failed',
      );
      assert.deepEqual(await snapshot(api, tenantId, id), before);
    });
  });

  it('concurrent simulations of one payment: one 200, the rest 409, one outcome event', async () => {
    const { api, tenantId } = await tenant();
    for (const bodies of [
      [{ outcome: 'settle' }, { outcome: 'settle' }],
      [{ outcome: 'settle' }, { outcome: 'fail' }],
      [
        { outcome: 'fail' },
        { outcome: 'fail', reason: 'bank_unreachable' },
        { outcome: 'settle' },
        { outcome: 'settle' },
      ],
    ]) {
      const id = await pay(api, plainId(), 'submitted');
      const answers = await Promise.all(bodies.map((body) => simulate(api, id, body)));
      const ok = answers.filter((a) => a.status === 200);
      assert.equal(ok.length, 1, answers.map((a) => a.raw).join('\n'));
      for (const a of answers) if (a.status !== 200) assertEnvelope(assert, a, 409, 'payment_already_resolved');
      const events = await outboxOf(t, tenantId, id);
      assert.equal(events.length, 1);
      assert.equal(events[0]!.type, ok[0]!.body.status === 'settled' ? 'payment.settled' : 'payment.failed');
      assert.equal((await railSays(id)).status, ok[0]!.body.status);
    }
  });

  it('a simulation and the reaper on the same due payment: one outcome, the rail agreeing with it', async () => {
    const { api, tenantId } = await tenant();
    const ids = [await pay(api, 'V99990006', 'submitted'), await pay(api, plainId(), 'submitted')];
    clock.advance(4_000);
    const reaper = reaperOf(t);
    const [answers] = await Promise.all([
      Promise.all(ids.map((id) => simulate(api, id, { outcome: 'fail', reason: 'rail_rejected' }))),
      reaper.runOnce(),
    ]);
    for (const [i, id] of ids.entries()) {
      const p = (await api.get(`/v1/payments/${id}`)).body;
      const events = await outboxOf(t, tenantId, id);
      assert.deepEqual(
        events.map((e) => e.type),
        [`payment.${p.status}`],
        'one outcome event, the one the payment shows',
      );
      if (answers[i]!.status === 200) assert.deepEqual([p.status, p.status_reason], ['failed', 'rail_rejected']);
      else assertEnvelope(assert, answers[i]!, 409, 'payment_already_resolved');
      assert.equal((await railSays(id)).status, p.status, 'the rail says what the payment became');
    }
  });
});

describe(
  'sandbox simulation from several instances on PostgreSQL',
  {
    skip:
      ENGINE !== 'postgres'
        ? 'needs a PostgreSQL server (DATABASE_URL): the embedded engine has one connection, so two instances cannot race'
        : false,
  },
  () => {
    let instances: Instances;
    let apps: TestApp[];
    let clock: ManualClock;

    before(async () => {
      clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
      instances = await startInstances(2, { clock, env: ENV });
      apps = instances.apps;
    });
    after(async () => {
      assert.equal(await instances.close(), 0, 'no deadlock was ever detected on this database');
    });

    it('two instances simulate the same payments at once: per payment one 200, one 409, one event, the ledger balanced', async () => {
      // The last instance started holds the platform key.
      const main = apps[1]!;
      const funded = await fundedTenant(main, FUNDING);
      const other = client(apps[0]!.app, funded.key);
      const ids: string[] = [];
      for (let i = 0; i < 8; i += 1) ids.push(await pay(funded.api, plainId(), 'submitted'));
      const pairs = await Promise.all(
        ids.map((id, i) =>
          Promise.all([
            simulate(funded.api, id, { outcome: i % 2 === 0 ? 'settle' : 'fail' }),
            simulate(other, id, { outcome: i % 3 === 0 ? 'fail' : 'settle' }),
          ]),
        ),
      );
      let expected = FUNDING;
      for (const [i, pair] of pairs.entries()) {
        const ok = pair.filter((a) => a.status === 200);
        assert.equal(ok.length, 1, pair.map((a) => a.raw).join('\n'));
        const refused = pair.find((a) => a.status !== 200)!;
        assertEnvelope(assert, refused, 409, 'payment_already_resolved');
        const events = await outboxOf(main, funded.tenantId, ids[i]!);
        assert.equal(events.length, 1);
        const status = ok[0]!.body.status;
        assert.equal(events[0]!.type, `payment.${status}`);
        assert.equal(refused.body.error.meta.status, status);
        assert.equal((await apps[0]!.services.rails.test!.lookup(ids[i]!, 'test')).status, status);
        if (status === 'settled') expected -= DELIVER + FEE;
      }
      assert.equal((await position(funded.api)).prefundingBalance, String(expected));
      await assertLedgerBalanced(main);
    });

    it("a simulated return races the rail's own return of a V99990007 payment on another instance: one reversal", async () => {
      const main = apps[1]!;
      const funded = await fundedTenant(main, FUNDING);
      const id = await pay(funded.api, 'V99990007', 'submitted');
      await advanceAndReap(main, clock, 4_000);
      assert.equal((await funded.api.get(`/v1/payments/${id}`)).body.status, 'settled');
      clock.advance(11_000);
      const [answer] = await Promise.all([
        simulate(funded.api, id, { outcome: 'reverse' }),
        reaperOf(apps[0]!).runOnce(),
      ]);
      await reaperOf(apps[0]!).runOnce();
      if (answer.status !== 200) assertEnvelope(assert, answer, 409, 'payment_not_settled');
      const events = await outboxOf(main, funded.tenantId, id);
      assert.deepEqual(
        events.map((e) => e.type),
        ['payment.settled', 'payment.reversed'],
      );
      assert.equal((await position(funded.api)).prefundingBalance, String(FUNDING - FEE), 'returned once');
      assert.deepEqual(
        (await main.services.rails.test!.pendingNotifications(1_000)).filter((n) => n.reference === id),
        [],
      );
      await assertLedgerBalanced(main);
    });
  },
);
