// One payment's timeline: its transitions (actor and reason), its ledger entries, its outcome events
// with every delivery attempt, and its beneficiary's history.
import type { ComponentChildren } from 'preact';
import type { Api, Page, TenantMe } from '../api.ts';
import { apiPath, hasScope } from '../api.ts';
import { Amount, ErrorNote, Json, Link, Loading, NeedsScope, ScreenTitle, Time, useLoad } from '../ui.tsx';
import { EventDeliveries, RetryEventButton, type EventDetail, type EventRecord } from './events.tsx';
import type { StatementRow } from './payments.tsx';
import { PaymentTable } from './payments.tsx';
import type { BeneficiaryRecord } from './beneficiaries.tsx';

export interface Payment extends StatementRow {
  quote_id: string | null;
  compensated: boolean;
  updated_at: string;
  events: Array<{
    from_status: string | null;
    to_status: string;
    reason: string | null;
    actor: string;
    metadata: Record<string, unknown>;
    created_at: string;
  }>;
}

interface LedgerEntry {
  id: string;
  kind: string;
  created_at: string;
  postings: Array<{ asset: string; account: string; amount: string }>;
}

export function Transitions({ payment }: { payment: Payment }) {
  return (
    <table aria-label="Transitions">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Transition</th>
          <th scope="col">Reason</th>
          <th scope="col">Actor</th>
        </tr>
      </thead>
      <tbody>
        {payment.events.map((t, i) => (
          <tr key={i}>
            <td>
              <Time iso={t.created_at} />
            </td>
            <td>
              {t.from_status ?? 'new'} → <span class={`status status-${t.to_status}`}>{t.to_status}</span>
            </td>
            <td>{t.reason ?? '—'}</td>
            <td>{t.actor}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Ledger({ api, id }: { api: Api; id: string }) {
  const ledger = useLoad(() => api.get<{ data: LedgerEntry[] }>(apiPath`/v1/payments/${id}/ledger`), [id]);
  if (!ledger.data) return <Loading loaded={ledger} />;
  if (ledger.data.data.length === 0) return <p class="muted">No ledger entry: nothing was charged.</p>;
  return (
    <>
      {ledger.data.data.map((entry) => (
        <table key={entry.id} class="ledger" aria-label={`Ledger entry ${entry.kind}`}>
          <caption>
            <strong>{entry.kind}</strong> <Time iso={entry.created_at} />
          </caption>
          <thead>
            <tr>
              <th scope="col">Account</th>
              <th scope="col" class="num">
                Debit
              </th>
              <th scope="col" class="num">
                Credit
              </th>
            </tr>
          </thead>
          <tbody>
            {entry.postings.map((p) => {
              const credit = p.amount.startsWith('-');
              return (
                <tr key={`${p.asset}/${p.account}`}>
                  <td>
                    {p.account} <span class="muted">{p.asset}</span>
                  </td>
                  <td class="num">{credit ? '' : <Amount minor={p.amount} asset={p.asset} />}</td>
                  <td class="num">{credit ? <Amount minor={p.amount.slice(1)} asset={p.asset} /> : ''}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ))}
    </>
  );
}

function OutcomeEvents({ api, me, id }: { api: Api; me: TenantMe; id: string }) {
  const events = useLoad(async () => {
    const list = await api.get<Page<EventRecord>>(apiPath`/v1/events`, { paymentId: id, limit: '100' });
    return Promise.all(list.data.map((event) => api.get<EventDetail>(apiPath`/v1/events/${event.id}`)));
  }, [id]);
  if (!events.data) return <Loading loaded={events} />;
  if (events.data.length === 0)
    return <p class="muted">No outcome event yet: one is written when the payment settles, fails or is reversed.</p>;
  return (
    <>
      {events.data.map((event) => (
        <div key={event.id} class="card">
          <h3>
            <Link to={`/events/${event.id}`}>Event {event.id}</Link> {event.event_type}{' '}
            <span class={`status status-${event.status}`}>{event.status}</span>
          </h3>
          <p>
            {event.attempts} attempt{event.attempts === 1 ? '' : 's'}
            {event.last_error ? <> · last error: {event.last_error}</> : null}
          </p>
          <EventDeliveries deliveries={event.deliveries} />
          {hasScope(me, 'events:write') ? (
            <RetryEventButton api={api} event={event} onDone={() => events.reload()} />
          ) : null}
        </div>
      ))}
    </>
  );
}

function BeneficiaryHistory({ api, me, beneficiaryId }: { api: Api; me: TenantMe; beneficiaryId: string }) {
  const beneficiary = useLoad(
    () => api.get<BeneficiaryRecord>(apiPath`/v1/beneficiaries/${beneficiaryId}`),
    [beneficiaryId],
  );
  const recent = useLoad(
    () => api.get<Page<StatementRow>>(apiPath`/v1/payments`, { beneficiaryId, limit: '10' }),
    [beneficiaryId],
  );
  return (
    <>
      {hasScope(me, 'beneficiaries:read') ? (
        beneficiary.data ? (
          <dl class="facts">
            <dt>Beneficiary</dt>
            <dd>
              <Link to={`/beneficiaries/${beneficiaryId}`}>{beneficiary.data.full_name}</Link> (
              {beneficiary.data.national_id}, bank {beneficiary.data.bank_code})
            </dd>
            <dt>Payouts</dt>
            <dd>{beneficiary.data.payout_count}</dd>
            <dt>Last success</dt>
            <dd>
              <Time iso={beneficiary.data.last_success_at} />
            </dd>
            <dt>Last failure</dt>
            <dd>{beneficiary.data.last_failure_reason ?? '—'}</dd>
          </dl>
        ) : (
          <Loading loaded={beneficiary} />
        )
      ) : (
        <NeedsScope scope="beneficiaries:read" />
      )}
      <h3>Latest payments to this beneficiary</h3>
      {recent.data ? <PaymentTable rows={recent.data.data} showBeneficiary={false} /> : <Loading loaded={recent} />}
    </>
  );
}

/** A payment's facts as its tenant reads them; `children` adds rows (`dt`/`dd` pairs) at the end. */
export function PaymentFacts({ payment: p, children }: { payment: Payment; children?: ComponentChildren }) {
  return (
    <dl class="facts">
      <dt>Id</dt>
      <dd class="mono">{p.id}</dd>
      <dt>Status</dt>
      <dd>
        <span class={`status status-${p.status}`}>{p.status}</span>{' '}
        {p.status_reason ? <span class="muted">{p.status_reason}</span> : null}
      </dd>
      <dt>Delivered</dt>
      <dd>
        <Amount minor={p.payout_amount} asset={p.payout_asset} />
      </dd>
      <dt>Fee</dt>
      <dd>
        <Amount minor={p.fee_amount} asset={p.payout_asset} />
      </dd>
      <dt>Charged</dt>
      <dd>
        <Amount minor={p.source_amount} asset={p.source_asset} />
        {p.compensated ? <span class="muted"> (given back: compensated)</span> : null}
      </dd>
      <dt>Method</dt>
      <dd>{p.method ?? '—'}</dd>
      <dt>Bank reference</dt>
      <dd class="mono">{p.bank_reference ?? '—'}</dd>
      <dt>Created</dt>
      <dd>
        <Time iso={p.created_at} />
      </dd>
      <dt>Settled</dt>
      <dd>
        <Time iso={p.settled_at} />
      </dd>
      <dt>Customer</dt>
      <dd class="mono">{p.customer_id ?? '—'}</dd>
      <dt>Quote</dt>
      <dd class="mono">{p.quote_id ?? '—'}</dd>
      <dt>Metadata</dt>
      <dd>
        <Json value={p.metadata} />
      </dd>
      {children}
    </dl>
  );
}

export function PaymentScreen({ api, me, id }: { api: Api; me: TenantMe; id: string }) {
  const payment = useLoad(() => api.get<Payment>(apiPath`/v1/payments/${id}`), [id]);
  const p = payment.data;
  return (
    <section>
      <ScreenTitle>Payment</ScreenTitle>
      <p>
        <Link to="/payments">← Payments</Link>
      </p>
      {!p ? (
        <Loading loaded={payment} />
      ) : (
        <>
          <div class="toolbar">
            <button type="button" onClick={payment.reload}>
              Refresh
            </button>
          </div>
          <ErrorNote error={payment.error} />
          <PaymentFacts payment={p} />
          <h2>Transitions</h2>
          <Transitions payment={p} />
          <h2>Ledger entries</h2>
          <Ledger api={api} id={p.id} />
          <h2>Outcome events and deliveries</h2>
          {hasScope(me, 'events:read') ? (
            <OutcomeEvents api={api} me={me} id={p.id} />
          ) : (
            <NeedsScope scope="events:read" />
          )}
          <h2>Beneficiary history</h2>
          {p.beneficiary_id ? (
            <BeneficiaryHistory api={api} me={me} beneficiaryId={p.beneficiary_id} />
          ) : (
            <p class="muted">No registered beneficiary.</p>
          )}
        </>
      )}
    </section>
  );
}
