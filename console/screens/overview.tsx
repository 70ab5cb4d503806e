// The overview, the console's home: GET /v1/reports/payouts over a range of Caracas days, as charts
// each followed by its table (the same numbers, for screen readers and for copying). A bar, or a
// count in a table, opens the statement of that bucket and status. The platform key sees every
// tenant or one, in the mode it picks (the bars of one tenant open that tenant's statement through
// the admin API), and cards for what needs it: open anomalies, the last reconciliation run and the
// rails' health.
import { useState } from 'preact/hooks';
import { apiPath, type Api, type TenantMe } from '../api.ts';
import { formatCount, formatMinor } from '../format.ts';
import { rangeFromQuery, statementPath, type PayoutReport } from '../report.ts';
import { Loading, ScreenTitle, useLoad } from '../ui.tsx';
import { PlatformCards } from './overview-cards.tsx';
import {
  BalanceChart,
  FailureChart,
  OutcomeTimeChart,
  StatusChart,
  SuccessChart,
  WebhookChart,
  type StatementOf,
} from './overview-charts.tsx';
import { PlatformScope, RangePicker } from './overview-pickers.tsx';
import { remember, scopeFromQuery, type Scope } from './overview-url.ts';

function Totals({ report }: { report: PayoutReport }) {
  const outcomes = (['settled', 'failed', 'returned', 'reversed'] as const).map(
    (s) => [s, report.totals.byStatus[s].count] as const,
  );
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

export function OverviewScreen({ api, me }: { api: Api; me: TenantMe }) {
  const [range, setRange] = useState(() => rangeFromQuery(location.search, new Date()));
  const [scope, setScope] = useState<Scope>(() => scopeFromQuery(location.search));
  const platformScope = me.isPlatform ? scope : undefined;
  const report = useLoad(() => {
    remember(range, platformScope);
    const query = {
      from: range.from,
      to: range.to,
      granularity: range.granularity,
      ...(platformScope ? { mode: scope.mode, tenantId: scope.tenantId } : {}),
    };
    return api.get<PayoutReport>(apiPath`/v1/reports/payouts`, query);
  }, [range.from, range.to, range.granularity, scope.tenantId, scope.mode]);
  const data = report.data;
  // The platform key opens the admin statement of the tenant the report shown is on (not the one
  // just picked, whose report may still be loading); over every tenant together there is no one
  // statement a bar could open.
  const tenant = me.isPlatform && data?.tenantId ? { tenantId: data.tenantId, mode: data.mode } : undefined;
  const statementOf: StatementOf =
    me.isPlatform && !tenant ? undefined : (bucket, status) => statementPath(bucket, status, tenant);
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
          <SuccessChart
            title="Success rate by bank"
            rows={data.banks}
            nameOf={(row) => ('bankCode' in row ? `${row.bankCode} ${row.bankName ?? ''}`.trim() : '')}
          />
          <SuccessChart
            title="Success rate by instrument"
            rows={data.instruments}
            nameOf={(row) => ('method' in row ? (row.method ?? 'none chosen') : '')}
          />
          <FailureChart report={data} />
          <OutcomeTimeChart report={data} />
          <WebhookChart report={data} />
          <BalanceChart report={data} />
        </div>
      ) : null}
    </section>
  );
}
