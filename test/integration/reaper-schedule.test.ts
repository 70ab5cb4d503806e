// Between passes the reaper sleeps until the next payment falls due (never less than
// REAPER_PAUSE_MIN_MS, never more than its interval), not a whole interval after a pass that
// just missed it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nextResolutionDue } from '../../src/db/repositories/payments.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { firstLookMs } from '../../src/services/payouts.ts';
import { REAPER_PAUSE_MIN_MS } from '../../src/workers/reaper.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';
import { beneficiary, fundedTenant, payout, reaperOf } from '../support/payouts.ts';

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
    const { rows } = await t.db.query<{ next_check_at: Date; created_at: Date }>('SELECT next_check_at, created_at FROM payments WHERE id = $1', [made.body.id]);
    const dueAt = rows[0]!.next_check_at;
    const { sandboxRailTimeoutMs: railTimeoutMs, reaperIntervalMs, sandboxSettleDelayMs } = t.config;
    assert.equal(
      dueAt.getTime() - rows[0]!.created_at.getTime(),
      firstLookMs({ railTimeoutMs, reaperIntervalMs, idempotencyTtlMs: 0 }, sandboxSettleDelayMs),
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
