// The overview, the console's home: GET /v1/reports/payouts over a range of Caracas days, as charts
// each followed by its table (the same numbers, for screen readers and for copying). A bar, or a
// count in a table, opens the statement of that bucket and status. The platform key sees every
// tenant or one, in the mode it picks (the bars of one tenant open that tenant's statement through
// the admin API), and cards for what needs it: open anomalies, the last reconciliation run and the
// rails' health.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { apiPath, type Api, type Page, type TenantMe } from '../api.ts';
import { Chart, type ChartSeries } from '../chart.tsx';
import { formatCount, formatMinor } from '../format.ts';
import {
  bucketLabel,
  formatRate,
  presetRange,
  rangeFromQuery,
  REPORT_STATUSES,
  STACK_ORDER,
  statementPath,
  statusAtHeight,
  type PayoutReport,
  type ReportBucket,
  type ReportRange,
  type ReportStatus,
} from '../report.ts';
import { BASE, navigate } from '../router.ts';
import { Link, Loading, ScreenTitle, useLoad } from '../ui.tsx';
import { PlatformCards } from './overview-cards.tsx';
import { tenantsForPicker } from '../tenant-picker.ts';

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

interface Scope {
  tenantId: string;
  mode: 'test' | 'live';
}

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

function ChartCard({ title, wide, children, table }: { title: string; wide?: boolean; children: ComponentChildren; table: ComponentChildren }) {
  return (
    <section class={wide ? 'chart-card wide' : 'chart-card'} aria-label={title}>
      <h2>{title}</h2>
      {children}
      <details>
        <summary>Table: {title}</summary>
        {table}
      </details>
    </section>
  );
}

/** The statement a bucket (and one status of it) opens; undefined when the key has none to open. */
type StatementOf = ((bucket: ReportBucket, status?: ReportStatus) => string) | undefined;

/** A count of a bucket (of one status, or all of them), linked to the statement of those payments when there is one to open. */
function countLink(bucket: ReportBucket, count: number, statementOf: StatementOf, status?: ReportStatus): ComponentChildren {
  return statementOf && count > 0 ? <Link to={statementOf(bucket, status)}>{formatCount(count)}</Link> : formatCount(count);
}

/** A column of the table behind a chart: its heading and each row's cell; figures are right-aligned, and one column names the row. */
interface Column<R> {
  head: string;
  cell: (row: R) => ComponentChildren;
  num?: boolean;
  rowHeader?: boolean;
}

/** Figure columns, one per heading, from the row's figures in the same order. */
function figures<R>(heads: readonly string[], values: (row: R) => ComponentChildren[]): Column<R>[] {
  return heads.map((head, i) => ({ head, num: true, cell: (row) => values(row)[i] }));
}

