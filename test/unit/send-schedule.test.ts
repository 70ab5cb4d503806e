// The send schedule (domain/send-schedule.ts). When the reaper first asks the rail about an accepted
// payout: soon after the rail usually has the outcome; a look before the payout path's own send has
// ended only asks (test/integration/reaper-schedule).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  FIRST_LOOK_MARGIN_MS,
  firstLookMs,
  keyHeldMs,
  sendEndsMs,
  sendWindowMs,
  unknownRecheckMs,
} from '../../src/domain/send-schedule.ts';

const DEFAULTS = { railTimeoutMs: 2_000, reaperIntervalMs: 1_000, idempotencyTtlMs: 86_400_000 };

describe('the first look at an accepted payout', () => {
  it('with the default knobs: the sandbox settle delay and a margin (3.25 s), not a whole interval after the send ended (4 s)', () => {
    assert.equal(firstLookMs(DEFAULTS, 3_000), 3_000 + FIRST_LOOK_MARGIN_MS);
    assert.equal(firstLookMs(DEFAULTS), 4_000, 'a rail without a hint');
  });

  it('soon after the rail usually resolves, even before the send has ended; never later than one interval after it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.option(fc.integer({ min: 0, max: 86_400_000 }), { nil: undefined }),
        (railTimeoutMs, reaperIntervalMs, hint) => {
          const settings = { ...DEFAULTS, railTimeoutMs, reaperIntervalMs };
          const sendEnded = Math.max(reaperIntervalMs, 1_000) + railTimeoutMs;
          assert.equal(sendEndsMs(settings), sendEnded);
          const look = firstLookMs(settings, hint);
          assert.ok(look <= sendEnded + reaperIntervalMs);
          if (hint === undefined) assert.equal(look, sendEnded + reaperIntervalMs);
          else assert.equal(look, Math.min(hint + FIRST_LOOK_MARGIN_MS, sendEnded + reaperIntervalMs));
        },
      ),
    );
  });

  it('a short sandbox settle delay is a short wait: 20 ms settles at the first look 270 ms after the payout', () => {
    assert.equal(firstLookMs(DEFAULTS, 20), 270);
    assert.equal(firstLookMs(DEFAULTS, 0), FIRST_LOOK_MARGIN_MS);
  });
});

describe('the next look at a payout the rail answered without an outcome (unknown)', () => {
  it('one reaper interval later, or sooner when the rail usually resolves sooner', () => {
    assert.equal(unknownRecheckMs(DEFAULTS, 3_000), 1_000);
    assert.equal(unknownRecheckMs(DEFAULTS), 1_000);
    assert.equal(unknownRecheckMs(DEFAULTS, 20), 270);
  });
});

describe('the send window and the key held for the answer', () => {
  it('the payout path sends within one reaper interval (at least 1 s); its key outlives its send by a 5 s margin', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 1, max: 60_000 }),
        (railTimeoutMs, reaperIntervalMs) => {
          const timing = { railTimeoutMs, reaperIntervalMs };
          assert.equal(sendWindowMs(timing), Math.max(reaperIntervalMs, 1_000));
          assert.equal(sendEndsMs(timing), sendWindowMs(timing) + railTimeoutMs);
          assert.equal(keyHeldMs(timing), sendEndsMs(timing) + 5_000);
        },
      ),
    );
  });
});
