// Rail health (platform key): every rail of the deployment with the modes and instruments it serves,
// its circuit breaker, its health asked now, what it did since the answering process started, and
// the routing rules in the order they apply. Read-only: settings change through the admin API or the
// CLI (bolivar rails), where every change is audited.
import { apiPath, type Api } from '../api.ts';
import { Amount, Loading, ScreenTitle, Time, useLoad } from '../ui.tsx';

interface Health {
  ok: boolean;
  message?: string;
}

interface Rail {
  name: string;
  kind: 'sandbox' | 'connector';
  modes: string[];
  instruments: string[];
  enabled: boolean;
  configured: boolean;
  breaker: { state: 'closed' | 'open' | 'half_open'; failures: number; lastProbe: Health | null };
  health: Health;
  counts: {
    sends: number;
    failures: Record<string, number>;
    failovers: number;
    meanLatencyMs: number | null;
    lastSendAt: string | null;
  };
}

interface RailRoute {
  id: string;
  priority: number;
  rail: string;
  tenantId: string | null;
  mode: string | null;
  instrument: string | null;
  bankCode: string | null;
  minAmount: string | null;
  maxAmount: string | null;
  createdAt: string;
}

/** The breaker's state in words, and the status class it is shown with. */
const BREAKER: Record<Rail['breaker']['state'], [string, string]> = {
  closed: ['closed', 'status-settled'],
  half_open: ['half-open (probing)', 'status-pending'],
  open: ['open: new payouts skip it', 'status-failed'],
};

const list = (items: readonly string[]) => (items.length === 0 ? 'none' : items.join(', '));

function Failures({ failures }: { failures: Record<string, number> }) {
  const entries = Object.entries(failures);
  if (entries.length === 0) return <span class="muted">none</span>;
  return <>{entries.map(([reason, count]) => `${reason} ${count}`).join(', ')}</>;
}

function RailsTable({ rails }: { rails: Rail[] }) {
  return (
    <table aria-label="Rails">
      <thead>
        <tr>
          <th scope="col">Rail</th>
          <th scope="col">Serves</th>
          <th scope="col">Breaker</th>
          <th scope="col">Health</th>
          <th scope="col">Sends</th>
          <th scope="col">Failures</th>
          <th scope="col">Failovers</th>
          <th scope="col">Mean latency</th>
          <th scope="col">Last send</th>
        </tr>
      </thead>
      <tbody>
        {rails.map((rail) => {
          const [breaker, breakerClass] = BREAKER[rail.breaker.state];
          return (
            <tr key={rail.name}>
              <th scope="row">
                <span class="mono">{rail.name}</span>{' '}
                <span class="muted">
                  ({rail.kind}
                  {rail.configured ? '' : ', defaults'})
                </span>
              </th>
              <td>
                {rail.enabled ? null : <span class="status status-failed">disabled</span>} modes: {list(rail.modes)};
                instruments: {list(rail.instruments)}
              </td>
              <td>
                <span class={`status ${breakerClass}`}>{breaker}</span>{' '}
                <span class="muted">{rail.breaker.failures} failures in a row</span>
              </td>
              <td>
                {rail.health.ok ? (
                  <span class="status status-settled">answers</span>
                ) : (
                  <span class="status status-failed">{rail.health.message ?? 'does not answer'}</span>
                )}
              </td>
              <td>{rail.counts.sends}</td>
              <td>
                <Failures failures={rail.counts.failures} />
              </td>
              <td>{rail.counts.failovers}</td>
              <td>
                {rail.counts.meanLatencyMs === null ? <span class="muted">—</span> : `${rail.counts.meanLatencyMs} ms`}
              </td>
              <td>
                <Time iso={rail.counts.lastSendAt} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function RoutesTable({ routes }: { routes: RailRoute[] }) {
  if (routes.length === 0)
    return (
      <p class="muted">
        No routing rule: every payout tries the eligible rails in the default order (connectors by name, the sandbox
        last).
      </p>
    );
  const any = <span class="muted">any</span>;
  return (
    <table aria-label="Routing rules">
      <thead>
        <tr>
          <th scope="col">Priority</th>
          <th scope="col">Rail</th>
          <th scope="col">Tenant</th>
          <th scope="col">Mode</th>
          <th scope="col">Instrument</th>
          <th scope="col">Bank</th>
          <th scope="col">Amount delivered</th>
        </tr>
      </thead>
      <tbody>
        {routes.map((route) => (
          <tr key={route.id}>
            <td>{route.priority}</td>
            <th scope="row" class="mono">
              {route.rail}
            </th>
            <td class="mono">{route.tenantId ?? any}</td>
            <td>{route.mode ?? any}</td>
            <td>{route.instrument ?? any}</td>
            <td>{route.bankCode ?? any}</td>
            <td>
              {route.minAmount === null && route.maxAmount === null ? (
                any
              ) : (
                <>
                  {route.minAmount === null ? 'any' : <Amount minor={route.minAmount} />} to{' '}
                  {route.maxAmount === null ? 'any' : <Amount minor={route.maxAmount} />}
                </>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function RailsScreen({ api }: { api: Api }) {
  const rails = useLoad(() => api.get<{ data: Rail[]; routes: RailRoute[] }>(apiPath`/v1/admin/rails`), []);
  return (
    <section>
      <ScreenTitle>Rail health</ScreenTitle>
      <p class="muted">
        The rails payouts are sent through. Breakers and counts are those of the process that answered, since it
        started; health is asked now. A payout moves to another rail only when its rail provably did not receive it
        (docs/rails.md). Settings change with the admin API or bolivar rails.
      </p>
      <button type="button" onClick={rails.reload}>
        Refresh
      </button>
      <Loading loaded={rails} />
      {rails.data ? (
        <>
          <RailsTable rails={rails.data.data} />
          <h2>Routing rules</h2>
          <RoutesTable routes={rails.data.routes} />
        </>
      ) : null}
    </section>
  );
}
