// When the reaper first asks the rail about an accepted payout: soon after the rail usually has the
// outcome, but never while the payout path's own send may still be running.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { FIRST_LOOK_MARGIN_MS, firstLookMs } from '../../src/services/payouts.ts';

const DEFAULTS = { railTimeoutMs: 2_000, reaperIntervalMs: 1_000, idempotencyTtlMs: 86_400_000 };

describe('the first look at an accepted payout', () => {
  it('with the default knobs: the sandbox settle delay and a margin (3.25 s), not a whole interval after the send ended (4 s)', () => {
    assert.equal(firstLookMs(DEFAULTS, 3_000), 3_000 + FIRST_LOOK_MARGIN_MS);
    assert.equal(firstLookMs(DEFAULTS), 4_000, 'a rail without a hint');
  });

  it('never before the send window and the rail timeout have passed, never later than one interval after', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.option(fc.integer({ min: 0, max: 86_400_000 }), { nil: undefined }),
        (railTimeoutMs, reaperIntervalMs, hint) => {
          const settings = { ...DEFAULTS, railTimeoutMs, reaperIntervalMs };
          const sendEnded = Math.max(reaperIntervalMs, 1_000) + railTimeoutMs;
          const look = firstLookMs(settings, hint);
          assert.ok(look >= sendEnded, `${look} before the send ended at ${sendEnded}`);
          assert.ok(look <= sendEnded + reaperIntervalMs);
          if (hint !== undefined && hint + FIRST_LOOK_MARGIN_MS >= sendEnded && hint + FIRST_LOOK_MARGIN_MS <= sendEnded + reaperIntervalMs) {
            assert.equal(look, hint + FIRST_LOOK_MARGIN_MS);
          }
        },
      ),
    );
  });
});
