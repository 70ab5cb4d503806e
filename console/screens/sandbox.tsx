// Test mode only: what the webhook sink received (with its signature verdict), and a form that
// makes a quote, a beneficiary and a payout with a test national id, then follows the payment
// until it resolves.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api, Page, TenantMe } from '../api.ts';
import { apiPath, hasScope } from '../api.ts';
import { parseMajor } from '../format.ts';
import { Amount, ErrorNote, Link, Loading, NeedsScope, Pager, ScreenTitle, Time, useCursor, useLoad } from '../ui.tsx';
import type { Payment } from './payment.tsx';

/** The sandbox rail's triggers (docs/sandbox.md, "Test national ids"). */
const TEST_NATIONAL_IDS: ReadonlyArray<[string, string]> = [
  ['V99990001', 'settles at once'],
  ['V99990002', 'unknown, then settles'],
  ['V99990003', 'unknown, then fails (rail_rejected)'],
  ['V99990004', 'fails at once (beneficiary_mismatch)'],
  ['V99990005', 'fails at once (bank_unreachable)'],
  ['V99990006', 'submitted, then fails (invalid_destination_account)'],
  ['V99990007', 'settles, then is returned by the bank (reversed)'],
  ['V99990008', 'requested instrument unavailable: switches or fails'],
  ['V99990009', 'the rail never answers: unknown, then settles'],
  ['V20111222', 'an ordinary id: submitted, then settles'],
];

const UNRESOLVED = new Set(['created', 'pending', 'submitted', 'unknown']);
const POLL_MS = 1000;
const POLL_FOR_MS = 120_000;

interface SinkDelivery {
  id: string;
  event_id: string;
  received_at: string;
  headers: Record<string, string | string[]>;
  raw_body: string;
  signature_verified: boolean;
}

interface Bank {
  code: string;
  name: string;
  shortName: string;
}

const header = (headers: Record<string, string | string[]>, name: string) => [headers[name] ?? '—'].flat().join(', ');

