// The platform key's audit screens: the trail of admin and operator actions (GET /v1/admin/audit),
// narrowed by actor, target or tenant, and one payment as the platform sees it, with the key that
// created it (GET /v1/admin/tenants/{id}/payments/{paymentId}).
import { useState } from 'preact/hooks';
import { apiPath, type Api, type Page } from '../api.ts';
import { navigate } from '../router.ts';
import { Json, Link, Loading, Pager, ScreenTitle, Time, useCursor, useLoad } from '../ui.tsx';
import { PlatformNotice } from './platform-notice.tsx';
import { PaymentFacts, Transitions, type Payment } from './payment.tsx';

interface AuditEntry {
  id: string;
  createdAt: string;
  actorKeyId: string;
  actorTenantId: string;
  action: string;
  targetType: string;
  targetId: string;
  targetTenantId: string | null;
  targetMode: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  requestId: string | null;
}

interface AdminPayment extends Payment {
  tenant_id: string;
  mode: string;
  rail: string | null;
  created_by_key_id: string | null;
}

const FILTERS = ['actorKeyId', 'targetType', 'targetId', 'tenantId'] as const;
type Filters = Record<(typeof FILTERS)[number], string>;
const NO_FILTERS: Filters = { actorKeyId: '', targetType: '', targetId: '', tenantId: '' };
const LABELS: Record<keyof Filters, string> = {
  actorKeyId: 'Actor key id',
  targetType: 'Target type',
  targetId: 'Target id',
  tenantId: 'Tenant id',
};

/** The trail's console path, narrowed: other screens link here with one filter. */
export function auditPath(filters: Partial<Filters>): string {
  const query = new URLSearchParams(Object.entries(filters).filter(([, value]) => value));
  const text = query.toString();
  return text === '' ? '/audit' : `/audit?${text}`;
}

/** The filters in this page's query string (links from other screens), unknown ones ignored. */
function filtersOfLocation(): Filters {
  const query = new URLSearchParams(location.search);
  return Object.fromEntries(FILTERS.map((name) => [name, (query.get(name) ?? '').slice(0, 200)])) as Filters;
}

function Target({ row }: { row: AuditEntry }) {
  const id = <span class="mono">{row.targetId}</span>;
  if (
    row.targetType === 'tenant' ||
    ((row.targetType === 'program' || row.targetType === 'webhook_endpoint') && row.targetTenantId)
  ) {
    return (
      <>
        {row.targetType} <Link to={`/tenants/${encodeURIComponent(row.targetTenantId ?? row.targetId)}`}>{id}</Link>
      </>
    );
  }
  if (row.targetType === 'payment' && row.targetTenantId) {
    return (
      <>
        payment{' '}
        <Link to={`/tenants/${encodeURIComponent(row.targetTenantId)}/payments/${encodeURIComponent(row.targetId)}`}>
          {id}
        </Link>
      </>
    );
  }
  return (
    <>
      {row.targetType} {id}
    </>
  );
}

