// Beneficiaries: the list, and one beneficiary with its payout history and payments.
import type { Api, Page, TenantMe } from '../api.ts';
import { apiPath, hasScope } from '../api.ts';
import { Json, Link, Loading, NeedsScope, Pager, ScreenTitle, Time, useCursor, useLoad } from '../ui.tsx';
import { PaymentTable, type StatementRow } from './payments.tsx';

export interface BeneficiaryRecord {
  id: string;
  full_name: string;
  national_id: string;
  national_id_check: 'valid' | 'invalid_check_digit' | 'not_checked';
  bank_code: string;
  account_number: string | null;
  account_check: 'valid' | 'invalid_check_digits' | 'not_checked';
  phone: string | null;
  asset: string;
  country: string;
  status: string;
  payout_count: number;
  last_success_at: string | null;
  last_failure_reason: string | null;
  created_at: string;
  metadata: Record<string, unknown>;
}

const ACCOUNT_CHECK_LABELS: Record<BeneficiaryRecord['account_check'], string> = {
  valid: 'valid check digits',
  invalid_check_digits: 'invalid check digits: the bank will likely reject it',
  not_checked: 'not checked (no 20-digit account number)',
};

const NATIONAL_ID_CHECK_LABELS: Record<BeneficiaryRecord['national_id_check'], string> = {
  valid: 'RIF check digit valid',
  invalid_check_digit: 'RIF check digit invalid: likely mistyped',
  not_checked: '',
};

export function BeneficiariesScreen({ api }: { api: Api }) {
  const paging = useCursor([]);
  const page = useLoad(
    () => api.get<Page<BeneficiaryRecord>>(apiPath`/v1/beneficiaries`, { limit: '25', cursor: paging.cursor }),
    [paging.cursor],
  );
  return (
    <section>
      <ScreenTitle>Beneficiaries</ScreenTitle>
      <Loading loaded={page} />
      {page.data ? (
        page.data.data.length === 0 ? (
          <p class="muted">No beneficiaries.</p>
        ) : (
          <>
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">National id</th>
                  <th scope="col">Bank</th>
                  <th scope="col">Instrument data</th>
                  <th scope="col" class="num">
                    Payouts
                  </th>
                  <th scope="col">Last failure</th>
                  <th scope="col">Registered</th>
                </tr>
              </thead>
              <tbody>
                {page.data.data.map((b) => (
                  <tr key={b.id}>
                    <td>
                      <Link to={`/beneficiaries/${b.id}`}>{b.full_name}</Link>
                    </td>
                    <td>{b.national_id}</td>
                    <td>{b.bank_code}</td>
                    <td>
                      {b.account_number
                        ? `account …${b.account_number.slice(-4)}`
                        : b.phone
                          ? `phone …${b.phone.slice(-4)}`
                          : '—'}
                      {b.account_check === 'invalid_check_digits' ? ' (invalid check digits)' : ''}
                    </td>
                    <td class="num">{b.payout_count}</td>
                    <td>{b.last_failure_reason ?? '—'}</td>
                    <td>
                      <Time iso={b.created_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager paging={paging} nextCursor={page.data.next_cursor} label="Beneficiaries" />
          </>
        )
      ) : null}
    </section>
  );
}

/** Everything recorded of one beneficiary, with the verdicts of its check digits. */
function BeneficiaryFacts({ b }: { b: BeneficiaryRecord }) {
  return (
    <dl class="facts">
      <dt>Name</dt>
      <dd>{b.full_name}</dd>
      <dt>Id</dt>
      <dd class="mono">{b.id}</dd>
      <dt>National id</dt>
      <dd>
        {b.national_id}
        {b.national_id_check === 'not_checked' ? '' : ` (${NATIONAL_ID_CHECK_LABELS[b.national_id_check]})`}
      </dd>
      <dt>Bank</dt>
      <dd>{b.bank_code}</dd>
      <dt>Account</dt>
      <dd class="mono">{b.account_number ?? '—'}</dd>
      <dt>Account check</dt>
      <dd>{ACCOUNT_CHECK_LABELS[b.account_check]}</dd>
      <dt>Phone</dt>
      <dd>{b.phone ?? '—'}</dd>
      <dt>Status</dt>
      <dd>{b.status}</dd>
      <dt>Payouts</dt>
      <dd>{b.payout_count}</dd>
      <dt>Last success</dt>
      <dd>
        <Time iso={b.last_success_at} />
      </dd>
      <dt>Last failure</dt>
      <dd>{b.last_failure_reason ?? '—'}</dd>
      <dt>Registered</dt>
      <dd>
        <Time iso={b.created_at} />
      </dd>
      <dt>Metadata</dt>
      <dd>
        <Json value={b.metadata} />
      </dd>
    </dl>
  );
}

export function BeneficiaryScreen({ api, me, id }: { api: Api; me: TenantMe; id: string }) {
  const beneficiary = useLoad(() => api.get<BeneficiaryRecord>(apiPath`/v1/beneficiaries/${id}`), [id]);
  const paging = useCursor([id]);
  const payments = useLoad(
    () =>
      hasScope(me, 'payments:read')
        ? api.get<Page<StatementRow>>(apiPath`/v1/payments`, { beneficiaryId: id, limit: '25', cursor: paging.cursor })
        : Promise.resolve(undefined),
    [id, paging.cursor],
  );
  const b = beneficiary.data;
  return (
    <section>
      <ScreenTitle>Beneficiary</ScreenTitle>
      <p>
        <Link to="/beneficiaries">← Beneficiaries</Link>
      </p>
      {!b ? <Loading loaded={beneficiary} /> : <BeneficiaryFacts b={b} />}
      <h2>Payments</h2>
      {!hasScope(me, 'payments:read') ? (
        <NeedsScope scope="payments:read" />
      ) : payments.data ? (
        <>
          <PaymentTable rows={payments.data.data} showBeneficiary={false} />
          <Pager paging={paging} nextCursor={payments.data.next_cursor} label="Beneficiary payments" />
        </>
      ) : (
        <Loading loaded={payments} />
      )}
    </section>
  );
}
