// A live tenant paying through the HTTP bank connector while the gateway lies the way real bank
// integrations do: an answer about another reference, an amount other than ours, an amount we cannot
// read (a JSON number, "1500.00"), a settlement dated 2099, a send refused with a 400 at every try.
// Nothing it says is believed until it passes the checks: each lie opens its anomaly, no payment moves
// on it, and once the gateway tells the truth our books equal its record. One payout per lie.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RAIL_CLOCK_SKEW_MS } from '../../src/domain/rail-answer-check.ts';
import { RESEND_QUESTIONS_MAX } from '../../src/domain/send-schedule.ts';
import { serviceWithGateway, startGatewaySimulator, type GatewaySimulator } from '../support/gateway-simulator.ts';
import { client, createTenant, type TestApp } from '../support/harness.ts';
import { assertLedgerBalanced, beneficiary, idempotencyKey as newKey, payout, reaperOf } from '../support/payouts.ts';
import { until } from '../support/until.ts';

/** Short, so the reaper's backoff reaches its last re-send within a test's bound (1 s at the defaults). */
const REAPER_INTERVAL_MS = 20;

describe('HTTP bank connector: answers the gateway gets wrong are checked, never believed', () => {
  let sim: GatewaySimulator;
  let t: TestApp;
  let api: ReturnType<typeof client>;
  const made: string[] = [];

  before(async () => {
    sim = await startGatewaySimulator({ settleDelayMs: 100 });
    ({ t } = await serviceWithGateway(sim, {
      env: { SANDBOX_RAIL_TIMEOUT_MS: '1000', REAPER_INTERVAL_MS: String(REAPER_INTERVAL_MS) },
    }));
    const tenant = await createTenant(t, { mode: 'live' });
    api = tenant.api;
    const funded = await client(t.app, t.platformKey).post(
      `/v1/admin/tenants/${tenant.tenantId}/fundings`,
      { mode: 'live', asset: 'BS', amount: 1_000_000_000 },
      { 'idempotency-key': newKey() },
    );
    assert.equal(funded.status, 201, funded.raw);
  });

  after(async () => {
    // The gateway first: a callback in flight would hold the app's close for a keep-alive.
    await sim?.close();
    await t?.close();
  });

  const lie = (nationalId: string, body: Record<string, unknown>) =>
    sim.control('POST', `/_control/tamper/nid:${nationalId}`, body);
  const truth = (nationalId: string) => sim.control('DELETE', `/_control/tamper/nid:${nationalId}`);
  const statusOf = async (id: string) =>
    (
      await t.db.query<{ status: string; settled_at: Date | null }>(
        `SELECT status, settled_at FROM payments WHERE id = $1`,
        [id],
      )
    ).rows[0]!;
  const anomalyKinds = async (id: string) =>
    (
      await t.db.query<{ kind: string }>(`SELECT DISTINCT kind FROM anomalies WHERE payment_id = $1 ORDER BY kind`, [
        id,
      ])
    ).rows.map((r) => r.kind);
  const reapUntil = <T>(what: string, probe: () => Promise<T | false | undefined>) =>
    until(what, async () => {
      await reaperOf(t).runOnce();
      return probe();
    });
  const paid = async (nationalId: string) => {
    const answer = await payout(api, { beneficiary: beneficiary(nationalId) }, 150_000);
    assert.equal(answer.status, 201, answer.raw);
    made.push(answer.body.id);
    return answer.body as { id: string; status: string };
  };

  it('a send answered about another reference: unknown, reference_mismatch; settled once the gateway answers about ours', async () => {
    await lie('V31000001', { with: { reference: '7f1c2a4e-0000-4000-8000-00000000dead' } });
    const payment = await paid('V31000001');
    assert.equal(payment.status, 'unknown', 'not believed: the payout waits for an answer about its own reference');
    await reapUntil('the anomaly', async () => (await anomalyKinds(payment.id)).includes('reference_mismatch'));
    assert.notEqual((await statusOf(payment.id)).status, 'settled', 'the lie moved nothing');
    await truth('V31000001');
    await reapUntil('settled', async () => (await statusOf(payment.id)).status === 'settled');
  });

  it('a status answer with an amount other than ours: amount_mismatch, the payment does not settle on it', async () => {
    await sim.control('POST', '/_control/scenarios/nid:V31000002', { kind: 'processing' });
    const payment = await paid('V31000002');
    await lie('V31000002', { with: { amountMinor: '1' } });
    await sim.control('POST', `/_control/transfers/${payment.id}/outcome`, { status: 'SETTLED' });
    await reapUntil('the anomaly', async () => (await anomalyKinds(payment.id)).includes('amount_mismatch'));
    assert.notEqual((await statusOf(payment.id)).status, 'settled');
    await truth('V31000002');
    await reapUntil('settled', async () => (await statusOf(payment.id)).status === 'settled');
  });

  for (const [nationalId, written] of [
    ['V31000003', 150_000],
    ['V31000004', '1500.00'],
  ] as const) {
    it(`an amount written ${JSON.stringify(written)} in callbacks and answers is unreadable, never ignored`, async () => {
      await sim.control('POST', `/_control/scenarios/nid:${nationalId}`, { kind: 'processing' });
      const payment = await paid(nationalId);
      await lie(nationalId, { with: { amountMinor: written } });
      await sim.control('POST', `/_control/transfers/${payment.id}/outcome`, { status: 'SETTLED' });
      await reapUntil('the anomaly', async () => (await anomalyKinds(payment.id)).includes('unreadable_answer'));
      assert.notEqual((await statusOf(payment.id)).status, 'settled', 'settled on an amount nobody read');
      await truth(nationalId);
      await reapUntil('settled', async () => (await statusOf(payment.id)).status === 'settled');
    });
  }

  it('a settlement dated 2099 settles at our own time and opens implausible_settled_at', async () => {
    await lie('V31000005', { with: { settledAt: '2099-01-01T00:00:00.000Z' } });
    const payment = await paid('V31000005');
    const settled = await reapUntil('settled', async () => {
      const row = await statusOf(payment.id);
      return row.status === 'settled' && row;
    });
    assert.ok(
      settled.settled_at!.getTime() <= Date.now() + RAIL_CLOCK_SKEW_MS,
      `settled_at ${settled.settled_at!.toISOString()} is ours, not 2099`,
    );
    assert.deepEqual(await anomalyKinds(payment.id), ['implausible_settled_at']);
    const shown = (await api.get(`/v1/payments/${payment.id}`)).body;
    assert.ok(!String(shown.settledAt ?? shown.settled_at).startsWith('2099'), JSON.stringify(shown));
  });

  it(`a send refused with a 400 at every try: sent at most ${1 + RESEND_QUESTIONS_MAX} times, then resend_exhausted, and no more`, async () => {
    await sim.control('POST', '/_control/faults', { refuseSendsWith: 400 });
    const refusedBefore = (await sim.control<{ refusedSends: number }>('GET', '/_control/state')).refusedSends;
    try {
      const payment = await paid('V31000006');
      assert.equal(payment.status, 'unknown', 'a 4xx the protocol does not define leaves the fate unknown');
      await reapUntil('resend_exhausted', async () => (await anomalyKinds(payment.id)).includes('resend_exhausted'));
      const refused =
        (await sim.control<{ refusedSends: number }>('GET', '/_control/state')).refusedSends - refusedBefore;
      assert.ok(refused >= 2 && refused <= 1 + RESEND_QUESTIONS_MAX, `${refused} sends`);
      for (let i = 0; i < 5; i += 1) await reaperOf(t).runOnce();
      const after =
        (await sim.control<{ refusedSends: number }>('GET', '/_control/state')).refusedSends - refusedBefore;
      assert.equal(after, refused, 'no send after the anomaly');
      assert.equal((await statusOf(payment.id)).status, 'unknown', 'the money stays held until a person finds out');
      made.pop(); // never at the gateway: not in its record
    } finally {
      await sim.control('POST', '/_control/faults', { refuseSendsWith: 0 });
    }
  });

  it("our books equal the gateway's record: every payment it paid is settled here, nothing else", async () => {
    const record = new Map(
      (
        await sim.control<{ data: Array<{ reference: string; status: string }> }>('GET', '/_control/transfers')
      ).data.map((r) => [r.reference, r.status]),
    );
    for (const id of made)
      assert.equal(
        (await statusOf(id)).status === 'settled',
        record.get(id) === 'SETTLED',
        `payment ${id}: ours ${(await statusOf(id)).status}, the gateway's ${record.get(id)}`,
      );
    await assertLedgerBalanced(t);
  });
});
