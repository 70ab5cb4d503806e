// The overview's pure parts: the ranges the picker offers (whole Caracas days, as the report takes
// them), the range read back from an address, which status a click on a stacked bar lands in, the
// statement address of a bucket, and how counts and rates are written.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatCount } from '../../console/format.ts';
import {
  bucketLabel,
  caracasDay,
  formatRate,
  presetRange,
  rangeFromQuery,
  REPORT_STATUSES,
  STACK_ORDER,
  statementPath,
  statusAtHeight,
} from '../../console/report.ts';
import { paymentScreenPath, statementApi, tenantStatementOf } from '../../console/statement.ts';

// 02:30 UTC on the 1st of March is still the last day of February in Caracas (UTC−4).
const NIGHT = new Date('2026-03-01T02:30:00Z');

describe('the overview range', () => {
  it('is counted in Caracas days, across month and year ends', () => {
    assert.equal(caracasDay(NIGHT), '2026-02-28');
    assert.deepEqual(presetRange('today', NIGHT), {
      preset: 'today',
      from: '2026-02-28',
      to: '2026-02-28',
      granularity: 'hour',
    });
    assert.deepEqual(presetRange('7d', NIGHT), {
      preset: '7d',
      from: '2026-02-22',
      to: '2026-02-28',
      granularity: 'hour',
    });
    assert.deepEqual(presetRange('30d', new Date('2026-01-10T12:00:00Z')), {
      preset: '30d',
      from: '2025-12-12',
      to: '2026-01-10',
      granularity: 'day',
    });
  });

  it('comes back from the address as the preset it is, or as a custom range, or today when malformed', () => {
    assert.equal(rangeFromQuery('?from=2026-02-22&to=2026-02-28&granularity=hour', NIGHT).preset, '7d');
    assert.deepEqual(rangeFromQuery('?from=2026-01-01&to=2026-01-31&granularity=day', NIGHT), {
      preset: 'custom',
      from: '2026-01-01',
      to: '2026-01-31',
      granularity: 'day',
    });
    for (const search of [
      '',
      '?from=2026-01-01',
      '?from=x&to=2026-01-02&granularity=day',
      '?from=2026-01-01&to=2026-01-02&granularity=week',
    ]) {
      assert.deepEqual(rangeFromQuery(search, NIGHT), presetRange('today', NIGHT), search);
    }
  });
});

describe('a bar of the overview', () => {
  const tally = (counts: Partial<Record<(typeof REPORT_STATUSES)[number], number>>) =>
    Object.fromEntries(REPORT_STATUSES.map((s) => [s, { count: counts[s] ?? 0, amount: '0' }])) as Parameters<
      typeof statusAtHeight
    >[0];

  it('gives the status whose part of the stack a click lands in, and nothing above the bar', () => {
    const bar = tally({ settled: 3, failed: 2, reversed: 1, pending: 1 });
    assert.equal(statusAtHeight(bar, 0.1), 'settled');
    assert.equal(statusAtHeight(bar, 3), 'settled');
    assert.equal(statusAtHeight(bar, 3.2), 'failed');
    assert.equal(statusAtHeight(bar, 5.5), 'reversed');
    assert.equal(statusAtHeight(bar, 6.5), 'pending');
    assert.equal(statusAtHeight(bar, 7.01), undefined);
    assert.equal(statusAtHeight(tally({}), 0.5), undefined);
  });

  it('stacks every status exactly once, and any height within the bar lands in a status it has', () => {
    assert.deepEqual([...STACK_ORDER].sort(), [...REPORT_STATUSES].sort());
    fc.assert(
      fc.property(
        fc.array(fc.nat(20), { minLength: 8, maxLength: 8 }),
        fc.double({ min: 0.001, max: 1, noNaN: true }),
        (counts, share) => {
          const bar = tally(Object.fromEntries(REPORT_STATUSES.map((s, i) => [s, counts[i]!])));
          const total = counts.reduce((a, b) => a + b, 0);
          const status = statusAtHeight(bar, total * share);
          if (total === 0) return status === undefined;
          return status !== undefined && bar[status].count > 0;
        },
      ),
    );
  });

  it("opens the statement of its bucket (and status), with the bucket's own instants", () => {
    const bucket = { start: '2026-03-01T04:00:00.000Z', end: '2026-03-01T05:00:00.000Z' };
    assert.equal(
      statementPath(bucket, 'failed'),
      '/payments?createdFrom=2026-03-01T04%3A00%3A00.000Z&createdBefore=2026-03-01T05%3A00%3A00.000Z&status=failed',
    );
    assert.equal(
      statementPath(bucket),
      '/payments?createdFrom=2026-03-01T04%3A00%3A00.000Z&createdBefore=2026-03-01T05%3A00%3A00.000Z',
    );
    // The platform key's report on one tenant: that tenant's statement, in the report's mode.
    const tenant = { tenantId: '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f', mode: 'live' as const };
    assert.equal(
      statementPath(bucket, 'settled', tenant),
      '/tenants/3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f/payments?mode=live&createdFrom=2026-03-01T04%3A00%3A00.000Z&createdBefore=2026-03-01T05%3A00%3A00.000Z&status=settled',
    );
    // The screen reads the tenant's statement back from that address, and its rows open the platform's view of a payment.
    const read = tenantStatementOf(tenant.tenantId, '?mode=live&status=settled');
    assert.deepEqual(read, tenant);
    assert.equal(tenantStatementOf(tenant.tenantId, '?mode=sandbox').mode, 'test');
    assert.deepEqual(statementApi(read), {
      path: `/v1/admin/tenants/${tenant.tenantId}/payments`,
      query: { mode: 'live' },
    });
    assert.deepEqual(statementApi(undefined), { path: '/v1/payments', query: {} });
    assert.equal(paymentScreenPath(read, 'p1'), `/tenants/${tenant.tenantId}/payments/p1`);
    assert.equal(paymentScreenPath(undefined, 'p1'), '/payments/p1');
    assert.equal(bucketLabel({ granularity: 'hour' }, bucket), '2026-03-01 00:00');
    assert.equal(bucketLabel({ granularity: 'day' }, bucket), '2026-03-01');
  });
});

describe('numbers of the overview', () => {
  it('are written with thousands separators and rates as percentages to two decimals', () => {
    assert.equal(formatCount(0), '0');
    assert.equal(formatCount(1234567), '1,234,567');
    assert.equal(formatCount('9007199254740993'), '9,007,199,254,740,993');
    assert.equal(formatCount(null), '—');
    assert.equal(formatRate(0.6667), '66.67 %');
    assert.equal(formatRate(1), '100.00 %');
    assert.equal(formatRate(0), '0.00 %');
    assert.equal(formatRate(0.0005), '0.05 %');
    assert.equal(formatRate(null), '—');
  });
});