function SinkDeliveries({ api }: { api: Api }) {
  const paging = useCursor([]);
  const page = useLoad(
    () => api.get<Page<SinkDelivery>>(apiPath`/v1/sandbox/webhooks`, { limit: '25', cursor: paging.cursor }),
    [paging.cursor],
  );
  return (
    <>
      <div class="toolbar">
        <button type="button" onClick={page.reload}>
          Refresh deliveries
        </button>
      </div>
      <Loading loaded={page} />
      {page.data ? (
        page.data.data.length === 0 ? (
          <p class="muted">The sink has received nothing for this program yet.</p>
        ) : (
          <>
            <table aria-label="Sink deliveries">
              <thead>
                <tr>
                  <th scope="col">Received</th>
                  <th scope="col">Event</th>
                  <th scope="col">Type</th>
                  <th scope="col">Attempt</th>
                  <th scope="col">Signature</th>
                  <th scope="col">Body</th>
                </tr>
              </thead>
              <tbody>
                {page.data.data.map((d) => (
                  <tr key={d.id}>
                    <td>
                      <Time iso={d.received_at} />
                    </td>
                    <td>
                      <Link to={`/events/${d.event_id}`}>{d.event_id}</Link>
                    </td>
                    <td>{header(d.headers, 'x-event-type')}</td>
                    <td>{header(d.headers, 'x-delivery-attempt')}</td>
                    <td>
                      {d.signature_verified ? (
                        <span class="status status-settled">verified</span>
                      ) : (
                        <span class="status status-failed">not verified</span>
                      )}
                    </td>
                    <td>
                      <details>
                        <summary>Raw body</summary>
                        <pre class="json">{d.raw_body}</pre>
                      </details>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager paging={paging} nextCursor={page.data.next_cursor} label="Sink deliveries" />
          </>
        )
      ) : null}
    </>
  );
}

interface Draft {
  nationalId: string;
  fullName: string;
  method: 'pago_movil' | 'transferencia';
  bankCode: string;
  phone: string;
  accountNumber: string;
  amount: string;
  senderNationalId: string;
  senderFirstName: string;
  senderLastName: string;
  senderPhone: string;
  senderEmail: string;
}

const FIRST_DRAFT: Draft = {
  nationalId: 'V99990001',
  fullName: 'María Pérez',
  method: 'pago_movil',
  bankCode: '0102',
  phone: '04141234567',
  accountNumber: '',
  amount: '500.00',
  senderNationalId: 'V11222333',
  senderFirstName: 'Ana',
  senderLastName: 'Rojas',
  senderPhone: '04121234567',
  senderEmail: 'ana@example.com',
};

/** The quote, the beneficiary and the payout a draft makes, one after the other; the payout's id. */
async function sendTestPayout(api: Api, draft: Draft, amount: bigint): Promise<string> {
  const quote = await api.post<{ id: string }>(apiPath`/v1/quotes`, { deliver: { asset: 'BS', amount } });
  const beneficiary = await api.post<{ id: string }>(apiPath`/v1/beneficiaries`, {
    fullName: draft.fullName,
    nationalId: draft.nationalId,
    bankCode: draft.bankCode,
    phone: draft.phone,
    ...(draft.method === 'transferencia' || draft.accountNumber !== '' ? { accountNumber: draft.accountNumber } : {}),
  });
  const payout = await api.post<{ id: string }>(
    apiPath`/v1/payouts`,
    {
      quoteId: quote.id,
      method: draft.method,
      beneficiaryId: beneficiary.id,
      sender: {
        nationalId: draft.senderNationalId,
        firstName: draft.senderFirstName,
        lastName: draft.senderLastName,
        phone: draft.senderPhone,
        email: draft.senderEmail,
      },
    },
    { 'idempotency-key': `console-${crypto.randomUUID()}` },
  );
  return payout.id;
}

/** Sends a draft's test payout, then reads its payment every POLL_MS until it resolves (POLL_FOR_MS at most). */
function useTestPayout(api: Api) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [payment, setPayment] = useState<Payment | undefined>(undefined);
  const [watching, setWatching] = useState(false);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);

  const watch = (id: string, until: number) => {
    timer.current = setTimeout(async () => {
      try {
        const current = await api.get<Payment>(apiPath`/v1/payments/${id}`);
        setPayment(current);
        if (UNRESOLVED.has(current.status) && Date.now() < until) return watch(id, until);
      } catch (failure) {
        setError(failure);
      }
      setWatching(false);
    }, POLL_MS);
  };

  const send = async (draft: Draft) => {
    setError(undefined);
    const amount = parseMajor(draft.amount);
    if (amount === undefined || amount <= 0n) {
      setError(new Error('Amount: a positive amount in bolivares with at most two decimals, such as 500.00.'));
      return;
    }
    clearTimeout(timer.current);
    setBusy(true);
    setPayment(undefined);
    try {
      const id = await sendTestPayout(api, draft, amount);
      setPayment(await api.get<Payment>(apiPath`/v1/payments/${id}`));
      setWatching(true);
      watch(id, Date.now() + POLL_FOR_MS);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, payment, watching, send };
}

/** The banks that take the draft's method; until they load, the draft's bank alone. */
function BankSelect({ api, draft, onInput }: { api: Api; draft: Draft; onInput: (event: Event) => void }) {
  const banks = useLoad(
    () => api.get<{ data: Bank[] }>(apiPath`/v1/payouts/banks`, { method: draft.method }),
    [draft.method],
  );
  return (
    <div>
      <label for="sandbox-bankCode">Bank</label>
      <select id="sandbox-bankCode" name="bankCode" value={draft.bankCode} onInput={onInput}>
        {(banks.data?.data ?? [{ code: draft.bankCode, name: draft.bankCode, shortName: draft.bankCode }]).map(
          (bank) => (
            <option key={bank.code} value={bank.code}>
              {bank.code} {bank.shortName}
            </option>
          ),
        )}
      </select>
    </div>
  );
}

/** The draft's fields: `set` copies an edit into the draft, `input` draws a labelled text input of one field. */
function draftFields(draft: Draft, onDraft: (draft: Draft) => void) {
  const set = (name: keyof Draft) => (event: Event) =>
    onDraft({ ...draft, [name]: (event.currentTarget as HTMLInputElement).value });
  const input = (name: keyof Draft, label: string, extra: Record<string, unknown> = {}) => (
    <div>
      <label for={`sandbox-${name}`}>{label}</label>
      <input
        id={`sandbox-${name}`}
        name={name}
        type="text"
        autoComplete="off"
        spellcheck={false}
        value={draft[name]}
        onInput={set(name)}
        {...extra}
      />
    </div>
  );
  return { set, input };
}

function TestPayoutForm({
  api,
  draft,
  onDraft,
  busy,
  onSubmit,
}: {
  api: Api;
  draft: Draft;
  onDraft: (draft: Draft) => void;
  busy: boolean;
  onSubmit: () => void;
}) {
  const { set, input } = draftFields(draft, onDraft);
  return (
    <form
      class="form"
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit();
      }}
      aria-label="Test payout"
    >
      <fieldset>
        <legend>Beneficiary</legend>
        <div>
          <label for="sandbox-nationalId">Test national id</label>
          <select id="sandbox-nationalId" name="nationalId" value={draft.nationalId} onInput={set('nationalId')}>
            {TEST_NATIONAL_IDS.map(([id, what]) => (
              <option key={id} value={id}>
                {id}: {what}
              </option>
            ))}
          </select>
        </div>
        {input('fullName', 'Full name')}
        <div>
          <label for="sandbox-method">Method</label>
          <select id="sandbox-method" name="method" value={draft.method} onInput={set('method')}>
            <option value="pago_movil">pago_movil</option>
            <option value="transferencia">transferencia</option>
          </select>
        </div>
        <BankSelect api={api} draft={draft} onInput={set('bankCode')} />
        {input('phone', 'Phone (04XXXXXXXXX)')}
        {input('accountNumber', 'Account number (20 digits, for transferencia)', { inputMode: 'numeric' })}
      </fieldset>
      <fieldset>
        <legend>Sender</legend>
        {input('senderNationalId', 'National id')}
        {input('senderFirstName', 'First name')}
        {input('senderLastName', 'Last name')}
        {input('senderPhone', 'Phone')}
        {input('senderEmail', 'Email', { type: 'email' })}
      </fieldset>
      <fieldset>
        <legend>Amount</legend>
        {input('amount', 'Delivered amount (Bs)', { inputMode: 'decimal' })}
      </fieldset>
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Sending…' : 'Quote, register and pay out'}
        </button>
      </div>
    </form>
  );
}

