// A rail that is down never fails a payout for a reason that is not true. With the only live rail's
// breaker open (its connections refused), a payout is accepted and charged and waits `pending`
// (`awaiting_rail`), nothing sent; the reaper sends it once the rail's half-open probe admits it, in
// arrival order, once each; past RAIL_QUEUE_MAX_AGE_S a waiting payout fails `bank_unreachable` with
// its money back and one `payment.failed`. The breaker runs with its default settings.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { Reaper } from '../../src/workers/reaper.ts';
import { FixtureRail } from '../support/fixture-rail.ts';
import { client, startTestApp, type Client, type TestApp } from '../support/harness.ts';
import { assertLedgerBalanced, beneficiary, fundedTenant, payout, position } from '../support/payouts.ts';

describe('the rail queue: payouts wait for a rail that is down', () => {
  let t: TestApp;
  let live: Client;
  let tenantId: string;
  const clock = new ManualClock('2026-03-02T15:00:00Z');
  /** The only rail serving live mode. */
  const bank = new FixtureRail('bank');
  let reaper: Reaper;

  const breaker = () => t.services.railRegistry.named('bank')!.breaker;
  const shown = async (id: string) => (await live.get(`/v1/payments/${id}`)).body;
  /** Refused connections in a row open the bank's breaker (RAIL_BREAKER_FAILURES, by default 5). */
  const openBreaker = async () => {
    bank.behaviour = 'refuse';
    for (let i = 0; i < t.config.railBreakerFailures && breaker().state === 'closed'; i += 1) {
      const refused = await payout(live, { beneficiary: beneficiary() });
      assert.equal(refused.status, 201, refused.raw);
    }
    assert.equal(breaker().state, 'open');
    bank.behaviour = 'ok';
  };

  before(async () => {
    t = await startTestApp({ clock, deps: { connectors: [bank] } });
    const admin = client(t.app, t.platformKey);
    ({ tenantId } = await fundedTenant(t));
    const key = await admin.post(`/v1/admin/tenants/${tenantId}/api-keys`, { mode: 'live' });
    assert.equal(key.status, 201, key.raw);
    const funded = await admin.post(
      `/v1/admin/tenants/${tenantId}/fundings`,
      { mode: 'live', asset: 'BS', amount: 100_000_000 },
      { 'idempotency-key': `fund-live-${tenantId}` },
    );
    assert.equal(funded.status, 201, funded.raw);
    live = client(t.app, key.body.key);
    reaper = new Reaper(t.db, clock, t.services.railRegistry, t.services.outcomes, {
      intervalMs: 1000,
      railTimeoutMs: t.config.sandboxRailTimeoutMs,
      railQueueMaxAgeMs: t.config.railQueueMaxAgeS * 1000,
    });
  });
  after(async () => {
    await t?.close();
  });

  it('while the breaker is open a payout is accepted, charged and waits; the probe admits it and the reaper sends it once', async () => {
    await openBreaker();
    const before = BigInt((await position(live)).prefundingBalance);
    const made = await Promise.all([1, 2, 3].map(() => payout(live, { beneficiary: beneficiary() })));
    for (const answer of made) {
      assert.equal(answer.status, 201, answer.raw);
      assert.deepEqual([answer.body.status, answer.body.reason], ['pending', null], answer.raw);
      assert.match(answer.body.message, /waiting for a rail/);
    }
    const ids = made.map((answer) => answer.body.id as string);
    for (const id of ids) assert.equal((await shown(id)).status_reason, 'awaiting_rail');
    const charged = before - BigInt((await position(live)).prefundingBalance);
    assert.ok(charged > 0n, 'charged as any payout: waiting can never overdraw');
    assert.deepEqual(
      ids.filter((id) => bank.received.includes(id)),
      [],
      'nothing reached the rail',
    );

    // Still open: the reaper leaves them waiting, and sends nothing.
    await reaper.runOnce();
    for (const id of ids) assert.equal((await shown(id)).status, 'pending');

    // The open while is over: the next pass's probe finds the bank healthy and sends them, in arrival order.
    clock.advance(t.config.railBreakerOpenMs);
    await reaper.runOnce();
    assert.equal(breaker().state, 'closed');
    const sent = bank.received.filter((reference) => ids.includes(reference));
    assert.deepEqual(sent.sort(), [...ids].sort(), 'each sent once');
    for (const id of ids) assert.equal((await shown(id)).status, 'submitted');
    await assertLedgerBalanced(t);
  });

  it('past RAIL_QUEUE_MAX_AGE_S a waiting payout fails bank_unreachable with its money back and one payment.failed', async () => {
    await openBreaker();
    bank.healthy = false;
    const before = BigInt((await position(live)).prefundingBalance);
    const waiting = await payout(live, { beneficiary: beneficiary() });
    assert.equal(waiting.body.status, 'pending', waiting.raw);
    assert.ok(BigInt((await position(live)).prefundingBalance) < before);

    clock.advance(t.config.railQueueMaxAgeS * 1000);
    await reaper.runOnce();
    const failed = await shown(waiting.body.id);
    assert.deepEqual([failed.status, failed.status_reason], ['failed', 'bank_unreachable']);
    assert.equal(BigInt((await position(live)).prefundingBalance), before, 'everything returned');
    assert.equal(bank.received.includes(waiting.body.id), false, 'never sent');
    const { rows } = await t.db.query<{ type: string }>(
      `SELECT event_type AS type FROM outbox_events WHERE tenant_id = $1 AND aggregate_id = $2`,
      [tenantId, waiting.body.id],
    );
    assert.deepEqual(
      rows.map((row) => row.type),
      ['payment.failed'],
    );
    await assertLedgerBalanced(t);
    bank.healthy = true;
  });
});
