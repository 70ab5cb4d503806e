import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  addBins,
  binLastMs,
  histogramPercentiles,
  reportedDurationMs,
  TIME_BIN_STARTS,
} from '../../src/domain/report-time-bins.ts';

const MAX_MS = 10 * 24 * 3_600_000; // ten days: beyond any payout's or webhook's time

test('a duration reads as its bin’s last millisecond: exact below 16 ms, never below the value, at most 12.5 % above it', () => {
  for (let ms = 0; ms < 16; ms += 1) assert.equal(reportedDurationMs(ms), ms);
  assert.equal(reportedDurationMs(2130), 2303, 'the guide’s example: 2,048–2,303');
  fc.assert(
    fc.property(fc.integer({ min: 0, max: MAX_MS }), (ms) => {
      const shown = reportedDurationMs(ms);
      assert.ok(shown >= ms && shown - ms <= ms / 8, `${ms} ms reads as ${shown}`);
      assert.equal(reportedDurationMs(shown), shown, 'the last millisecond of a bin is in that bin');
    }),
    { numRuns: 2000 },
  );
});

test('bin starts are ascending integers; a bin’s last millisecond is the next start minus one', () => {
  for (let i = 1; i < TIME_BIN_STARTS.length; i += 1) {
    assert.ok(Number.isSafeInteger(TIME_BIN_STARTS[i]) && TIME_BIN_STARTS[i]! > TIME_BIN_STARTS[i - 1]!);
    assert.equal(binLastMs(TIME_BIN_STARTS[i - 1]!), TIME_BIN_STARTS[i]! - 1);
  }
  assert.throws(() => binLastMs(17), /not the start of a report time bin/);
});

/** The start of the bin of `ms`: the last start at or below it. */
const startOf = (ms: number) => TIME_BIN_STARTS.filter((s) => s <= ms).at(-1)!;

test('percentiles of a histogram are the nearest-rank percentiles of the durations, to their bin', () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: MAX_MS }), { minLength: 1, maxLength: 60 }),
      fc.integer({ min: 1, max: 3 }),
      (values, parts) => {
        // The durations spread over several documents, as the rollups and the unfolded changes give them.
        const histogram = new Map<number, number>();
        for (let p = 0; p < parts; p += 1) {
          const bins: Record<string, number> = {};
          values.filter((_, i) => i % parts === p).forEach((ms) => (bins[startOf(ms)] = (bins[startOf(ms)] ?? 0) + 1));
          addBins(histogram, bins);
        }
        const sorted = [...values].sort((a, b) => a - b);
        const rank = (percent: number) =>
          reportedDurationMs(sorted[Math.max(1, Math.ceil((percent * sorted.length) / 100)) - 1]!);
        assert.deepEqual(histogramPercentiles(histogram), { count: values.length, p50Ms: rank(50), p95Ms: rank(95) });
      },
    ),
    { numRuns: 500 },
  );
  assert.deepEqual(histogramPercentiles(new Map()), { count: 0, p50Ms: null, p95Ms: null });
});
