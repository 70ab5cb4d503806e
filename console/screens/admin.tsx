// The platform key's screens. The platform key has one scope, platform:admin: the API refuses it
// every tenant route (payments, events, beneficiaries, treasury), so these read the admin API only
// (a tenant's statement and payments included).
import type { Api, Page } from '../api.ts';
import { apiPath } from '../api.ts';
import { statementScreenPath } from '../statement.ts';
import { Amount, Link, Loading, Pager, ScreenTitle, Time, useCursor, useLoad } from '../ui.tsx';
import { auditPath, FindPayment } from './audit.tsx';
import { PlatformNotice } from './platform-notice.tsx';

interface Tenant {
  id: string;
  name: string;
  creditEnabled: boolean;
  creditLimit: string | null;
  creditLimits: Record<string, string | null>;
  feeBps: number;
  feeFixed: string;
  spreadBps: number;
  createdAt: string;
  updatedAt: string;
}

interface ApiKeyRecord {
  id: string;
  mode: string;
  scopes: string[];
  prefix: string;
  last4: string;
  createdAt: string;
  revokedAt: string | null;
}

interface LimitRule {
  id: string;
  scope: string;
  tenantId: string | null;
  subjectId: string | null;
  method: string;
  per_tx_max: string;
  daily_max: string;
  monthly_max: string | null;
  daily_count_max: string | null;
  created_at: string;
}

