// The six charts of the overview, each drawn from GET /v1/reports/payouts and followed by its table.
// A bar, or a count in a table, opens the statement of that bucket and status when the key has one
// to open.
import type { ComponentChildren } from 'preact';
import { Chart, type ChartSeries } from '../chart.tsx';
import { formatCount, formatMinor } from '../format.ts';
import {
  formatRate,
  REPORT_STATUSES,
  STACK_ORDER,
  statusAtHeight,
  type PayoutReport,
  type ReportBucket,
  type ReportStatus,
} from '../report.ts';
import { navigate } from '../router.ts';
import { Link } from '../ui.tsx';
import {
  bucketColumn,
  BucketTable,
  ChartCard,
  ChartTable,
  figures,
  Legend,
  type Column,
} from './overview-chart-card.tsx';

/** Each status's color: at least 3:1 against white, and apart from its neighbours in a stack. */
const STATUS_COLORS: Record<ReportStatus, string> = {
  settled: '#1a7f37',
  failed: '#b42318',
  returned: '#8250df',
  reversed: '#1b1f24',
  unknown: '#bc4c00',
  submitted: '#0969da',
  pending: '#9a6700',
  created: '#6e7781',
};

/** Bs for drawing only: the chart's pixels, never a figure shown (the tables show the exact string). */
const major = (minor: string | null) => (minor === null ? null : Number(minor) / 100);
const seconds = (iso: string) => Date.parse(iso) / 1000;
/** An axis tick of an amount, short: 1,500, 25k, 1.5M (the tables have the exact figures). */
function majorTick(value: number): string {
  const magnitude = Math.abs(value);
  if (magnitude >= 1e9) return `${Number((value / 1e9).toPrecision(3))}B`;
  if (magnitude >= 1e6) return `${Number((value / 1e6).toPrecision(3))}M`;
  if (magnitude >= 1e4) return `${Number((value / 1e3).toPrecision(3))}k`;
  return formatCount(Math.round(value));
}

/** A category's name under its bar, cut to what fits under a bar of a half-width chart. */
const short = (name: string, length = 14) => (name.length > length ? `${name.slice(0, length - 1)}…` : name);

/** The statement a bucket (and one status of it) opens; undefined when the key has none to open. */
export type StatementOf = ((bucket: ReportBucket, status?: ReportStatus) => string) | undefined;

/** A count of a bucket (of one status, or all of them), linked to the statement of those payments when there is one to open. */
function countLink(
  bucket: ReportBucket,
  count: number,
  statementOf: StatementOf,
  status?: ReportStatus,
): ComponentChildren {
  return statementOf && count > 0 ? (
    <Link to={statementOf(bucket, status)}>{formatCount(count)}</Link>
  ) : (
    formatCount(count)
  );
}

/** The status chart's table: every bucket's count by status, each linked to its statement. */
function StatusTable({
  title,
  report,
  statementOf,
}: {
  title: string;
  report: PayoutReport;
  statementOf: StatementOf;
}) {
  return (
    <ChartTable
      title={title}
      rows={report.buckets}
      keyOf={(bucket) => bucket.start}
      columns={[
        bucketColumn(report),
        { head: 'Payments', num: true, cell: (bucket) => countLink(bucket, bucket.count, statementOf) },
        ...REPORT_STATUSES.map((status): Column<ReportBucket> => ({
          head: status,
          num: true,
          cell: (bucket) => countLink(bucket, bucket.byStatus[status].count, statementOf, status),
        })),
        { head: 'Delivered', num: true, cell: (bucket) => formatMinor(bucket.deliveredAmount) },
      ]}
    />
  );
}

export function StatusChart({ report, statementOf }: { report: PayoutReport; statementOf: StatementOf }) {
  const buckets = report.buckets;
  // Running totals from the bottom of the stack, drawn tallest first so each covers the one below.
  const stacked: ChartSeries[] = STACK_ORDER.map((status, i) => ({
    label: status,
    color: STATUS_COLORS[status],
    kind: 'bars' as const,
    values: buckets.map((b) => STACK_ORDER.slice(0, i + 1).reduce((sum, s) => sum + b.byStatus[s].count, 0)),
  })).reverse();
  const title = `Payouts by status, per ${report.granularity}`;
  return (
    <ChartCard title={title} wide table={<StatusTable title={title} report={report} statementOf={statementOf} />}>
      <Legend items={STACK_ORDER.map((status) => [status, STATUS_COLORS[status]])} />
      <Chart
        label={`${title}: stacked bars of payment counts. The table after the chart has every number.`}
        x={buckets.map((b) => seconds(b.start))}
        series={stacked}
        integers
        onPick={
          statementOf
            ? (index, value) => {
                const bucket = buckets[index];
                const status = bucket ? statusAtHeight(bucket.byStatus, value) : undefined;
                if (bucket && status) navigate(statementOf(bucket, status));
              }
            : undefined
        }
      />
      <h3>Delivered amount (settled), per {report.granularity}</h3>
      <Chart
        label={`Delivered amount in Bs per ${report.granularity}: bars. The table has every amount.`}
        x={buckets.map((b) => seconds(b.start))}
        series={[
          {
            label: 'delivered',
            color: STATUS_COLORS.settled,
            kind: 'bars',
            values: buckets.map((b) => major(b.deliveredAmount)),
          },
        ]}
        yFormat={majorTick}
        ySize={64}
        onPick={
          statementOf
            ? (index) => {
                const bucket = buckets[index];
                if (bucket && bucket.byStatus.settled.count > 0) navigate(statementOf(bucket, 'settled'));
              }
            : undefined
        }
      />
    </ChartCard>
  );
}

