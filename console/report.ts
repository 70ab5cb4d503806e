// The overview's data: the answer of GET /v1/reports/payouts, the ranges the picker offers (whole
// Caracas days, as the report takes them) and the statement query of one bucket. Pure functions, no
// DOM.
import type { PayoutReport, ReportBucket, ReportStatusTallies } from '../sdk/src/generated/types.gen.ts';
import { formatTimes } from './format.ts';
import { statementScreenPath, type TenantStatement } from './statement.ts';

// The report's shape is the API's, as the SDK's generated types state it (from the OpenAPI
// document): the console writes none of it again. Type-only, so nothing of the SDK is bundled.
export type { PayoutReport, ReportBucket };

export type ReportStatus = keyof ReportStatusTallies;
type Granularity = PayoutReport['granularity'];

/**
 * Every status a report counts, in the order its tables list them: a key for each of the API's
 * statuses, no other (the typecheck fails on a status added to the API and not here).
 */
const STATUS_COLUMNS: Record<ReportStatus, true> = {
  created: true,
  pending: true,
  submitted: true,
  unknown: true,
  settled: true,
  failed: true,
  returned: true,
  reversed: true,
};
export const REPORT_STATUSES = Object.keys(STATUS_COLUMNS) as ReportStatus[];

/** What the range picker asks for: whole Caracas days, inclusive, and the bucket size. */
export interface ReportRange {
  preset: 'today' | '7d' | '30d' | 'custom';
  from: string;
  to: string;
  granularity: Granularity;
}

const CARACAS_DAY = new Intl.DateTimeFormat('en-CA', {
  timeZone: 'America/Caracas',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
});

/**
 * The calendar day in Caracas at `now`: "2026-11-27".
 * @internal Exported for its tests, not used elsewhere.
 */
export function caracasDay(now: Date): string {
  return CARACAS_DAY.format(now);
}

/** A calendar day plus `days` (negative to go back): pure date arithmetic on the day, no time zone. */
function addDays(day: string, days: number): string {
  const [year, month, date] = day.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(year, month - 1, date + days)).toISOString().slice(0, 10);
}

/** The picker's presets: today and the last 7 days by the hour, the last 30 days by the day. */
export function presetRange(preset: Exclude<ReportRange['preset'], 'custom'>, now: Date): ReportRange {
  const today = caracasDay(now);
  if (preset === 'today') return { preset, from: today, to: today, granularity: 'hour' };
  if (preset === '7d') return { preset, from: addDays(today, -6), to: today, granularity: 'hour' };
  return { preset, from: addDays(today, -29), to: today, granularity: 'day' };
}

const DAY = /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/;

/** The range of an overview address (`?from=…&to=…&granularity=…`), or today's when it has none. */
export function rangeFromQuery(search: string, now: Date): ReportRange {
  const params = new URLSearchParams(search);
  const from = params.get('from') ?? '';
  const to = params.get('to') ?? '';
  const granularity = params.get('granularity');
  if (!DAY.test(from) || !DAY.test(to) || (granularity !== 'hour' && granularity !== 'day'))
    return presetRange('today', now);
  for (const preset of ['today', '7d', '30d'] as const) {
    const candidate = presetRange(preset, now);
    if (candidate.from === from && candidate.to === to && candidate.granularity === granularity) return candidate;
  }
  return { preset: 'custom', from, to, granularity };
}

/**
 * The statement's address for a bucket, and for one status of it: what the bucket counted. `of`: the
 * platform key's report on one tenant opens that tenant's statement in the report's mode.
 */
export function statementPath(
  bucket: { start: string; end: string },
  status?: ReportStatus,
  of?: TenantStatement,
): string {
  const params = new URLSearchParams({ createdFrom: bucket.start, createdBefore: bucket.end });
  if (status) params.set('status', status);
  return statementScreenPath(of, params);
}

/** How a bar stacks the statuses, from the bottom: the outcomes first, then what is still in flight. */
export const STACK_ORDER: readonly ReportStatus[] = [
  'settled',
  'failed',
  'returned',
  'reversed',
  'unknown',
  'submitted',
  'pending',
  'created',
];

/**
 * Which status of a stacked bar a count reached from the bottom falls in (the bar stacks them in
 * STACK_ORDER). Undefined above the bar or for an empty one.
 */
export function statusAtHeight(byStatus: ReportStatusTallies, height: number): ReportStatus | undefined {
  let top = 0;
  for (const status of STACK_ORDER) {
    const count = byStatus[status].count;
    if (count === 0) continue;
    top += count;
    if (height <= top) return status;
  }
  return undefined;
}

/** A success rate of the report (0..1, 4 decimals) as a percentage: 0.6667 → "66.67 %". */
export function formatRate(rate: number | null): string {
  if (rate === null) return '—';
  return `${(Math.round(rate * 10_000) / 100).toFixed(2)} %`;
}

/** A bucket's start as the tables show it, in Caracas time: "2026-11-27 14:00", or the day. */
export function bucketLabel(report: Pick<PayoutReport, 'granularity'>, bucket: Pick<ReportBucket, 'start'>): string {
  const caracas = formatTimes(bucket.start)?.caracas ?? bucket.start;
  return report.granularity === 'hour' ? caracas.slice(0, 16) : caracas.slice(0, 10);
}
