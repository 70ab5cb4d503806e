import { assert } from './assert.ts';
// The bins of the payout report's time histograms (time to outcome, webhook delivery duration).
// A report's p50 and p95 come from its rollups, which keep counts per bin rather than every
// duration, so a percentile is known to its bin: the report gives the bin's last millisecond, an
// upper bound at most 12.5 % above the exact value (exact below 16 ms). Bins start at 0..15 ms, then
// eight per power of two (16, 18, 20, … 30, 32, 36, … 60, …): every start is an integer, so the
// database and this module place a duration in the same bin.

const EXACT_BELOW_MS = 16;
const BINS_PER_DOUBLING = 8;
/** The last doubling: bins reach 15 × 2^37 ms (about 65 years), beyond any payout's or webhook's time. */
const LAST_EXPONENT = 40;

/** Every bin's first millisecond, ascending; a duration's bin is the last start at or below it. */
export const TIME_BIN_STARTS: readonly number[] = (() => {
  const starts: number[] = [];
  for (let ms = 0; ms < EXACT_BELOW_MS; ms += 1) starts.push(ms);
  for (let e = Math.log2(EXACT_BELOW_MS); e <= LAST_EXPONENT; e += 1) {
    for (let m = BINS_PER_DOUBLING; m < 2 * BINS_PER_DOUBLING; m += 1) starts.push(m * 2 ** (e - 3));
  }
  return starts;
})();

function binIndexOf(ms: number): number {
  let lo = 0;
  let hi = TIME_BIN_STARTS.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (TIME_BIN_STARTS[mid]! <= ms) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** What the report says for a duration of `ms`: the last millisecond of its bin. */
export function reportedDurationMs(ms: number): number {
  assert(Number.isSafeInteger(ms) && ms >= 0, `a duration is a whole number of ms ≥ 0, not ${ms}`);
  return binLastMs(TIME_BIN_STARTS[binIndexOf(ms)]!);
}

/**
 * The last millisecond of the bin that starts at `startMs` (a start the rollups recorded); the last bin's own start.
 * @internal Exported for its tests, not used elsewhere.
 */
export function binLastMs(startMs: number): number {
  const i = binIndexOf(startMs);
  assert(TIME_BIN_STARTS[i] === startMs, `${startMs} ms is not the start of a report time bin`);
  return i + 1 < TIME_BIN_STARTS.length ? TIME_BIN_STARTS[i + 1]! - 1 : startMs;
}

/** A histogram: bin start (ms) → how many durations fell in the bin. */
export type TimeHistogram = Map<number, number>;

/** Adds the bins of a rollup's document ({"<bin start>": count}) to `into`. */
export function addBins(into: TimeHistogram, bins: Record<string, number>): void {
  for (const [start, n] of Object.entries(bins)) into.set(Number(start), (into.get(Number(start)) ?? 0) + Number(n));
}

/**
 * The count, p50 and p95 of a histogram (nearest rank: the first bin whose running count reaches
 * p × count, in integers), each as its bin's last millisecond; null percentiles when it is empty.
 */
export function histogramPercentiles(histogram: TimeHistogram): {
  count: number;
  p50Ms: number | null;
  p95Ms: number | null;
} {
  const bins = [...histogram.entries()].filter(([, n]) => n !== 0).sort(([a], [b]) => a - b);
  const count = bins.reduce((total, [, n]) => total + n, 0);
  const rank = (percent: number): number | null => {
    let below = 0;
    for (const [start, n] of bins) {
      below += n;
      if (below * 100 >= count * percent) return binLastMs(start);
    }
    return null;
  };
  return { count, p50Ms: rank(50), p95Ms: rank(95) };
}
