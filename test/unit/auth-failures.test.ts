import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AuthFailureLimiter } from '../../src/services/auth-failures.ts';

function limiter(limit: number, windowMs: number, addressesMax = 100) {
  let now = 1_000_000;
  const l = new AuthFailureLimiter({ limit, windowMs, addressesMax }, () => now);
  return {
    l,
    advance(ms: number) {
      now += ms;
    },
  };
}

describe('AuthFailureLimiter', () => {
  it('blocks an address at the limit until its oldest failure leaves the window', () => {
    const { l, advance } = limiter(3, 10_000);
    assert.equal(l.recordFailure('a'), false);
    advance(1000);
    assert.equal(l.recordFailure('a'), false);
    assert.equal(l.blockedForMs('a'), 0);
    assert.equal(l.recordFailure('a'), true, 'the failure that reaches the limit says so, once');
    assert.equal(l.blockedForMs('a'), 9000);
    advance(9000);
    assert.equal(l.blockedForMs('a'), 0, 'the first failure left the window: one slot free');
    assert.equal(l.recordFailure('a'), true);
    // A lookup that was already under way when the limit was reached fails late: it counts too.
    assert.equal(l.recordFailure('a'), false, 'a late concurrent failure does not report again');
    assert.equal(l.blockedForMs('a'), 1000, 'four failures in the window: blocked until both of second 1 leave it');
    advance(1000);
    assert.equal(l.blockedForMs('a'), 0);
    assert.equal(l.blockedForMs('b'), 0);
  });

  it('keeps at most addressesMax addresses, forgetting the least recently failing first', () => {
    const { l } = limiter(2, 60_000, 3);
    for (const address of ['a', 'a', 'b', 'b', 'c', 'c']) l.recordFailure(address);
    l.recordFailure('a'); // a is now the most recent
    l.recordFailure('d');
    assert.equal(l.size, 3);
    assert.equal(l.blockedForMs('b'), 0, 'b was the least recently failing: forgotten');
    assert.ok(l.blockedForMs('a') > 0);
    assert.ok(l.blockedForMs('c') > 0);
  });

  it('drops an address once all its failures are out of the window', () => {
    const { l, advance } = limiter(5, 1000);
    l.recordFailure('a');
    advance(1000);
    assert.equal(l.blockedForMs('a'), 0);
    assert.equal(l.size, 0);
  });

  it('never blocks longer than one window when the clock is set back', () => {
    const { l, advance } = limiter(1, 10_000);
    l.recordFailure('a');
    advance(-3_600_000);
    assert.equal(l.blockedForMs('a'), 10_000);
  });

  it('does nothing when the limit is 0', () => {
    const { l } = limiter(0, 10_000);
    for (let i = 0; i < 100; i += 1) assert.equal(l.recordFailure('a'), false);
    assert.equal(l.blockedForMs('a'), 0);
    assert.equal(l.size, 0);
  });
});
