// "Needs review" (platform key): the open anomalies — what the rail said that contradicts our records,
// or what reconciliation found — each with both sides' evidence and the raw report, and resolved with
// a note. Nothing here changes a payment or the ledger.
import { useState } from 'preact/hooks';
import { apiPath, type Api, type Page } from '../api.ts';
import { ErrorNote, Json, Link, Loading, Pager, ScreenTitle, Time, useCursor, useLoad } from '../ui.tsx';

interface Anomaly {
  id: string;
  kind: string;
  status: 'open' | 'resolved';
  tenantId: string | null;
  mode: string | null;
  paymentId: string | null;
  ours: Record<string, unknown>;
  theirs: Record<string, unknown>;
  raw: unknown;
  reportedAt: string;
  createdAt: string;
  resolvedBy: string | null;
  resolutionNote: string | null;
  resolvedAt: string | null;
}

/** What each kind means, in the operator's words (the API's kinds). */
const KIND_TITLES: Record<string, string> = {
  settled_after_failed: 'The rail says settled; we recorded failed',
  failed_after_settled: 'The rail says failed; we recorded settled',
  return_of_failed: 'A return of a payment we recorded as failed',
  return_of_unresolved: 'A return of a payment we never saw settle',
  unknown_reference: 'A notification about a reference we have no payment for',
  amount_mismatch: 'The rail reports another amount',
  bank_reference_mismatch: 'The rail reports another bank reference',
  reconciliation_discrepancy: 'Reconciliation found figures that disagree',
  statement_unknown_reference: 'A rail statement line names no payment of that rail',
  statement_missing_at_rail: "A payment settled that day is missing from the rail's statement",
  statement_amount_mismatch: "The rail's statement gives another amount",
  statement_status_mismatch: "The rail's statement gives another status",
  statement_bank_reference_mismatch: "The rail's statement gives another bank reference",
};

const NOTE_LENGTH_MAX = 2000;