function LimitRules({ rules }: { rules: LimitRule[] }) {
  if (rules.length === 0) return <p class="muted">No limit rules.</p>;
  return (
    <table aria-label="Limit rules">
      <thead>
        <tr>
          <th scope="col">Scope</th>
          <th scope="col">Tenant</th>
          <th scope="col">Subject</th>
          <th scope="col">Method</th>
          <th scope="col" class="num">
            Per payout
          </th>
          <th scope="col" class="num">
            Per day
          </th>
          <th scope="col" class="num">
            Per month
          </th>
          <th scope="col" class="num">
            Payouts a day
          </th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {rules.map((r) => (
          <tr key={r.id}>
            <td>{r.scope}</td>
            <td>{r.tenantId ? <Link to={`/tenants/${r.tenantId}`}>{r.tenantId.slice(0, 8)}…</Link> : '—'}</td>
            <td class="mono">{r.subjectId ?? '—'}</td>
            <td>{r.method}</td>
            <td class="num">
              <Amount minor={r.per_tx_max} />
            </td>
            <td class="num">
              <Amount minor={r.daily_max} />
            </td>
            <td class="num">{r.monthly_max ? <Amount minor={r.monthly_max} /> : '—'}</td>
            <td class="num">{r.daily_count_max ?? '—'}</td>
            <td>
              <Time iso={r.created_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function TenantsScreen({ api }: { api: Api }) {
  const paging = useCursor([]);
  const page = useLoad(
    () => api.get<Page<Tenant>>(apiPath`/v1/admin/tenants`, { limit: '25', cursor: paging.cursor }),
    [paging.cursor],
  );
  return (
    <section>
      <ScreenTitle>Tenants</ScreenTitle>
      <PlatformNotice />
      <Loading loaded={page} />
      {page.data ? (
        <>
          <table>
            <thead>
              <tr>
                <th scope="col">Tenant</th>
                <th scope="col">Funding</th>
                <th scope="col" class="num">
                  Fee
                </th>
                <th scope="col" class="num">
                  Spread
                </th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {page.data.data.map((t) => (
                <tr key={t.id}>
                  <td>
                    <Link to={`/tenants/${t.id}`}>{t.name}</Link>
                  </td>
                  <td>{t.creditEnabled ? 'credit (daily close)' : 'prefunded'}</td>
                  <td class="num">
                    {t.feeBps} bps + <Amount minor={t.feeFixed} />
                  </td>
                  <td class="num">{t.spreadBps} bps</td>
                  <td>
                    <Time iso={t.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager paging={paging} nextCursor={page.data.next_cursor} label="Tenants" />
        </>
      ) : null}
    </section>
  );
}

/** The tenant's terms: how it is funded, its credit limits, its fee and spread. */
function TenantFacts({ tenant: t }: { tenant: Tenant }) {
  return (
    <dl class="facts">
      <dt>Id</dt>
      <dd class="mono">{t.id}</dd>
      <dt>Funding</dt>
      <dd>{t.creditEnabled ? 'credit, settled at the daily close' : 'prefunded'}</dd>
      <dt>Credit limits</dt>
      <dd>
        {Object.entries(t.creditLimits)
          .map(([asset, limit]) => `${asset}: ${limit === null ? 'none' : limit}`)
          .join(' · ')}{' '}
        <span class="muted">(minor units)</span>
      </dd>
      <dt>Fee</dt>
      <dd>
        {t.feeBps} bps + <Amount minor={t.feeFixed} />
      </dd>
      <dt>Spread</dt>
      <dd>{t.spreadBps} bps</dd>
      <dt>Created</dt>
      <dd>
        <Time iso={t.createdAt} />
      </dd>
      <dt>Updated</dt>
      <dd>
        <Time iso={t.updatedAt} />
      </dd>
    </dl>
  );
}

/** A tenant's API keys, each linked to the audit trail of what it did. */
function ApiKeys({ keys }: { keys: ApiKeyRecord[] }) {
  return (
    <table aria-label="API keys">
      <thead>
        <tr>
          <th scope="col">Key</th>
          <th scope="col">Mode</th>
          <th scope="col">Scopes</th>
          <th scope="col">Created</th>
          <th scope="col">Revoked</th>
          <th scope="col">Audit</th>
        </tr>
      </thead>
      <tbody>
        {keys.map((k) => (
          <tr key={k.id}>
            <td class="mono">
              {k.prefix}…{k.last4}
            </td>
            <td>{k.mode}</td>
            <td>{k.scopes.join(', ')}</td>
            <td>
              <Time iso={k.createdAt} />
            </td>
            <td>
              <Time iso={k.revokedAt} />
            </td>
            <td>
              <Link to={auditPath({ actorKeyId: k.id })}>
                What {k.prefix}…{k.last4} did
              </Link>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function TenantScreen({ api, id }: { api: Api; id: string }) {
  const tenant = useLoad(() => api.get<Tenant>(apiPath`/v1/admin/tenants/${id}`), [id]);
  const keys = useLoad(() => api.get<{ data: ApiKeyRecord[] }>(apiPath`/v1/admin/tenants/${id}/api-keys`), [id]);
  const rules = useLoad(() => api.get<{ data: LimitRule[] }>(apiPath`/v1/admin/limit-rules`, { tenantId: id }), [id]);
  const t = tenant.data;
  return (
    <section>
      <ScreenTitle>{t ? t.name : 'Tenant'}</ScreenTitle>
      <p>
        <Link to="/tenants">← Tenants</Link>
      </p>
      <PlatformNotice />
      {t ? <TenantFacts tenant={t} /> : <Loading loaded={tenant} />}
      <h2>API keys</h2>
      {keys.data ? <ApiKeys keys={keys.data.data} /> : <Loading loaded={keys} />}
      <h2>Payments and audit</h2>
      <ul>
        {(['test', 'live'] as const).map((mode) => (
          <li key={mode}>
            <Link to={statementScreenPath({ tenantId: id, mode }, new URLSearchParams())}>Statement, {mode} mode</Link>
          </li>
        ))}
        <li>
          <Link to={auditPath({ tenantId: id })}>Every recorded action on this tenant</Link>
        </li>
      </ul>
      <FindPayment tenantId={id} />
      <h2>Limit rules that can apply to it</h2>
      {rules.data ? <LimitRules rules={rules.data.data} /> : <Loading loaded={rules} />}
    </section>
  );
}

export function LimitRulesScreen({ api }: { api: Api }) {
  const rules = useLoad(() => api.get<{ data: LimitRule[] }>(apiPath`/v1/admin/limit-rules`), []);
  const rates = useLoad(
    () => api.get<{ data: Array<{ asset: string; market: string; updatedAt: string }> }>(apiPath`/v1/admin/rates`),
    [],
  );
  return (
    <section>
      <ScreenTitle>Limits and rates</ScreenTitle>
      <PlatformNotice />
      <h2>Limit rules</h2>
      {rules.data ? <LimitRules rules={rules.data.data} /> : <Loading loaded={rules} />}
      <h2>FX rates (BS per unit)</h2>
      {!rates.data ? (
        <Loading loaded={rates} />
      ) : (
        <table aria-label="FX rates">
          <thead>
            <tr>
              <th scope="col">Asset</th>
              <th scope="col" class="num">
                Market
              </th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {rates.data.data.map((r) => (
              <tr key={r.asset}>
                <th scope="row">{r.asset}</th>
                <td class="num">{r.market}</td>
                <td>
                  <Time iso={r.updatedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
