// The bench's memory: every run appends its headline figures to bench/history.jsonl under the commit
// it measured, and prints each figure beside the median of the previous commit's runs, so a
// regression shows in the next run instead of in someone else's measurement. Medians per commit
// (several runs of one commit are one figure each, the median taken), compared only between runs of
// the same length (`--quick` or not), as ratios to each run's own ceiling where the figure has one.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

export interface HistoryEntry {
  commit: string;
  at: string;
  quick: boolean;
  /** Figure name → value. Names end in `_per_s` or `ratio` (higher is better) or `_ms` (lower is better). */
  figures: Record<string, number>;
}

/** A change of a figure beyond this fraction, the wrong way, is flagged. */
const FLAGGED_CHANGE = 0.1;

interface Throughput {
  throughput_per_s: number;
  p99_ms: number;
  ratio: number;
}
interface EndToEnd {
  submit_throughput_per_s: number;
  submit_ratio: number;
  end_to_end_per_s: number;
  end_to_end_ratio: number;
}

/** The figures of one run worth following: each scenario's throughput, p99 and ratio; each payroll's submit and end to end. */
export function figuresOf(results: {
  scenarios: Record<string, Partial<Throughput>>;
  payroll?: Record<string, EndToEnd & { submit_p99_ms: number }>;
  payroll_batch?: Record<string, EndToEnd & { batch_p99_ms: number }>;
  reconciliation?: { full_run: { seconds: number }; incremental_run: { seconds: number }; payroll_loss: number };
  noisy_neighbour?: { alone: { p99_ms: number }; with_payroll: { p99_ms: number } };
}): Record<string, number> {
  const figures: Record<string, number> = {};
  if (results.noisy_neighbour) {
    figures['noisy_neighbour.alone_p99_ms'] = results.noisy_neighbour.alone.p99_ms;
    figures['noisy_neighbour.with_payroll_p99_ms'] = results.noisy_neighbour.with_payroll.p99_ms;
  }
  if (results.reconciliation) {
    figures['reconciliation.full_run_ms'] = Math.round(results.reconciliation.full_run.seconds * 1000);
    figures['reconciliation.incremental_run_ms'] = Math.round(results.reconciliation.incremental_run.seconds * 1000);
  }
  for (const [name, s] of Object.entries(results.scenarios)) {
    if (typeof s.throughput_per_s === 'number') figures[`${name}.throughput_per_s`] = s.throughput_per_s;
    if (typeof s.p99_ms === 'number') figures[`${name}.p99_ms`] = s.p99_ms;
    if (typeof s.ratio === 'number') figures[`${name}.ratio`] = s.ratio;
  }
  for (const [kind, runs] of [
    ['payroll', results.payroll],
    ['payroll_batch', results.payroll_batch],
  ] as const) {
    for (const [topology, p] of Object.entries(runs ?? {})) {
      const at = `${kind}.${topology}`;
      figures[`${at}.submit_per_s`] = p.submit_throughput_per_s;
      figures[`${at}.submit_ratio`] = p.submit_ratio;
      figures[`${at}.end_to_end_per_s`] = p.end_to_end_per_s;
      figures[`${at}.end_to_end_ratio`] = p.end_to_end_ratio;
      const p99 = 'submit_p99_ms' in p ? p.submit_p99_ms : p.batch_p99_ms;
      figures[`${at}.${'submit_p99_ms' in p ? 'submit' : 'batch'}_p99_ms`] = p99;
    }
  }
  return figures;
}

export function readHistory(file: string): HistoryEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as HistoryEntry);
}

export function appendHistory(file: string, entry: HistoryEntry): void {
  appendFileSync(file, `${JSON.stringify(entry)}\n`);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Each figure's median over the runs of `commit` (of the same length). */
function mediansOf(history: readonly HistoryEntry[], commit: string, quick: boolean): Record<string, number> {
  const runs = history.filter((entry) => entry.commit === commit && entry.quick === quick);
  const names = new Set(runs.flatMap((entry) => Object.keys(entry.figures)));
  return Object.fromEntries(
    [...names].map((name) => [
      name,
      median(runs.flatMap((entry) => (name in entry.figures ? [entry.figures[name]!] : []))),
    ]),
  );
}

export interface FigureChange {
  figure: string;
  before: number;
  now: number;
  /** now / before − 1. */
  change: number;
  /** Worse by more than FLAGGED_CHANGE. */
  flagged: boolean;
}

/**
 * This commit's medians (the runs recorded so far, this one included) beside the previous commit's,
 * the last one before it in the history with runs of the same length; none when there is no such commit.
 */
export function compareWithPrevious(
  history: readonly HistoryEntry[],
  entry: HistoryEntry,
): { previous: string | null; changes: FigureChange[] } {
  const earlier = history.filter((e) => e.quick === entry.quick && e.commit !== entry.commit);
  const previous = earlier.length > 0 ? earlier[earlier.length - 1]!.commit : null;
  if (previous === null) return { previous, changes: [] };
  const before = mediansOf(history, previous, entry.quick);
  const now = mediansOf([...history, entry], entry.commit, entry.quick);
  const changes = Object.keys(now)
    .filter((figure) => figure in before && before[figure] !== 0)
    .map((figure) => {
      const change = now[figure]! / before[figure]! - 1;
      const lowerIsBetter = figure.endsWith('_ms');
      return {
        figure,
        before: before[figure]!,
        now: now[figure]!,
        change,
        flagged: lowerIsBetter ? change > FLAGGED_CHANGE : change < -FLAGGED_CHANGE,
      };
    });
  return { previous, changes };
}

export function describeChanges(result: ReturnType<typeof compareWithPrevious>, commit: string): string {
  if (result.previous === null)
    return `\nbench history: the first run of this length; nothing to compare ${commit} with yet\n`;
  const lines = result.changes.map(
    (c) =>
      `  ${c.flagged ? '!' : ' '} ${c.figure}: ${c.before} → ${c.now} (${c.change >= 0 ? '+' : ''}${(100 * c.change).toFixed(1)} %)`,
  );
  const flagged = result.changes.filter((c) => c.flagged).length;
  return `\nbench history: medians of ${commit} against ${result.previous}${flagged > 0 ? ` — ${flagged} figures worse by more than ${100 * FLAGGED_CHANGE} % (!)` : ''}\n${lines.join('\n')}\n`;
}
