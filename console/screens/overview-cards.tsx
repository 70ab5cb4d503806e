// The platform key's cards on the overview: what needs a person now. Each card makes its own call and
// says "not available" when that call fails, without hiding the others or the charts.
import type { ComponentChildren } from 'preact';
import { apiPath, type Api, type Page } from '../api.ts';
import { formatCount } from '../format.ts';
import { Link, Time, useLoad, type Loaded } from '../ui.tsx';

/** Open anomalies counted from one page: past it the card says "at least". */
const ANOMALY_PAGE = 100;

interface RunSummary {
  id: string;
  tenantId: string;
  mode: string;
  status: string;
  clean: boolean | null;
  requestedAt: string;
  finishedAt: string | null;
  discrepancyCount: number;
}

interface RailSummary {
  name: string;
  kind: 'sandbox' | 'connector';
  enabled: boolean;
  breaker: { state: 'closed' | 'open' | 'half_open' };
  health: { ok: boolean; message?: string };
  statementCheck: {
    lastStatement: { id: string; day: string; at: string; lines: number; mismatches: number } | null;
    lastPull: { day: string; state: 'done' | 'in_progress' | 'retrying' | 'gave_up'; lastError: string | null } | null;
  };
}

function Card({
  title,
  loaded,
  children,
  to,
  linkLabel,
}: {
  title: string;
  loaded: Loaded<unknown>;
  children: ComponentChildren;
  to?: string;
  linkLabel?: string;
}) {
  return (
    <section class="card summary-card" aria-label={title}>
      <h2>{title}</h2>
      {loaded.error ? (
        <p class="muted">Not available.</p>
      ) : loaded.loading && !loaded.data ? (
        <p class="muted">Loading…</p>
      ) : (
        children
      )}
      {to ? <Link to={to}>{linkLabel}</Link> : null}
    </section>
  );
}

function LastRun({ run }: { run: RunSummary | undefined }) {
  if (!run) return <p>No run yet.</p>;
  const verdict =
    run.clean === null ? run.status : run.clean ? 'clean' : `${formatCount(run.discrepancyCount)} discrepancies`;
  return (
    <>
      <p>
        <span class={`status status-${run.clean === false ? 'failed' : run.clean ? 'settled' : 'pending'}`}>
          {verdict}
        </span>{' '}
        · {run.mode}
      </p>
      <Time iso={run.finishedAt ?? run.requestedAt} />
    </>
  );
}

function Rails({ rails }: { rails: RailSummary[] }) {
  const unhealthy = rails.filter((rail) => rail.enabled && !rail.health.ok);
  const open = rails.filter((rail) => rail.breaker.state !== 'closed');
  return (
    <>
      <p>
        {formatCount(rails.length)} rails: {formatCount(rails.length - unhealthy.length)} healthy,{' '}
        {formatCount(open.length)} with the breaker not closed
      </p>
      {unhealthy.length > 0 ? <p class="error">Unhealthy: {unhealthy.map((rail) => rail.name).join(', ')}</p> : null}
    </>
  );
}

export function PlatformCards({ api }: { api: Api }) {
  const anomalies = useLoad(
    () => api.get<Page<{ id: string }>>(apiPath`/v1/admin/anomalies`, { status: 'open', limit: String(ANOMALY_PAGE) }),
    [],
  );
  const runs = useLoad(() => api.get<Page<RunSummary>>(apiPath`/v1/admin/reconciliation/runs`, { limit: '1' }), []);
  const rails = useLoad(() => api.get<{ data: RailSummary[] }>(apiPath`/v1/admin/rails`), []);
  const openCount = anomalies.data
    ? `${anomalies.data.has_more ? 'at least ' : ''}${formatCount(anomalies.data.data.length)}`
    : '';
  return (
    <div class="cards">
      <Card title="Open anomalies" loaded={anomalies} to="/review" linkLabel="Needs review">
        <p class="big">{openCount}</p>
      </Card>
      <Card title="Last reconciliation run" loaded={runs}>
        <LastRun run={runs.data?.data[0]} />
      </Card>
      <Card title="Rails" loaded={rails} to="/rails" linkLabel="Rail health">
        <Rails rails={rails.data?.data ?? []} />
      </Card>
      <Card title="Last bank-side check" loaded={rails}>
        <BankChecks rails={rails.data?.data ?? []} />
      </Card>
    </div>
  );
}

/** Per rail, the statement matched last against our books and a pull that is not done (the bank's own record, docs/rails.md). */
function BankChecks({ rails }: { rails: RailSummary[] }) {
  const checked = rails.filter((rail) => rail.kind === 'connector' || rail.statementCheck.lastStatement !== null);
  if (checked.length === 0) return <p>No bank connector: post a rail's statement to check it.</p>;
  return (
    <ul class="plain">
      {checked.map(({ name, statementCheck: { lastStatement, lastPull } }) => (
        <li key={name}>
          <strong>{name}</strong>:{' '}
          {lastStatement ? (
            <>
              {lastStatement.day},{' '}
              <span class={`status status-${lastStatement.mismatches > 0 ? 'failed' : 'settled'}`}>
                {lastStatement.mismatches > 0 ? `${formatCount(lastStatement.mismatches)} mismatches` : 'agrees'}
              </span>{' '}
              ({formatCount(lastStatement.lines)} lines, <Time iso={lastStatement.at} />)
            </>
          ) : (
            'no statement yet'
          )}
          {lastPull && lastPull.state !== 'done' ? (
            <span class={lastPull.state === 'gave_up' ? 'error' : 'muted'}>
              {' '}
              · pull of {lastPull.day}: {lastPull.state === 'gave_up' ? 'given up' : lastPull.state.replace('_', ' ')}
              {lastPull.lastError ? ` (${lastPull.lastError.split(':')[0]})` : ''}
            </span>
          ) : null}
        </li>
      ))}
    </ul>
  );
}