type Tally = PayoutReport['banks'][number] | PayoutReport['instruments'][number];
type FailureReason = PayoutReport['failureReasons'][number];

export function SuccessChart({
  title,
  rows,
  nameOf,
}: {
  title: string;
  rows: Tally[];
  nameOf: (row: Tally) => string;
}) {
  return (
    <ChartCard
      title={title}
      table={
        <ChartTable
          title={title}
          rows={rows}
          keyOf={nameOf}
          columns={[
            { head: title.endsWith('bank') ? 'Bank' : 'Instrument', rowHeader: true, cell: nameOf },
            ...figures<Tally>(
              ['Payments', 'Settled', 'Failed', 'Returned', 'Reversed', 'In flight', 'Success rate'],
              (row) => [
                ...[row.count, row.settled, row.failed, row.returned, row.reversed, row.inFlight].map(formatCount),
                formatRate(row.successRate),
              ],
            ),
          ]}
        />
      }
    >
      {rows.length === 0 ? (
        <p class="muted">No payments in this range.</p>
      ) : (
        <Chart
          label={`${title}: bars of the success rate in percent (settled of those with an outcome). The table has every number.`}
          x={rows.map((_, i) => i)}
          categories={rows.map((row) => short(nameOf(row)))}
          series={[
            {
              label: 'success rate',
              color: STATUS_COLORS.settled,
              kind: 'bars',
              values: rows.map((row) => (row.successRate === null ? null : row.successRate * 100)),
            },
          ]}
          yRange={[0, 100]}
          yFormat={(v) => `${v} %`}
        />
      )}
    </ChartCard>
  );
}

export function FailureChart({ report }: { report: PayoutReport }) {
  const rows = report.failureReasons;
  const title = 'Failures by reason';
  return (
    <ChartCard
      title={title}
      table={
        <ChartTable
          title={title}
          rows={rows}
          keyOf={(row) => `${row.status}:${row.reason}`}
          columns={[
            { head: 'Status', cell: (row) => row.status },
            { head: 'Reason', rowHeader: true, cell: (row) => row.reason ?? '—' },
            ...figures<FailureReason>(['Payments', 'Amount'], (row) => [
              formatCount(row.count),
              formatMinor(row.amount),
            ]),
          ]}
        />
      }
    >
      {rows.length === 0 ? (
        <p class="muted">No failed, returned or reversed payment in this range.</p>
      ) : (
        <>
          <Legend items={(['failed', 'returned', 'reversed'] as const).map((s) => [s, STATUS_COLORS[s]])} />
          <Chart
            label={`${title}: bars of payment counts per status and reason. The table has every number.`}
            x={rows.map((_, i) => i)}
            categories={rows.map((row) => short(row.reason ?? '—'))}
            integers
            series={(['failed', 'returned', 'reversed'] as const).map((status) => ({
              label: status,
              color: STATUS_COLORS[status],
              kind: 'bars' as const,
              values: rows.map((row) => (row.status === status ? row.count : null)),
            }))}
          />
        </>
      )}
    </ChartCard>
  );
}

const ms = (value: number | null) => (value === null ? '—' : `${formatCount(value)} ms`);

export function OutcomeTimeChart({ report }: { report: PayoutReport }) {
  const title = 'Time from creation to outcome';
  const x = report.buckets.map((b) => seconds(b.start));
  return (
    <ChartCard
      title={title}
      table={
        <BucketTable
          report={report}
          title={title}
          head={['With an outcome', 'p50', 'p95']}
          cells={(b) => [formatCount(b.timeToOutcome.count), ms(b.timeToOutcome.p50Ms), ms(b.timeToOutcome.p95Ms)]}
        />
      }
    >
      <Legend
        items={[
          ['p50', '#0969da'],
          ['p95 (dashed)', '#b42318'],
        ]}
      />
      <Chart
        label={`${title}, p50 and p95 in milliseconds per ${report.granularity}: lines. The table has every number.`}
        x={x}
        series={[
          { label: 'p50', color: '#0969da', kind: 'line', values: report.buckets.map((b) => b.timeToOutcome.p50Ms) },
          {
            label: 'p95',
            color: '#b42318',
            kind: 'line',
            dash: true,
            values: report.buckets.map((b) => b.timeToOutcome.p95Ms),
          },
        ]}
        yFormat={(v) => `${formatCount(Math.round(v))} ms`}
        ySize={80}
      />
    </ChartCard>
  );
}

