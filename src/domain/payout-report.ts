// The payout report's range and buckets. A range is whole Caracas calendar days, like the statement's
// `from`/`to`; buckets are hours or Caracas days. Each bucket's bounds are computed here once and
// handed to SQL as an array, so the database only assigns rows to given bounds (width_bucket) and a
// day is always the Caracas day, whatever the database session's time zone.

import { isValidDate, nextDate, startOfBusinessDate } from './caracas-time.ts';
import type { FieldError } from './errors.ts';

export const REPORT_GRANULARITIES = ['hour', 'day'] as const;
export type ReportGranularity = (typeof REPORT_GRANULARITIES)[number];

/** The longest range of each granularity, in days: 744 hourly buckets or 366 daily ones at most. */
export const REPORT_DAYS_MAX: Record<ReportGranularity, number> = { hour: 31, day: 366 };

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
// The range the Caracas day functions compute exactly (see the statement's filter).
const DATE_MIN = '1970-01-01';
const DATE_MAX = '9999-12-30';

export interface ReportRange {
  from: string;
  to: string;
  granularity: ReportGranularity;
  /** 00:00 Caracas time on `from`. */
  start: Date;
  /** 00:00 Caracas time on the day after `to`: the range's exclusive end. */
  end: Date;
  /** Every bucket's start in time order; bucket i ends where bucket i + 1 starts, the last at `end`. */
  bucketStarts: Date[];
}

function dateError(field: 'from' | 'to', value: string): FieldError | undefined {
  if (!isValidDate(value)) return { field, message: 'must be a calendar date YYYY-MM-DD, such as 2026-03-01' };
  if (value < DATE_MIN || value > DATE_MAX) return { field, message: `must be a date from ${DATE_MIN} to ${DATE_MAX}` };
  return undefined;
}

function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS) + 1;
}

function bucketStartsOf(from: string, to: string, granularity: ReportGranularity, end: Date): Date[] {
  const starts: Date[] = [];
  if (granularity === 'day') {
    const last = nextDate(to);
    for (let day = from; day !== last; day = nextDate(day)) starts.push(startOfBusinessDate(day));
    return starts;
  }
  // Hours are UTC hours offset by Caracas' whole-hour offset: hour buckets start on Caracas hours.
  for (let at = startOfBusinessDate(from).getTime(); at < end.getTime(); at += HOUR_MS) starts.push(new Date(at));
  return starts;
}

/** The range of a query, or the field errors that make it invalid. */
export function reportRangeOf(query: {
  from: string;
  to: string;
  granularity: ReportGranularity;
}): ReportRange | FieldError[] {
  const errors = [dateError('from', query.from), dateError('to', query.to)].filter(
    (e): e is FieldError => e !== undefined,
  );
  if (errors.length > 0) return errors;
  if (query.from > query.to) return [{ field: 'from', message: `must be on or before \`to\` (${query.to})` }];
  const days = daysBetween(query.from, query.to);
  const max = REPORT_DAYS_MAX[query.granularity];
  if (days > max) {
    return [
      { field: 'to', message: `a report by ${query.granularity} covers at most ${max} days; this range has ${days}` },
    ];
  }
  const start = startOfBusinessDate(query.from);
  const end = startOfBusinessDate(nextDate(query.to));
  return {
    from: query.from,
    to: query.to,
    granularity: query.granularity,
    start,
    end,
    bucketStarts: bucketStartsOf(query.from, query.to, query.granularity, end),
  };
}

/** Settled ÷ payments with an outcome, to 4 decimals; null while none has one. */
export function successRate(tally: {
  settled: number;
  failed: number;
  returned: number;
  reversed: number;
}): number | null {
  const decided = tally.settled + tally.failed + tally.returned + tally.reversed;
  if (decided === 0) return null;
  return Math.round((tally.settled / decided) * 10_000) / 10_000;
}

/** The statuses whose reason the report tallies: the ways a payout did not deliver. */
export const FAILURE_STATUSES = ['failed', 'returned', 'reversed'] as const;
export type FailureStatus = (typeof FAILURE_STATUSES)[number];

export function isFailureStatus(status: string): status is FailureStatus {
  return (FAILURE_STATUSES as readonly string[]).includes(status);
}