function show(value: unknown): string {
  if (value === null || value === undefined) return '—';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Our records and the rail's report side by side, one row per field either side has. */
function Evidence({ anomaly }: { anomaly: Anomaly }) {
  const fields = [...new Set([...Object.keys(anomaly.ours), ...Object.keys(anomaly.theirs)])];
  return (
    <table aria-label={`Evidence of anomaly ${anomaly.id}`}>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Our records</th>
          <th scope="col">The rail (or the check)</th>
        </tr>
      </thead>
      <tbody>
        {fields.map((field) => {
          const ours = show(anomaly.ours[field]);
          const theirs = show(anomaly.theirs[field]);
          const differs = field in anomaly.ours && field in anomaly.theirs && ours !== theirs;
          return (
            <tr key={field}>
              <th scope="row">{field}</th>
              <td class="mono">{ours}</td>
              <td class="mono">
                {theirs}
                {differs ? (
                  <>
                    {' '}
                    <span class="status status-failed">differs</span>
                  </>
                ) : null}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function ResolveForm({
  api,
  anomaly,
  onResolved,
}: {
  api: Api;
  anomaly: Anomaly;
  onResolved: (resolved: Anomaly) => void;
}) {
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const id = `note-${anomaly.id}`;
  return (
    <form
      class="resolve"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          onResolved(
            await api.post<Anomaly>(apiPath`/v1/admin/anomalies/${anomaly.id}/resolve`, { note: note.trim() }),
          );
        } catch (failure) {
          setError(failure);
        } finally {
          setBusy(false);
        }
      }}
    >
      <label for={id}>Resolution note</label>
      <textarea
        id={id}
        rows={2}
        maxLength={NOTE_LENGTH_MAX}
        required
        value={note}
        onInput={(e) => setNote(e.currentTarget.value)}
      />
      <button type="submit" class="primary" disabled={busy || note.trim() === ''}>
        {busy ? 'Resolving…' : 'Resolve'}
      </button>
      <ErrorNote error={error} />
    </form>
  );
}

function AnomalyCard({
  api,
  anomaly,
  onResolved,
}: {
  api: Api;
  anomaly: Anomaly;
  onResolved: (resolved: Anomaly) => void;
}) {
  const headingId = `anomaly-${anomaly.id}`;
  return (
    <article class="card anomaly" aria-labelledby={headingId}>
      <h2 id={headingId}>{KIND_TITLES[anomaly.kind] ?? anomaly.kind}</h2>
      <dl class="facts">
        <dt>Anomaly</dt>
        <dd class="mono">
          {anomaly.id} <span class="muted">({anomaly.kind})</span>
        </dd>
        <dt>Tenant</dt>
        <dd>
          {anomaly.tenantId ? (
            <Link to={`/tenants/${anomaly.tenantId}`}>{anomaly.tenantId}</Link>
          ) : (
            <span class="muted">none known</span>
          )}
        </dd>
        <dt>Mode</dt>
        <dd>{anomaly.mode ?? '—'}</dd>
        <dt>Payment</dt>
        <dd class="mono">{anomaly.paymentId ?? '—'}</dd>
        <dt>Reported</dt>
        <dd>
          <Time iso={anomaly.reportedAt} />
        </dd>
        <dt>Recorded</dt>
        <dd>
          <Time iso={anomaly.createdAt} />
        </dd>
      </dl>
      <Evidence anomaly={anomaly} />
      <details>
        <summary>Raw report</summary>
        <Json value={anomaly.raw} />
      </details>
      <ResolveForm api={api} anomaly={anomaly} onResolved={onResolved} />
    </article>
  );
}

/** Which open anomalies to list: by kind and by mode, and a refresh. */
function AnomalyFilters({
  kind,
  setKind,
  mode,
  setMode,
  onRefresh,
}: {
  kind: string;
  setKind: (kind: string) => void;
  mode: string;
  setMode: (mode: string) => void;
  onRefresh: () => void;
}) {
  return (
    <div class="filters">
      <div>
        <label for="anomaly-kind">Kind</label>
        <select id="anomaly-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
          <option value="">every kind</option>
          {Object.entries(KIND_TITLES).map(([value, title]) => (
            <option key={value} value={value}>
              {title}
            </option>
          ))}
        </select>
      </div>
      <div>
        <label for="anomaly-mode">Mode</label>
        <select id="anomaly-mode" value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
          <option value="live">live (and platform-wide)</option>
          <option value="test">test programs</option>
          <option value="all">both</option>
        </select>
      </div>
      <button type="button" onClick={onRefresh}>
        Refresh
      </button>
    </div>
  );
}

export function NeedsReviewScreen({ api }: { api: Api }) {
  const [kind, setKind] = useState('');
  // Live money first: what test keys made the sandbox say is asked for, never mixed in.
  const [mode, setMode] = useState('live');
  const [resolved, setResolved] = useState<Anomaly | undefined>(undefined);
  const paging = useCursor([kind, mode]);
  const page = useLoad(
    () =>
      api.get<Page<Anomaly>>(apiPath`/v1/admin/anomalies`, {
        status: 'open',
        kind,
        mode,
        limit: '10',
        cursor: paging.cursor,
      }),
    [kind, mode, paging.cursor],
  );
  return (
    <section>
      <ScreenTitle>Needs review</ScreenTitle>
      <p class="muted">
        What the rail said that contradicts our records, and what reconciliation found. Nothing was changed: each waits
        for a person to look (see docs/operations.md for what each kind means), and is resolved with a note saying what
        was found and done.
      </p>
      <AnomalyFilters kind={kind} setKind={setKind} mode={mode} setMode={setMode} onRefresh={page.reload} />
      {resolved ? (
        <p class="notice" role="status">
          Anomaly {resolved.id} resolved.
        </p>
      ) : null}
      <Loading loaded={page} />
      {page.data ? (
        page.data.data.length === 0 ? (
          <p class="muted">Nothing needs review.</p>
        ) : (
          <>
            {page.data.data.map((anomaly) => (
              <AnomalyCard
                key={anomaly.id}
                api={api}
                anomaly={anomaly}
                onResolved={(done) => {
                  setResolved(done);
                  page.reload();
                }}
              />
            ))}
            <Pager paging={paging} nextCursor={page.data.next_cursor} label="Anomalies" />
          </>
        )
      ) : null}
    </section>
  );
}
