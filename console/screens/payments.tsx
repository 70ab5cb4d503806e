// The statement: GET /v1/payments with its filters and cursor, and its CSV export. For the platform
// key, the same screen lists one tenant's statement in a mode (GET /v1/admin/tenants/{id}/payments),
// which has no export.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { StatementRow } from '../../sdk/src/generated/types.gen.ts';
import type { Api, Page, Query } from '../api.ts';
import { apiPath } from '../api.ts';
import { formatTimes } from '../format.ts';
// A report counts every payment status: its list is the status filter's.
import { REPORT_STATUSES as PAYMENT_STATUSES } from '../report.ts';
import { BASE } from '../router.ts';
import { paymentScreenPath, statementApi, statementScreenPath, type TenantStatement } from '../statement.ts';
import { Amount, ErrorNote, Link, Loading, Pager, ScreenTitle, Time, useCursor, useLoad } from '../ui.tsx';

// A row of the statement is the API's, as the SDK's generated types state it (type-only).
export type { StatementRow };

interface Filters {
  from: string;
  to: string;
  status: string;
  beneficiaryId: string;
  customerId: string;
  /** A bucket of the overview: created at or after (ISO instant), and before. */
  createdFrom: string;
  createdBefore: string;
}

const NO_FILTERS: Filters = {
  from: '',
  to: '',
  status: '',
  beneficiaryId: '',
  customerId: '',
  createdFrom: '',
  createdBefore: '',
};

const INSTANT = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$/;

/**
 * The filters an address carries (`?status=…&createdFrom=…&createdBefore=…`, what a bar of the
 * overview links to). Only a known status and instants of the API's form are taken; the API checks
 * them again.
 */
function filtersFromQuery(search: string): Filters {
  const params = new URLSearchParams(search);
  const status = params.get('status') ?? '';
  const instant = (name: string) => {
    const value = params.get(name) ?? '';
    return INSTANT.test(value) ? value : '';
  };
  return {
    ...NO_FILTERS,
    status: (PAYMENT_STATUSES as readonly string[]).includes(status) ? status : '',
    createdFrom: instant('createdFrom'),
    createdBefore: instant('createdBefore'),
  };
}

/** The created range from the address, in Caracas time, with a way to drop it. */
function CreatedRange({ filters, onClear }: { filters: Filters; onClear: () => void }) {
  if (!filters.createdFrom && !filters.createdBefore) return null;
  const at = (iso: string) => (iso ? `${formatTimes(iso)?.caracas ?? iso} Caracas` : 'any time');
  return (
    <p class="notice active-filter" role="status">
      <span>
        Created from {at(filters.createdFrom)} to before {at(filters.createdBefore)}
        {filters.status ? `, status ${filters.status}` : ''}.
      </span>
      <button type="button" onClick={onClear}>
        Clear created range
      </button>
    </p>
  );
}

