import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { startLoop, type PassOutcome } from '../../src/workers/run-loop.ts';

const log = pino({ level: 'silent' });

/** Resolves once `condition` holds, checking every 5 ms; rejects after `boundMs`. */
async function until(condition: () => boolean, boundMs: number): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > boundMs) throw new Error(`not within ${boundMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

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
      await until(() => began.length === 2, 5_000);
      assert.ok(began[1]! - began[0]! >= 45, `waited ${began[1]! - began[0]!} ms`);
    } finally {
      await loop.stop();
    }
  });

  it('never sleeps longer than its interval, whatever a pass names', async () => {
    const { began, loop } = loopAnswering(50, [3_600_000]);
    try {
      await until(() => began.length === 2, 5_000);
    } finally {
      await loop.stop();
    }
  });

  it('goes again at once after a full pass, and sleeps its interval after an idle one', async () => {
    const { began, loop } = loopAnswering(60_000, [true, false]);
    try {
      await until(() => began.length === 2, 5_000);
      // A third pass would come only after the interval (a minute): none within 300 ms.
      await until(() => began.length === 3, 300).then(
        () => assert.fail('a pass ran during the interval'),
        () => undefined,
      );
      assert.equal(began.length, 2, 'the full pass was followed at once, the idle one by the interval');
    } finally {
      await loop.stop();
    }
  });
});
