import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
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