/** The table behind a chart: the same numbers, for screen readers and for copying. */
function ChartTable<R>({ title, rows, keyOf, columns }: { title: string; rows: readonly R[]; keyOf: (row: R) => string; columns: Column<R>[] }) {
  return (
    <table aria-label={title}>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column.head} scope="col" class={column.num ? 'num' : undefined}>
              {column.head}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={keyOf(row)}>
            {columns.map((column) =>
              column.rowHeader ? (
                <th key={column.head} scope="row">
                  {column.cell(row)}
                </th>
              ) : (
                <td key={column.head} class={column.num ? 'num' : undefined}>
                  {column.cell(row)}
                </td>
              ),
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The first column of a per-bucket table: the bucket's start, in Caracas time. */
function bucketColumn(report: PayoutReport): Column<ReportBucket> {
  return { head: report.granularity === 'hour' ? 'Hour (Caracas)' : 'Day (Caracas)', rowHeader: true, cell: (bucket) => bucketLabel(report, bucket) };
}

function StatusChart({ report, statementOf }: { report: PayoutReport; statementOf: StatementOf }) {
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
    <ChartCard
      title={title}
      wide
      table={
        <ChartTable
          title={title}
          rows={buckets}
          keyOf={(bucket) => bucket.start}
          columns={[
            bucketColumn(report),
            { head: 'Payments', num: true, cell: (bucket) => countLink(bucket, bucket.count, statementOf) },
            ...REPORT_STATUSES.map((status): Column<ReportBucket> => ({ head: status, num: true, cell: (bucket) => countLink(bucket, bucket.byStatus[status].count, statementOf, status) })),
            { head: 'Delivered', num: true, cell: (bucket) => formatMinor(bucket.deliveredAmount) },
          ]}
        />
      }
    >
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
        series={[{ label: 'delivered', color: STATUS_COLORS.settled, kind: 'bars', values: buckets.map((b) => major(b.deliveredAmount)) }]}
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

function Legend({ items }: { items: Array<[string, string]> }) {
  return (
    <ul class="legend" aria-hidden="true">
      {items.map(([label, color]) => (
        <li key={label}>
          <span class="swatch" style={{ backgroundColor: color }} />
          {label}
        </li>
      ))}
    </ul>
  );
}

type Tally = PayoutReport['banks'][number] | PayoutReport['instruments'][number];
type FailureReason = PayoutReport['failureReasons'][number];

function SuccessChart({ title, rows, nameOf }: { title: string; rows: Tally[]; nameOf: (row: Tally) => string }) {
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
            ...figures<Tally>(['Payments', 'Settled', 'Failed', 'Returned', 'Reversed', 'In flight', 'Success rate'], (row) => [
              ...[row.count, row.settled, row.failed, row.returned, row.reversed, row.inFlight].map(formatCount),
              formatRate(row.successRate),
            ]),
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
          series={[{ label: 'success rate', color: STATUS_COLORS.settled, kind: 'bars', values: rows.map((row) => (row.successRate === null ? null : row.successRate * 100)) }]}
          yRange={[0, 100]}
          yFormat={(v) => `${v} %`}
        />
      )}
    </ChartCard>
  );
}

function FailureChart({ report }: { report: PayoutReport }) {
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
            ...figures<FailureReason>(['Payments', 'Amount'], (row) => [formatCount(row.count), formatMinor(row.amount)]),
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

/** A table of one row per bucket: the bucket, then its figures. */
function BucketTable({ report, title, head, cells }: { report: PayoutReport; title: string; head: string[]; cells: (bucket: ReportBucket) => string[] }) {
  return <ChartTable title={title} rows={report.buckets} keyOf={(bucket) => bucket.start} columns={[bucketColumn(report), ...figures(head, cells)]} />;
}

const ms = (value: number | null) => (value === null ? '—' : `${formatCount(value)} ms`);

function OutcomeTimeChart({ report }: { report: PayoutReport }) {
  const title = 'Time from creation to outcome';
  const x = report.buckets.map((b) => seconds(b.start));
  return (
    <ChartCard
      title={title}
      table={<BucketTable report={report} title={title} head={['With an outcome', 'p50', 'p95']} cells={(b) => [formatCount(b.timeToOutcome.count), ms(b.timeToOutcome.p50Ms), ms(b.timeToOutcome.p95Ms)]} />}
    >
      <Legend items={[['p50', '#0969da'], ['p95 (dashed)', '#b42318']]} />
      <Chart
        label={`${title}, p50 and p95 in milliseconds per ${report.granularity}: lines. The table has every number.`}
        x={x}
        series={[
          { label: 'p50', color: '#0969da', kind: 'line', values: report.buckets.map((b) => b.timeToOutcome.p50Ms) },
          { label: 'p95', color: '#b42318', kind: 'line', dash: true, values: report.buckets.map((b) => b.timeToOutcome.p95Ms) },
        ]}
        yFormat={(v) => `${formatCount(Math.round(v))} ms`}
        ySize={80}
      />
    </ChartCard>
  );
}

function WebhookChart({ report }: { report: PayoutReport }) {
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
          cells={(b) => [formatCount(b.webhooks.delivered), formatCount(b.webhooks.rejected), formatCount(b.webhooks.unreachable), ms(b.webhooks.p50Ms), ms(b.webhooks.p95Ms)]}
        />
      }
    >
      <Legend items={[['delivered', STATUS_COLORS.settled], ['rejected', STATUS_COLORS.failed], ['unreachable', STATUS_COLORS.unknown]]} />
      <Chart
        label={`Webhook delivery attempts by outcome per ${report.granularity}: stacked bars. The table has every number.`}
        x={x}
        integers
        series={[
          { label: 'unreachable', color: STATUS_COLORS.unknown, kind: 'bars', values: w.map((t) => t.delivered + t.rejected + t.unreachable) },
          { label: 'rejected', color: STATUS_COLORS.failed, kind: 'bars', values: w.map((t) => t.delivered + t.rejected) },
          { label: 'delivered', color: STATUS_COLORS.settled, kind: 'bars', values: w.map((t) => t.delivered) },
        ]}
      />
      <h3>Delivery latency</h3>
      <Legend items={[['p50', '#0969da'], ['p95 (dashed)', '#b42318']]} />
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

function BalanceChart({ report }: { report: PayoutReport }) {
  const title = 'Prefunded balance and credit drawn';
  const assets = [...new Set(report.buckets.flatMap((b) => b.balances.map((balance) => balance.asset)))];
  const at = (bucket: ReportBucket, asset: string) => bucket.balances.find((b) => b.asset === asset);
  const series: ChartSeries[] = assets.flatMap((asset, i) => [
    { label: `${asset} prefunding`, color: i === 0 ? '#0b5cad' : '#8250df', kind: 'line' as const, values: report.buckets.map((b) => major(at(b, asset)?.prefundingBalance ?? null)) },
    { label: `${asset} credit drawn`, color: i === 0 ? '#b42318' : '#bc4c00', kind: 'line' as const, dash: true, values: report.buckets.map((b) => major(at(b, asset)?.creditDrawn ?? null)) },
  ]);
  return (
    <ChartCard
      title={title}
      table={
        <BucketTable
          report={report}
          title={title}
          head={assets.flatMap((asset) => [`${asset} prefunding at the end`, `${asset} credit drawn at the end`])}
          cells={(b) => assets.flatMap((asset) => [formatMinor(at(b, asset)?.prefundingBalance ?? null, asset), formatMinor(at(b, asset)?.creditDrawn ?? null, asset)])}
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

function RangePicker({ range, onRange }: { range: ReportRange; onRange: (range: ReportRange) => void }) {
  const [draft, setDraft] = useState(range);
  const presets = [
    ['today', 'Today (hourly)'],
    ['7d', '7 days (hourly)'],
    ['30d', '30 days (daily)'],
  ] as const;
  return (
    <div class="range">
      <div class="toolbar" role="group" aria-label="Range">
        {presets.map(([preset, label]) => (
          <button key={preset} type="button" aria-pressed={range.preset === preset} onClick={() => onRange(presetRange(preset, new Date()))}>
            {label}
          </button>
        ))}
      </div>
      <form
        class="filters"
        aria-label="Custom range"
        onSubmit={(event) => {
          event.preventDefault();
          onRange({ ...draft, preset: 'custom' });
        }}
      >
        <div>
          <label for="range-from">From (Caracas day)</label>
          <input id="range-from" type="date" required value={draft.from} onInput={(e) => setDraft({ ...draft, from: e.currentTarget.value })} />
        </div>
        <div>
          <label for="range-to">To (Caracas day)</label>
          <input id="range-to" type="date" required value={draft.to} onInput={(e) => setDraft({ ...draft, to: e.currentTarget.value })} />
        </div>
        <div>
          <label for="range-granularity">Per</label>
          <select id="range-granularity" value={draft.granularity} onInput={(e) => setDraft({ ...draft, granularity: e.currentTarget.value as 'hour' | 'day' })}>
            <option value="hour">hour (up to 31 days)</option>
            <option value="day">day (up to 366 days)</option>
          </select>
        </div>
        <button type="submit" aria-pressed={range.preset === 'custom'}>
          Show range
        </button>
      </form>
    </div>
  );
}

function PlatformScope({ api, scope, onScope }: { api: Api; scope: Scope; onScope: (scope: Scope) => void }) {
  const picker = useLoad(() => tenantsForPicker(api), []);
  const listed = picker.data?.tenants ?? [];
  return (
    <div class="filters" role="group" aria-label="Tenant and mode">
      <div>
        <label for="overview-tenant">Tenant</label>
        <select id="overview-tenant" value={listed.some((tenant) => tenant.id === scope.tenantId) ? scope.tenantId : ''} onInput={(e) => onScope({ ...scope, tenantId: e.currentTarget.value })}>
          <option value="">all tenants</option>
          {listed.map((tenant) => (
            <option key={tenant.id} value={tenant.id}>
              {tenant.name}
            </option>
          ))}
        </select>
      </div>
      {picker.data?.more ? (
        <div>
          <label for="overview-tenant-id">Or a tenant id (the list shows the first {formatCount(listed.length)})</label>
          <input id="overview-tenant-id" value={listed.some((tenant) => tenant.id === scope.tenantId) ? '' : scope.tenantId} onChange={(e) => onScope({ ...scope, tenantId: e.currentTarget.value.trim() })} />
        </div>
      ) : null}
      <div>
        <label for="overview-mode">Mode</label>
        <select id="overview-mode" value={scope.mode} onInput={(e) => onScope({ ...scope, mode: e.currentTarget.value as 'test' | 'live' })}>
          <option value="test">test</option>
          <option value="live">live</option>
        </select>
      </div>
    </div>
  );
}

function Totals({ report }: { report: PayoutReport }) {
  const outcomes = (['settled', 'failed', 'returned', 'reversed'] as const).map((s) => [s, report.totals.byStatus[s].count] as const);
  return (
    <dl class="totals" aria-label="Totals of the range">
      <div>
        <dt>Payments</dt>
        <dd>{formatCount(report.totals.count)}</dd>
      </div>
      <div>
        <dt>Delivered</dt>
        <dd>{formatMinor(report.totals.deliveredAmount)}</dd>
      </div>
      {outcomes.map(([status, count]) => (
        <div key={status}>
          <dt>{status}</dt>
          <dd>{formatCount(count)}</dd>
        </div>
      ))}
    </dl>
  );
}

/** The range (and the platform's scope) in the address, so that Back from the statement keeps them. */
function remember(range: ReportRange, scope: Scope | undefined): void {
  const params = new URLSearchParams({ from: range.from, to: range.to, granularity: range.granularity });
  if (scope) {
    params.set('mode', scope.mode);
    if (scope.tenantId) params.set('tenantId', scope.tenantId);
  }
  history.replaceState(null, '', `${BASE}/overview?${params.toString()}`);
}

function scopeFromQuery(search: string): Scope {
  const params = new URLSearchParams(search);
  return { tenantId: params.get('tenantId') ?? '', mode: params.get('mode') === 'live' ? 'live' : 'test' };
}

export function OverviewScreen({ api, me }: { api: Api; me: TenantMe }) {
  const [range, setRange] = useState(() => rangeFromQuery(location.search, new Date()));
  const [scope, setScope] = useState<Scope>(() => scopeFromQuery(location.search));
  const platformScope = me.isPlatform ? scope : undefined;
  const report = useLoad(() => {
    remember(range, platformScope);
    const query = { from: range.from, to: range.to, granularity: range.granularity, ...(platformScope ? { mode: scope.mode, tenantId: scope.tenantId } : {}) };
    return api.get<PayoutReport>(apiPath`/v1/reports/payouts`, query);
  }, [range.from, range.to, range.granularity, scope.tenantId, scope.mode]);
  const data = report.data;
  // The platform key opens the admin statement of the tenant the report shown is on (not the one
  // just picked, whose report may still be loading); over every tenant together there is no one
  // statement a bar could open.
  const tenant = me.isPlatform && data?.tenantId ? { tenantId: data.tenantId, mode: data.mode } : undefined;
  const statementOf: StatementOf = me.isPlatform && !tenant ? undefined : (bucket, status) => statementPath(bucket, status, tenant);
  const pickTenant = me.isPlatform && !scope.tenantId;
  return (
    <section>
      <ScreenTitle>Overview</ScreenTitle>
      {me.isPlatform ? <PlatformCards api={api} /> : null}
      {me.isPlatform ? <PlatformScope api={api} scope={scope} onScope={setScope} /> : null}
      <RangePicker key={`${range.from}/${range.to}/${range.granularity}`} range={range} onRange={setRange} />
      <p class="muted">
        Payments created from {range.from} to {range.to} (Caracas days), per {range.granularity}, by their status now.{' '}
        {pickTenant
          ? 'Over all tenants together the bars open nothing: pick a tenant to open its statement from a bar, or a count in a table.'
          : 'A bar, or a count in a table, opens the statement of that bucket and status.'}
      </p>
      <Loading loaded={report} />
      {data ? (
        <div class="charts" aria-busy={report.loading}>
          <Totals report={data} />
          <StatusChart report={data} statementOf={statementOf} />
          <SuccessChart title="Success rate by bank" rows={data.banks} nameOf={(row) => ('bankCode' in row ? `${row.bankCode} ${row.bankName ?? ''}`.trim() : '')} />
          <SuccessChart title="Success rate by instrument" rows={data.instruments} nameOf={(row) => ('method' in row ? (row.method ?? 'none chosen') : '')} />
          <FailureChart report={data} />
          <OutcomeTimeChart report={data} />
          <WebhookChart report={data} />
          <BalanceChart report={data} />
        </div>
      ) : null}
    </section>
  );
}