export function PaymentTable({
  rows,
  showBeneficiary = true,
  of,
}: {
  rows: StatementRow[];
  showBeneficiary?: boolean;
  of?: TenantStatement;
}) {
  if (rows.length === 0) return <p class="muted">No payments.</p>;
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Created</th>
          <th scope="col">Payment</th>
          <th scope="col">Status</th>
          <th scope="col" class="num">
            Delivered
          </th>
          <th scope="col" class="num">
            Fee
          </th>
          <th scope="col">Method</th>
          {showBeneficiary ? <th scope="col">Beneficiary</th> : null}
          <th scope="col">Settled</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.id}>
            <td>
              <Time iso={row.created_at} />
            </td>
            <td>
              <Link to={paymentScreenPath(of, row.id)} class="mono">
                {row.id}
              </Link>
            </td>
            <td>
              <span class={`status status-${row.status}`}>{row.status}</span>
              {row.status_reason ? <div class="muted">{row.status_reason}</div> : null}
            </td>
            <td class="num">
              <Amount minor={row.payout_amount} asset={row.payout_asset} />
            </td>
            <td class="num">
              <Amount minor={row.fee_amount} asset={row.payout_asset} />
            </td>
            <td>{row.method ?? '—'}</td>
            {showBeneficiary ? (
              <td>
                {row.beneficiary_id ? (
                  <Link to={`/beneficiaries/${row.beneficiary_id}`} class="mono">
                    {row.beneficiary_id.slice(0, 8)}…
                  </Link>
                ) : (
                  '—'
                )}
              </td>
            ) : null}
            <td>
              <Time iso={row.settled_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Whose statement the screen shows, under its title: nothing for the tenant's own, the tenant and mode for the platform. */
function StatementOwner({ api, of }: { api: Api; of: TenantStatement }) {
  const tenant = useLoad(() => api.get<{ name: string }>(apiPath`/v1/admin/tenants/${of.tenantId}`), [of.tenantId]);
  return (
    <p>
      <Link to={`/tenants/${encodeURIComponent(of.tenantId)}`}>← {tenant.data?.name ?? 'Tenant'}</Link> · {of.mode}{' '}
      mode, read with the platform key
    </p>
  );
}

/** The filters being typed (`draft`) and those applied, which the address keeps what a link can carry of. */
function useStatementFilters(of: TenantStatement | undefined) {
  const [draft, setDraft] = useState<Filters>(() => filtersFromQuery(location.search));
  const [filters, setFilters] = useState<Filters>(() => filtersFromQuery(location.search));
  const apply = (next: Filters) => {
    setFilters(next);
    // The address keeps what a link can carry (a bucket of the overview), so a reload shows the same.
    const params = new URLSearchParams();
    if (next.createdFrom || next.createdBefore) {
      for (const name of ['status', 'createdFrom', 'createdBefore'] as const)
        if (next[name]) params.set(name, next[name]);
    }
    history.replaceState(null, '', BASE + statementScreenPath(of, params));
  };
  return { draft, setDraft, filters, apply };
}

/** The CSV export of the applied filters: whether one is under way, and how the last one failed. */
function useStatementExport(api: Api) {
  const [error, setError] = useState<unknown>(undefined);
  const [exporting, setExporting] = useState(false);
  const run = async (filters: Filters) => {
    setError(undefined);
    setExporting(true);
    try {
      await api.download(apiPath`/v1/payments/export`, { ...filters }, 'payments.csv');
    } catch (failure) {
      setError(failure);
    } finally {
      setExporting(false);
    }
  };
  return { error, exporting, run };
}

/** The filters form; `children` are the extra actions after Apply and Clear (the tenant's export). */
function StatementFilters({
  draft,
  onDraft,
  onApply,
  onClear,
  children,
}: {
  draft: Filters;
  onDraft: (draft: Filters) => void;
  onApply: () => void;
  onClear: () => void;
  children: ComponentChildren;
}) {
  const field = (name: keyof Filters) => ({
    id: `filter-${name}`,
    name,
    value: draft[name],
    onInput: (event: Event) => onDraft({ ...draft, [name]: (event.currentTarget as HTMLInputElement).value }),
  });
  return (
    <form
      class="filters"
      aria-label="Statement filters"
      onSubmit={(event) => {
        event.preventDefault();
        onApply();
      }}
    >
      <div>
        <label for="filter-from">Settled from (Caracas day)</label>
        <input type="date" {...field('from')} />
      </div>
      <div>
        <label for="filter-to">Settled to (Caracas day)</label>
        <input type="date" {...field('to')} />
      </div>
      <div>
        <label for="filter-status">Status</label>
        <select {...field('status')}>
          <option value="">any</option>
          {PAYMENT_STATUSES.map((status) => (
            <option key={status} value={status}>
              {status}
            </option>
          ))}
        </select>
      </div>
      <div>
        <label for="filter-beneficiaryId">Beneficiary id</label>
        <input type="text" spellcheck={false} autoComplete="off" placeholder="UUID" {...field('beneficiaryId')} />
      </div>
      <div>
        <label for="filter-customerId">Customer id</label>
        <input type="text" spellcheck={false} autoComplete="off" placeholder="UUID" {...field('customerId')} />
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Apply filters
        </button>
        <button type="button" onClick={onClear}>
          Clear
        </button>
        {children}
      </div>
    </form>
  );
}

/** The statement of the signed-in tenant, or (`of`, the platform key) of one tenant in a mode. */
export function PaymentsScreen({ api, of }: { api: Api; of?: TenantStatement }) {
  const { draft, setDraft, filters, apply } = useStatementFilters(of);
  const exported = useStatementExport(api);
  const paging = useCursor([filters]);
  const list = statementApi(of);
  const query: Query = { ...list.query, ...filters, limit: '25', cursor: paging.cursor };
  const page = useLoad(
    () => api.get<Page<StatementRow>>(list.path, query),
    [of?.tenantId, of?.mode, filters, paging.cursor],
  );
  return (
    <section>
      <ScreenTitle>Payments</ScreenTitle>
      {of ? <StatementOwner api={api} of={of} /> : null}
      <StatementFilters
        draft={draft}
        onDraft={setDraft}
        onApply={() => apply({ ...draft })}
        onClear={() => {
          setDraft(NO_FILTERS);
          apply(NO_FILTERS);
        }}
      >
        {of ? null : (
          <button type="button" disabled={exported.exporting} onClick={() => exported.run(filters)}>
            {exported.exporting ? 'Exporting…' : 'Export CSV'}
          </button>
        )}
      </StatementFilters>
      <CreatedRange
        filters={filters}
        onClear={() => {
          const next = { ...filters, createdFrom: '', createdBefore: '' };
          setDraft({ ...draft, createdFrom: '', createdBefore: '' });
          apply(next);
        }}
      />
      {of ? null : (
        <p class="muted">The CSV export has every payment matching the applied filters, amounts in minor units.</p>
      )}
      <ErrorNote error={exported.error} />
      <Loading loaded={page} />
      {page.data ? (
        <>
          <PaymentTable rows={page.data.data} of={of} showBeneficiary={!of} />
          <Pager paging={paging} nextCursor={page.data.next_cursor} label="Statement" />
        </>
      ) : null}
    </section>
  );
}