/** The payment the test payout made, as it moves, and what to expect of its test national id. */
function TestPayoutOutcome({
  payment,
  watching,
  nationalId,
}: {
  payment: Payment;
  watching: boolean;
  nationalId: string;
}) {
  return (
    <div class="card" aria-live="polite">
      <p>
        Payment{' '}
        <Link to={`/payments/${payment.id}`} class="mono">
          {payment.id}
        </Link>
        : <span class={`status status-${payment.status}`}>{payment.status}</span>
        {payment.status_reason ? <span class="muted"> {payment.status_reason}</span> : null} ·{' '}
        <Amount minor={payment.payout_amount} />
      </p>
      <p class="muted" role="status">
        {watching
          ? 'Waiting for the outcome…'
          : UNRESOLVED.has(payment.status)
            ? 'Still unresolved: open its timeline later.'
            : 'Resolved.'}
        {payment.status === 'settled' && nationalId === 'V99990007'
          ? ' The bank returns it later (SANDBOX_REVERSE_DELAY_MS): see its timeline.'
          : ''}
      </p>
    </div>
  );
}

function TestPayout({ api }: { api: Api }) {
  const [draft, setDraft] = useState<Draft>(FIRST_DRAFT);
  const payout = useTestPayout(api);
  return (
    <>
      <TestPayoutForm
        api={api}
        draft={draft}
        onDraft={setDraft}
        busy={payout.busy}
        onSubmit={() => payout.send(draft)}
      />
      <ErrorNote error={payout.error} />
      {payout.payment ? (
        <TestPayoutOutcome payment={payout.payment} watching={payout.watching} nationalId={draft.nationalId} />
      ) : null}
    </>
  );
}

export function SandboxScreen({ api, me }: { api: Api; me: TenantMe }) {
  const canPay = ['quotes:write', 'beneficiaries:write', 'payments:write', 'payments:read'].filter(
    (scope) => !hasScope(me, scope),
  );
  return (
    <section>
      <ScreenTitle>Sandbox</ScreenTitle>
      <h2>Test payout</h2>
      {canPay.length === 0 ? <TestPayout api={api} /> : <NeedsScope scope={canPay.join(', ')} />}
      <h2>Webhook sink</h2>
      <p class="muted">
        Deliveries the sandbox sink stored for this program; it keeps only those whose signature verified.
      </p>
      {hasScope(me, 'events:read') ? <SinkDeliveries api={api} /> : <NeedsScope scope="events:read" />}
    </section>
  );
}
