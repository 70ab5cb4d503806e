// Between passes the reaper sleeps until the next payment falls due (never less than
// REAPER_PAUSE_MIN_MS, never more than its interval), not a whole interval after a pass that
// just missed it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nextResolutionDue } from '../../src/db/repositories/payments.ts';
import { ManualClock } from '../support/clock.ts';
import { firstLookMs, sendEndsMs } from '../../src/domain/send-schedule.ts';
import type { RailAdapter, RailTransfer } from '../../src/rails/rail.ts';
import { REAPER_PAUSE_MIN_MS } from '../../src/workers/reaper.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';
import { beneficiary, fundedTenant, payout, reaperOf } from '../support/payouts.ts';
import { until } from '../support/until.ts';

/** Bound of the wait for the payout's batch to commit while its rail call is held. */
const COMMIT_WAIT_MS = 10_000;

describe('when the reaper looks again', () => {
  let t: TestApp;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(new Date('2026-11-26T15:00:00Z'));
    t = await startTestApp({ clock });
  });
  after(async () => {
    await t.close();
  });

  it('after a pass that found nothing due: when the first unresolved payment falls due, then never once all are resolved', async () => {
    assert.equal(await nextResolutionDue(t.db), undefined, 'nothing unresolved yet');
    const { api } = await fundedTenant(t);
    const made = await payout(api, { beneficiary: beneficiary('V12345678') });
    assert.equal(made.body.status, 'submitted', made.raw);
    const { rows } = await t.db.query<{ next_check_at: Date; created_at: Date }>(
      'SELECT next_check_at, created_at FROM payments WHERE id = $1',
      [made.body.id],
    );
    const dueAt = rows[0]!.next_check_at;
    const { sandboxRailTimeoutMs: railTimeoutMs, reaperIntervalMs, sandboxSettleDelayMs } = t.config;
    assert.equal(
      dueAt.getTime() - rows[0]!.created_at.getTime(),
      firstLookMs({ railTimeoutMs, reaperIntervalMs }, sandboxSettleDelayMs),
      'first asked once the sandbox usually has the outcome',
    );
    assert.deepEqual(await nextResolutionDue(t.db), dueAt);

    const reaper = reaperOf(t);
    assert.equal(await reaper.runOnce(), dueAt.getTime() - clock.now().getTime(), 'asleep until it is due');
    clock.set(new Date(dueAt.getTime() - 10));
    assert.equal(await reaper.runOnce(), REAPER_PAUSE_MIN_MS, 'never a busy loop');

    // Due, and settled by then at the rail: resolved, nothing is left to look at.
    clock.set(new Date(dueAt.getTime() + t.config.sandboxSettleDelayMs));
    assert.equal(await reaper.runOnce(), false);
    assert.equal((await api.get(`/v1/payments/${made.body.id}`)).body.status, 'settled');
    assert.equal(await nextResolutionDue(t.db), undefined);
  });
});

describe('a first look that comes before the payout path has sent', () => {
  let t: TestApp;
  let clock: ManualClock;
  // A rail whose answer to the payout path's send is held until the test releases it; until the send
  // arrives it has never heard of the transfer.
  const sends: RailTransfer[] = [];
  let release: () => void = () => undefined;
  const received = new Set<string>();
  const rail: RailAdapter = {
    name: 'held',
    resolvesWithinMs: 100,
    instrumentAvailable: async () => true,
    submit: async (transfer) => {
      sends.push(transfer);
      await new Promise<void>((resolve) => (release = resolve));
      received.add(transfer.reference);
      return { status: 'processing' };
    },
    lookup: async (reference) => (received.has(reference) ? { status: 'processing' } : { status: 'not_found' }),
    pendingNotifications: async () => [],
    acknowledgeNotification: async () => undefined,
    banks: async () => [],
    health: async () => ({ ok: true }),
  };
  before(async () => {
    clock = new ManualClock(new Date('2026-11-27T15:00:00Z'));
    t = await startTestApp({ clock, deps: { testRail: rail } });
  });
  after(async () => {
    await t.close();
  });

  it('only asks: a transfer the rail has not heard of is left to the payout path until its send has ended', async () => {
    const { api } = await fundedTenant(t);
    const answer = payout(api, { beneficiary: beneficiary('V12345679') });
    const row = async () =>
      (
        await t.db.query<{ id: string; created_at: Date; next_check_at: Date; check_attempts: number; status: string }>(
          `SELECT id, created_at, next_check_at, check_attempts, status FROM payments WHERE beneficiary->>'nationalId' = 'V12345679'`,
        )
      ).rows[0];
    await until('the payout path sending', () => sends.length > 0, { timeoutMs: COMMIT_WAIT_MS, intervalMs: 20 });
    assert.equal(sends.length, 1, 'the payout path is sending');
    const committed = (await row())!;
    const settings = {
      railTimeoutMs: t.config.sandboxRailTimeoutMs,
      reaperIntervalMs: t.config.reaperIntervalMs,
      idempotencyTtlMs: 0,
    };
    assert.equal(
      committed.next_check_at.getTime() - committed.created_at.getTime(),
      100 + 250,
      'first look soon after the rail usually resolves',
    );
    assert.ok(firstLookMs(settings, 100) < sendEndsMs(settings), 'before the send has ended');

    clock.set(committed.next_check_at);
    await reaperOf(t).runOnce();
    assert.equal(sends.length, 1, 'the reaper did not send it');
    const deferred = (await row())!;
    assert.equal(deferred.status, 'submitted');
    assert.equal(
      deferred.next_check_at.getTime(),
      committed.created_at.getTime() + sendEndsMs(settings),
      'asked again once the send has ended',
    );
    assert.equal(deferred.check_attempts, 0, 'the deferred question is not counted');

    release();
    const made = await answer;
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, 'submitted');
    clock.set(deferred.next_check_at);
    await reaperOf(t).runOnce();
    assert.equal(sends.length, 1, 'received: asked, never sent again');
    assert.equal((await row())!.check_attempts, 1);
  });
});

describe('a short sandbox settle delay is a short wait', () => {
  for (const delay of [0, 20]) {
    it(`SANDBOX_SETTLE_DELAY_MS=${delay}: the payout answers as with any delay, and the reaper resolves it ${delay + 250} ms later`, async () => {
      const clock = new ManualClock(new Date('2026-11-27T16:00:00Z'));
      const t = await startTestApp({ clock, env: { SANDBOX_SETTLE_DELAY_MS: String(delay) } });
      try {
        const { api } = await fundedTenant(t);
        const expected: Array<[string, string, string]> = [
          ['V12345670', 'submitted', 'settled'],
          ['V99990002', 'unknown', 'settled'],
          ['V99990003', 'unknown', 'failed'],
          ['V99990006', 'submitted', 'failed'],
        ];
        const made = [];
        for (const [nationalId, answered] of expected) {
          const response = await payout(api, { beneficiary: beneficiary(nationalId) });
          assert.equal(response.body.status, answered, `${nationalId}: ${response.raw}`);
          made.push(response.body.id as string);
        }
        clock.advance(delay + 250);
        await reaperOf(t).runOnce();
        for (const [i, [nationalId, , resolved]] of expected.entries()) {
          assert.equal((await api.get(`/v1/payments/${made[i]}`)).body.status, resolved, nationalId);
        }
      } finally {
        await t.close();
      }
    });
  }
});
