import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CircuitBreaker, type BreakerState } from '../../src/rails/circuit-breaker.ts';
import type { RailHealth } from '../../src/rails/rail.ts';

function breakerWith(health: () => Promise<RailHealth>) {
  let now = 0;
  const changes: BreakerState[] = [];
  let probes = 0;
  const breaker = new CircuitBreaker(
    { failuresToOpen: 3, openMs: 1_000, probeTimeoutMs: 50 },
    () => now,
    () => {
      probes += 1;
      return health();
    },
    (state) => changes.push(state),
  );
  return { breaker, changes, advance: (ms: number) => (now += ms), probes: () => probes };
}

describe('circuit breaker', () => {
  it('opens after N consecutive transport failures, not fewer; a success resets the count', () => {
    const { breaker, changes } = breakerWith(async () => ({ ok: true }));
    breaker.failure();
    breaker.failure();
    breaker.success();
    breaker.failure();
    breaker.failure();
    assert.equal(breaker.state, 'closed');
    assert.equal(breaker.admits(), true);
    breaker.failure();
    assert.equal(breaker.state, 'open');
    assert.equal(breaker.admits(), false);
    assert.deepEqual(changes, ['open']);
  });

  it('stays open for its while; then ONE health probe closes it', async () => {
    const { breaker, changes, advance, probes } = breakerWith(async () => ({ ok: true }));
    for (let i = 0; i < 3; i += 1) breaker.failure();
    advance(999);
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
    for (const health of [async () => ({ ok: false as const, message: 'down' }), async () => Promise.reject(new Error('boom')), () => new Promise<RailHealth>(() => undefined)]) {
      const { breaker, advance, probes } = breakerWith(health);
      for (let i = 0; i < 3; i += 1) breaker.failure();
      advance(1_000);
      assert.equal(await breaker.probeIfDue(), 'open');
      assert.equal(breaker.probed?.ok, false);
      assert.equal(breaker.state, 'open');
      advance(999);
      assert.equal(breaker.admits(), false);
      assert.equal(probes(), 1, 'no second probe within the new while');
    }
  });

  it('half-open admits nothing but starts the probe; calls answered while open do not close it', async () => {
    const { breaker, advance, probes } = breakerWith(async () => ({ ok: true }));
    for (let i = 0; i < 3; i += 1) breaker.failure();
    breaker.success();
    assert.equal(breaker.state, 'open', 'a late answer does not close it');
    advance(1_000);
    assert.equal(breaker.admits(), false);
    assert.equal(probes(), 1);
    assert.equal(await breaker.probeIfDue(), 'closed');
  });
});