function AuditTable({ rows, onActor }: { rows: AuditEntry[]; onActor: (keyId: string) => void }) {
  if (rows.length === 0) return <p class="muted">No recorded action matches.</p>;
  return (
    <table aria-label="Audit trail">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Action</th>
          <th scope="col">Target</th>
          <th scope="col">Mode</th>
          <th scope="col">Actor key</th>
          <th scope="col">Before</th>
          <th scope="col">After</th>
          <th scope="col">Request</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.id}>
            <td>
              <Time iso={row.createdAt} />
            </td>
            <td class="mono">{row.action}</td>
            <td>
              <Target row={row} />
            </td>
            <td>{row.targetMode ?? '—'}</td>
            <td>
              <button
                type="button"
                class="mono"
                title="Show only what this key did"
                onClick={() => onActor(row.actorKeyId)}
              >
                {row.actorKeyId}
              </button>
            </td>
            <td>{row.before ? <Json value={row.before} /> : '—'}</td>
            <td>{row.after ? <Json value={row.after} /> : '—'}</td>
            <td class="mono">{row.requestId ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function AuditScreen({ api }: { api: Api }) {
  const [draft, setDraft] = useState<Filters>(filtersOfLocation);
  const [filters, setFilters] = useState<Filters>(draft);
  const paging = useCursor([filters]);
  const page = useLoad(
    () => api.get<Page<AuditEntry>>(apiPath`/v1/admin/audit`, { ...filters, limit: '25', cursor: paging.cursor }),
    [filters, paging.cursor],
  );
  const apply = (next: Filters) => {
    setDraft(next);
    setFilters(next);
    navigate(auditPath(next), { replace: true });
  };
  return (
    <section>
      <ScreenTitle>Audit trail</ScreenTitle>
      <p class="muted">
        Every admin and operator action, newest first, recorded with the change itself: who (the API key), what, on
        what, the fields before and after (never a secret or a key; account numbers and phones by their last 4 digits)
        and the request id to find its log lines.
      </p>
      <form
        class="filters"
        aria-label="Audit filters"
        onSubmit={(event) => {
          event.preventDefault();
          apply({ ...draft });
        }}
      >
        {FILTERS.map((name) => (
          <div key={name}>
            <label for={`audit-${name}`}>{LABELS[name]}</label>
            <input
              id={`audit-${name}`}
              name={name}
              type="text"
              spellcheck={false}
              autoComplete="off"
              maxLength={200}
              value={draft[name]}
              onInput={(event) => setDraft({ ...draft, [name]: event.currentTarget.value.trim() })}
            />
          </div>
        ))}
        <div class="actions">
          <button type="submit" class="primary">
            Apply filters
          </button>
          <button type="button" onClick={() => apply(NO_FILTERS)}>
            Clear
          </button>
        </div>
      </form>
      <Loading loaded={page} />
      {page.data ? (
        <>
          <AuditTable rows={page.data.data} onActor={(actorKeyId) => apply({ ...NO_FILTERS, actorKeyId })} />
          <Pager paging={paging} nextCursor={page.data.next_cursor} label="Audit trail" />
        </>
      ) : null}
    </section>
  );
}

/** A tenant's payment as the platform sees it: the public view, its mode, its rail, and the key that created it. */
export function AdminPaymentScreen({ api, tenantId, id }: { api: Api; tenantId: string; id: string }) {
  const payment = useLoad(
    () => api.get<AdminPayment>(apiPath`/v1/admin/tenants/${tenantId}/payments/${id}`),
    [tenantId, id],
  );
  const p = payment.data;
  return (
    <section>
      <ScreenTitle>Payment</ScreenTitle>
      <p>
        <Link to={`/tenants/${encodeURIComponent(tenantId)}`}>← Tenant</Link>
      </p>
      <PlatformNotice />
      {!p ? (
        <Loading loaded={payment} />
      ) : (
        <>
          <PaymentFacts payment={p}>
            <dt>Tenant and mode</dt>
            <dd>
              <span class="mono">{p.tenant_id}</span> · {p.mode}
            </dd>
            <dt>Rail</dt>
            <dd>
              {p.rail ? (
                <Link to="/rails">{p.rail}</Link>
              ) : (
                <span class="muted">none (failed before any rail, or made before payments recorded their rail)</span>
              )}
            </dd>
            <dt>Created by key</dt>
            <dd>
              {p.created_by_key_id ? (
                <>
                  <span class="mono">{p.created_by_key_id}</span>{' '}
                  <Link to={auditPath({ actorKeyId: p.created_by_key_id })}>What else this key did</Link>
                </>
              ) : (
                <span class="muted">not recorded (made before keys were recorded)</span>
              )}
            </dd>
          </PaymentFacts>
          <h2>Transitions</h2>
          <Transitions payment={p} />
          <h2>Recorded actions on this payment</h2>
          <p>
            <Link to={auditPath({ targetType: 'payment', targetId: p.id })}>
              Rechecks and simulations of this payment
            </Link>
          </p>
        </>
      )}
    </section>
  );
}

/** Opens a tenant's payment by its id, without looking for it in the statement. */
export function FindPayment({ tenantId }: { tenantId: string }) {
  const [paymentId, setPaymentId] = useState('');
  return (
    <form
      class="filters"
      aria-label="Find a payment"
      onSubmit={(event) => {
        event.preventDefault();
        if (paymentId) navigate(`/tenants/${encodeURIComponent(tenantId)}/payments/${encodeURIComponent(paymentId)}`);
      }}
    >
      <div>
        <label for="find-payment">Payment id</label>
        <input
          id="find-payment"
          type="text"
          spellcheck={false}
          autoComplete="off"
          maxLength={36}
          placeholder="UUID"
          value={paymentId}
          onInput={(e) => setPaymentId(e.currentTarget.value.trim())}
        />
      </div>
      <div class="actions">
        <button type="submit">Open payment</button>
      </div>
    </form>
  );
}
