// The bench's history: each run's figures are compared with the median of the previous commit's runs
// of the same length, and a figure worse by more than 10 % the wrong way is flagged.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareWithPrevious, describeChanges, figuresOf, type HistoryEntry } from '../../bench/history.ts';

const run = (commit: string, figures: Record<string, number>, quick = false): HistoryEntry => ({
  commit,
  at: '2026-12-03T00:00:00.000Z',
  quick,
  figures,
});

describe('the bench history', () => {
  it('compares with the median of the previous commit, flagging a drop of throughput or a rise of latency past 10 %', () => {
    const history = [
      run('aaa', { 'payroll.all.submit_per_s': 700, 'payroll.all.submit_p99_ms': 180 }),
      run('bbb', { 'payroll.all.submit_per_s': 740, 'payroll.all.submit_p99_ms': 160 }),
      run('bbb', { 'payroll.all.submit_per_s': 720, 'payroll.all.submit_p99_ms': 170 }),
      run('bbb', { 'payroll.all.submit_per_s': 10, 'payroll.all.submit_p99_ms': 900 }),
      run('zzz', { 'payroll.all.submit_per_s': 1 }, true),
    ];
    const { previous, changes } = compareWithPrevious(
      history,
      run('ccc', { 'payroll.all.submit_per_s': 551, 'payroll.all.submit_p99_ms': 171 }),
    );
    assert.equal(previous, 'bbb', 'the last commit with runs of the same length (a quick run is not compared)');
    const byName = Object.fromEntries(changes.map((c) => [c.figure, c]));
    assert.equal(byName['payroll.all.submit_per_s']!.before, 720, "the median of bbb's three runs, not its outlier");
    assert.equal(byName['payroll.all.submit_per_s']!.flagged, true, '720 → 551 is −23 %');
    assert.equal(byName['payroll.all.submit_p99_ms']!.flagged, false, '170 → 171 ms is noise');
    assert.match(
      describeChanges({ previous, changes }, 'ccc'),
      /1 figures worse by more than 10 %[\s\S]*! payroll\.all\.submit_per_s: 720 → 551 \(-23\.5 %\)/,
    );
  });

  it("a commit's second run is compared with the same previous commit, its own runs' median", () => {
    const history = [run('aaa', { x_per_s: 100 }), run('bbb', { x_per_s: 80 })];
    const { previous, changes } = compareWithPrevious(history, run('bbb', { x_per_s: 100 }));
    assert.equal(previous, 'aaa');
    assert.deepEqual(
      changes.map((c) => [c.before, c.now]),
      [[100, 90]],
    );
    assert.equal(compareWithPrevious([], run('aaa', { x_per_s: 1 })).previous, null);
  });

  it('takes every scenario and payroll figure of a results file', () => {
    const figures = figuresOf({
      scenarios: { payout_c64: { throughput_per_s: 800, p99_ms: 120, ratio: 0.9 } },
      payroll: {
        all: {
          submit_throughput_per_s: 735,
          submit_ratio: 0.84,
          end_to_end_per_s: 571,
          end_to_end_ratio: 0.65,
          submit_p99_ms: 165,
        },
      },
      payroll_batch: {
        all: {
          submit_throughput_per_s: 900,
          submit_ratio: 1.1,
          end_to_end_per_s: 270,
          end_to_end_ratio: 0.33,
          batch_p99_ms: 2185,
        },
      },
    });
    assert.deepEqual(Object.keys(figures).sort(), [
      'payout_c64.p99_ms',
      'payout_c64.ratio',
      'payout_c64.throughput_per_s',
      'payroll.all.end_to_end_per_s',
      'payroll.all.end_to_end_ratio',
      'payroll.all.submit_p99_ms',
      'payroll.all.submit_per_s',
      'payroll.all.submit_ratio',
      'payroll_batch.all.batch_p99_ms',
      'payroll_batch.all.end_to_end_per_s',
      'payroll_batch.all.end_to_end_ratio',
      'payroll_batch.all.submit_per_s',
      'payroll_batch.all.submit_ratio',
    ]);
  });
});
