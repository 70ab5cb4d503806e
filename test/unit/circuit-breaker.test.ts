import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CircuitBreaker, type BreakerSettings, type BreakerState } from '../../src/rails/circuit-breaker.ts';
import type { RailHealth } from '../../src/rails/rail.ts';
import { loadConfig } from '../../src/config.ts';

/** The defaults a deployment runs with (RAIL_BREAKER_*), read from the configuration itself. */
function defaults(): BreakerSettings {
  const config = loadConfig({});
  return {
    refusalsToOpen: config.railBreakerFailures,
    windowMs: config.railBreakerWindowMs,
    minimumCalls: config.railBreakerMinCalls,
    failureRatePercent: config.railBreakerFailureRate,
    openMs: config.railBreakerOpenMs,
    probeTimeoutMs: 50,
    halfOpenWaitersMax: config.railBreakerHalfOpenWaiters,
  };
}

function breakerWith(health: () => Promise<RailHealth>, settings: Partial<BreakerSettings> = {}) {
  let now = 0;
  const changes: BreakerState[] = [];
  let probes = 0;
  const all = { ...defaults(), ...settings };
  const breaker = new CircuitBreaker(
    all,
    () => now,
    () => {
      probes += 1;
      return health();
    },
    (state) => changes.push(state),
  );
  const open = () => {
    for (let i = 0; i < all.refusalsToOpen; i += 1) breaker.refused();
    assert.equal(breaker.state, 'open');
  };
  return { breaker, changes, settings: all, open, advance: (ms: number) => (now += ms), probes: () => probes };
}

describe('circuit breaker', () => {
  it('opens after N connections refused in a row, not fewer; an answer resets the count', () => {
    const { breaker, changes, settings } = breakerWith(async () => ({ ok: true }));
    for (let i = 0; i < settings.refusalsToOpen - 1; i += 1) breaker.refused();
    breaker.success();
    for (let i = 0; i < settings.refusalsToOpen - 1; i += 1) breaker.refused();
    assert.equal(breaker.state, 'closed');
    assert.equal(breaker.admits(), true);
    breaker.refused();
    assert.equal(breaker.state, 'open');
    assert.equal(breaker.admits(), false);
    assert.deepEqual(changes, ['open']);
  });

  it('never opens on a handful of transfers of unknown fate (timeouts, 503s, resets), however many in a row', () => {
    const { breaker, settings } = breakerWith(async () => ({ ok: true }));
    for (let i = 0; i < settings.minimumCalls - 1; i += 1) breaker.failure();
    assert.equal(
      breaker.state,
      'closed',
      `${settings.minimumCalls - 1} failures are fewer calls than the window needs`,
    );
    assert.equal(breaker.admits(), true);
  });

  it('opens on a failure rate over the window once it holds the minimum of calls', () => {
    const { breaker, advance, settings } = breakerWith(async () => ({ ok: true }));
    // Below the rate: every other call answered, then one more success tips it under.
    for (let i = 0; i < settings.minimumCalls; i += 1) {
      breaker.success();
      if (i % 3 === 0) breaker.failure();
    }
    assert.equal(breaker.state, 'closed', 'a third failed stays under a 50 % rate');
    // Old calls leave the window: a new run of failures alone is judged.
    advance(settings.windowMs + 1);
    assert.equal(breaker.calls, 0, 'calls older than the window are gone');
    for (let i = 0; i < settings.minimumCalls - 1; i += 1) breaker.failure();
    assert.equal(breaker.state, 'closed');
    breaker.failure();
    assert.equal(breaker.state, 'open', 'the minimum of calls reached, all failed');
  });

  it('stays open for its while; then ONE health probe closes it', async () => {
    const { breaker, changes, advance, probes, open, settings } = breakerWith(async () => ({ ok: true }));
    open();
    advance(settings.openMs - 1);
    assert.equal(breaker.state, 'open');
    assert.equal(await breaker.probeIfDue(), 'open', 'no probe before the while is over');
    assert.equal(probes(), 0);
    advance(1);
    assert.equal(breaker.state, 'half_open');
    const [a, b] = await Promise.all([breaker.probeIfDue(), breaker.probeIfDue()]);
    assert.deepEqual([a, b, probes()], ['closed', 'closed', 1], 'one probe however many ask');
    assert.equal(breaker.admits(), true);
    assert.deepEqual(changes, ['open', 'closed']);
    assert.equal(breaker.failures, 0);
  });

  it('a failed, throwing or silent probe opens it again for another while', async () => {
    for (const health of [
      async () => ({ ok: false as const, message: 'down' }),
      async () => Promise.reject(new Error('boom')),
      () => new Promise<RailHealth>(() => undefined),
    ]) {
      const { breaker, advance, probes, open, settings } = breakerWith(health);
      open();
      advance(settings.openMs);
      assert.equal(await breaker.probeIfDue(), 'open');
      assert.equal(breaker.probed?.ok, false);
      assert.equal(breaker.state, 'open');
      advance(settings.openMs - 1);
      assert.equal(breaker.admits(), false);
      assert.equal(probes(), 1, 'no second probe within the new while');
    }
  });

  it('any answer of the rail (a status, a callback, a rejection) while open is evidence it is up: it closes', () => {
    const { breaker, changes, open } = breakerWith(async () => ({ ok: true }));
    open();
    breaker.success();
    assert.equal(breaker.state, 'closed');
    assert.equal(breaker.admits(), true);
    assert.deepEqual(changes, ['open', 'closed']);
  });

  it('half-open: a bounded number of payouts wait for the probe and are admitted by its verdict; the rest are told no at once', async () => {
    let answer: (health: RailHealth) => void = () => undefined;
    const { breaker, advance, probes, open, settings } = breakerWith(
      () => new Promise<RailHealth>((resolve) => (answer = resolve)),
      { halfOpenWaitersMax: 3, probeTimeoutMs: 60_000 },
    );
    open();
    advance(settings.openMs);
    const waiting = [breaker.admission(), breaker.admission(), breaker.admission()];
    assert.equal(await breaker.admission(), false, 'past the bound: no at once, as while open');
    assert.equal(probes(), 1, 'one probe however many wait');
    answer({ ok: true });
    assert.deepEqual(
      await Promise.all(waiting),
      [true, true, true],
      'the waiting payouts go to the rail once it is healthy',
    );
    assert.equal(await breaker.admission(), true);
  });

  it('half-open: the waiting payouts are told no when the probe fails', async () => {
    const { breaker, advance, open, settings } = breakerWith(async () => ({ ok: false, message: 'down' }));
    open();
    advance(settings.openMs);
    assert.deepEqual(await Promise.all([breaker.admission(), breaker.admission()]), [false, false]);
    assert.equal(breaker.state, 'open');
  });
});
