import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { assert as invariantAssert, InvariantError, rethrowInvariant } from '../../src/domain/assert.ts';
import { startLoop, type PassOutcome } from '../../src/workers/run-loop.ts';
import { until } from '../support/until.ts';

const log = pino({ level: 'silent' });

/** Probed every 5 ms: the passes are tens of milliseconds apart. */
const within = (timeoutMs: number) => ({ timeoutMs, intervalMs: 5 });

/** A loop whose passes answer `outcomes` in turn (then false), recording when each pass began. */
function loopAnswering(intervalMs: number, outcomes: PassOutcome[]) {
  const began: number[] = [];
  const loop = startLoop({
    name: 'probe',
    intervalMs,
    log,
    runOnce: async () => {
      began.push(Date.now());
      return outcomes.shift() ?? false;
    },
  });
  return { began, loop };
}

describe('worker loop pauses', () => {
  it('a pass that names when its next work is due is followed by the next pass then, not a whole interval later', async () => {
    const { began, loop } = loopAnswering(60_000, [50]);
    try {
      await until('a second pass', () => began.length === 2, within(5_000));
      assert.ok(began[1]! - began[0]! >= 45, `waited ${began[1]! - began[0]!} ms`);
    } finally {
      await loop.stop();
    }
  });

  it('never sleeps longer than its interval, whatever a pass names', async () => {
    const { began, loop } = loopAnswering(50, [3_600_000]);
    try {
      await until('a second pass', () => began.length === 2, within(5_000));
    } finally {
      await loop.stop();
    }
  });

  it('goes again at once after a full pass, and sleeps its interval after an idle one', async () => {
    const { began, loop } = loopAnswering(60_000, [true, false]);
    try {
      await until('a second pass', () => began.length === 2, within(5_000));
      // A third pass would come only after the interval (a minute): none within 300 ms.
      await until('a third pass', () => began.length === 3, within(300)).then(
        () => assert.fail('a pass ran during the interval'),
        () => undefined,
      );
      assert.equal(began.length, 2, 'the full pass was followed at once, the idle one by the interval');
    } finally {
      await loop.stop();
    }
  });
});

describe('a broken invariant in a worker pass', () => {
  it('stops the loop with the InvariantError, while an operating error is retried', async () => {
    let passes = 0;
    const loop = startLoop({
      name: 'probe',
      intervalMs: 5,
      log,
      runOnce: async () => {
        passes += 1;
        if (passes === 1) throw new Error('connection terminated unexpectedly');
        invariantAssert(passes > 2, 'a pass found what cannot be');
        return false;
      },
    });
    // Awaited from the start: the rejection is this test's, not an unhandled one.
    await assert.rejects(
      loop.ended,
      (error: unknown) =>
        error instanceof InvariantError && /invariant: a pass found what cannot be/.test(error.message),
    );
    assert.equal(passes, 2, 'the operating error was retried; the invariant stopped the loop at once');
  });
});

describe('assert', () => {
  it('throws an InvariantError whose message says it is one, and passes when its condition holds', () => {
    assert.throws(
      () => invariantAssert(false, 'two postings at least'),
      (error: unknown) => error instanceof InvariantError && error.message === 'invariant: two postings at least',
    );
    assert.doesNotThrow(() => invariantAssert(1, 'holds'));
  });

  it('an operating-error handler lets a broken invariant through and handles the rest', () => {
    assert.throws(() => rethrowInvariant(new InvariantError('x')), InvariantError);
    assert.doesNotThrow(() => rethrowInvariant(new Error('ECONNRESET')));
  });
});
