// A rail that never answers a question must not hold the reaper: every question is bounded by the
// rail timeout, and what was not answered is asked again when its lease expires.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { ManualClock } from '../support/clock.ts';
import { MoneyMetrics } from '../../src/services/money-metrics.ts';
import type { RailAdapter } from '../../src/rails/rail.ts';
import { RailQuestionTimeout } from '../../src/rails/questions.ts';
import { Reaper } from '../../src/workers/reaper.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';
import { beneficiary, fundedTenant, payout, railLike } from '../support/payouts.ts';

const RAIL_TIMEOUT_MS = 200;
/**
 * How long a pass held by a silent question may take: the rail timeout, and the pass's own database
 * work on a loaded machine. Unbounded, the pass would never end (the silent rail never answers).
 */
const PASS_BOUND_MS = RAIL_TIMEOUT_MS + 5_000;
const never = <T>() => new Promise<T>(() => undefined);

describe('the reaper and a rail that never answers', () => {
  let t: TestApp;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(new Date('2026-11-26T15:00:00Z'));
    t = await startTestApp({ clock, env: { SANDBOX_SETTLE_DELAY_MS: '1000' } });
  });
  after(async () => {
    await t.close();
  });

  /** The sandbox rail, except for the questions `silent` names, which never get an answer. */
  function railSilentOn(silent: { lookups?: boolean; notifications?: boolean }): RailAdapter {
    const sandbox = t.services.rails.test;
    return railLike(sandbox, {
      name: 'silent',
      lookup: (reference, mode) => (silent.lookups ? never() : sandbox.lookup(reference, mode)),
      lookupMany: (references, mode) => (silent.lookups ? never() : sandbox.lookupMany!(references, mode)),
      pendingNotifications: (limit) => (silent.notifications ? never() : sandbox.pendingNotifications(limit)),
    });
  }

  const registry = new Registry();
  let metrics: MoneyMetrics;
  const reaperWith = (rail: RailAdapter) =>
    new Reaper(
      t.db,
      clock,
      { test: rail },
      t.services.outcomes,
      { intervalMs: 1000, railTimeoutMs: RAIL_TIMEOUT_MS, railQueueMaxAgeMs: t.config.railQueueMaxAgeS * 1000 },
      undefined,
      (metrics ??= new MoneyMetrics(registry, t.db, clock)),
    );
  const resolutions = async (outcome: string) =>
    (await registry.getSingleMetric('bolivar_reaper_resolutions_total')!.get()).values.find(
      (v) => v.labels.outcome === outcome,
    )?.value ?? 0;

  it('lookups that never answer: the pass ends within the rail timeout, and the payment is asked again later', async () => {
    const { api } = await fundedTenant(t);
    const made = await payout(api, { beneficiary: beneficiary('V12345678') });
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, 'submitted');
    clock.advance(60_000);

    const started = performance.now();
    await reaperWith(railSilentOn({ lookups: true })).runOnce();
    const tookMs = performance.now() - started;
    assert.ok(tookMs < PASS_BOUND_MS, `the pass took ${Math.round(tookMs)} ms`);
    assert.equal((await api.get(`/v1/payments/${made.body.id}`)).body.status, 'submitted', 'nothing invented');
    assert.equal(await resolutions('error'), 1, 'the unanswered question is counted');

    // Once its lease has expired, a rail that answers settles it.
    clock.advance(RAIL_TIMEOUT_MS + 60_000);
    await reaperWith(railSilentOn({})).runOnce();
    assert.equal((await api.get(`/v1/payments/${made.body.id}`)).body.status, 'settled');
    assert.equal(await resolutions('settled'), 1);
  });

  it('a notification question that never answers fails the pass within the rail timeout', async () => {
    const started = performance.now();
    await assert.rejects(reaperWith(railSilentOn({ notifications: true })).runOnce(), RailQuestionTimeout);
    assert.ok(performance.now() - started < PASS_BOUND_MS);
  });
});