export function WebhookChart({ report }: { report: PayoutReport }) {
  const title = 'Webhook deliveries';
  const x = report.buckets.map((b) => seconds(b.start));
  const w = report.buckets.map((b) => b.webhooks);
  return (
    <ChartCard
      title={title}
      table={
        <BucketTable
          report={report}
          title={title}
          head={['Delivered', 'Rejected', 'Unreachable', 'p50', 'p95']}
          cells={(b) => [
            formatCount(b.webhooks.delivered),
            formatCount(b.webhooks.rejected),
            formatCount(b.webhooks.unreachable),
            ms(b.webhooks.p50Ms),
            ms(b.webhooks.p95Ms),
          ]}
        />
      }
    >
      <Legend
        items={[
          ['delivered', STATUS_COLORS.settled],
          ['rejected', STATUS_COLORS.failed],
          ['unreachable', STATUS_COLORS.unknown],
        ]}
      />
      <Chart
        label={`Webhook delivery attempts by outcome per ${report.granularity}: stacked bars. The table has every number.`}
        x={x}
        integers
        series={[
          {
            label: 'unreachable',
            color: STATUS_COLORS.unknown,
            kind: 'bars',
            values: w.map((t) => t.delivered + t.rejected + t.unreachable),
          },
          {
            label: 'rejected',
            color: STATUS_COLORS.failed,
            kind: 'bars',
            values: w.map((t) => t.delivered + t.rejected),
          },
          { label: 'delivered', color: STATUS_COLORS.settled, kind: 'bars', values: w.map((t) => t.delivered) },
        ]}
      />
      <h3>Delivery latency</h3>
      <Legend
        items={[
          ['p50', '#0969da'],
          ['p95 (dashed)', '#b42318'],
        ]}
      />
      <Chart
        label={`Webhook delivery latency, p50 and p95 in milliseconds per ${report.granularity}: lines. The table has every number.`}
        x={x}
        series={[
          { label: 'p50', color: '#0969da', kind: 'line', values: w.map((t) => t.p50Ms) },
          { label: 'p95', color: '#b42318', kind: 'line', dash: true, values: w.map((t) => t.p95Ms) },
        ]}
        yFormat={(v) => `${formatCount(Math.round(v))} ms`}
        ySize={80}
      />
    </ChartCard>
  );
}

export function BalanceChart({ report }: { report: PayoutReport }) {
  const title = 'Prefunded balance and credit drawn';
  const assets = [...new Set(report.buckets.flatMap((b) => b.balances.map((balance) => balance.asset)))];
  const at = (bucket: ReportBucket, asset: string) => bucket.balances.find((b) => b.asset === asset);
  const series: ChartSeries[] = assets.flatMap((asset, i) => [
    {
      label: `${asset} prefunding`,
      color: i === 0 ? '#0b5cad' : '#8250df',
      kind: 'line' as const,
      values: report.buckets.map((b) => major(at(b, asset)?.prefundingBalance ?? null)),
    },
    {
      label: `${asset} credit drawn`,
      color: i === 0 ? '#b42318' : '#bc4c00',
      kind: 'line' as const,
      dash: true,
      values: report.buckets.map((b) => major(at(b, asset)?.creditDrawn ?? null)),
    },
  ]);
  return (
    <ChartCard
      title={title}
      table={
        <BucketTable
          report={report}
          title={title}
          head={assets.flatMap((asset) => [`${asset} prefunding at the end`, `${asset} credit drawn at the end`])}
          cells={(b) =>
            assets.flatMap((asset) => [
              formatMinor(at(b, asset)?.prefundingBalance ?? null, asset),
              formatMinor(at(b, asset)?.creditDrawn ?? null, asset),
            ])
          }
        />
      }
    >
      {assets.length === 0 ? (
        <p class="muted">No balance recorded.</p>
      ) : (
        <>
          <Legend items={series.map((s) => [s.dash ? `${s.label} (dashed)` : s.label, s.color])} />
          <Chart
            label={`${title} at the end of each ${report.granularity}, in major units: lines. The table has every amount.`}
            x={report.buckets.map((b) => seconds(b.end))}
            series={series}
            yFormat={majorTick}
            ySize={64}
          />
        </>
      )}
    </ChartCard>
  );
}
