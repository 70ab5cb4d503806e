// Payout batches: the recent ones (GET /v1/payout-batches), one batch with its counts by status and
// each item's result, followed until every payment is final. The payroll screen shows the batches it
// submits with the same progress.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api, Page } from '../api.ts';
import { apiPath } from '../api.ts';
import { formatMinor } from '../format.ts';
import { Amount, ErrorNote, Link, Loading, Pager, ScreenTitle, Time, useCursor, useLoad } from '../ui.tsx';

const ITEM_STATUSES = [
  'created',
  'pending',
  'submitted',
  'unknown',
  'settled',
  'failed',
  'returned',
  'reversed',
  'refused',
] as const;
type ItemStatus = (typeof ITEM_STATUSES)[number];
/** An item is final once its payment is, or when it was refused (no payment). */
const FINAL: ReadonlySet<string> = new Set(['settled', 'failed', 'returned', 'reversed', 'refused']);

const POLL_MS = 1000;
/** How long a screen follows a batch before it stops asking (a Refresh button follows again). */
const FOLLOW_FOR_MS = 15 * 60_000;

interface BatchItemResult {
  index: number;
  reference: string;
  status: ItemStatus;
  paymentId: string | null;
  reason: string | null;
  amount: string | null;
  error: { code: string; message: string; meta?: Record<string, unknown> } | null;
}

export interface PayoutBatch {
  id: string;
  status: 'receiving' | 'processing' | 'completed';
  itemCount: number;
  counts: Record<ItemStatus, number>;
  totals: Record<ItemStatus, string>;
  createdAt: string;
  completedAt: string | null;
  items?: BatchItemResult[];
}

const finalCount = (batch: PayoutBatch) =>
  ITEM_STATUSES.filter((s) => FINAL.has(s)).reduce((sum, s) => sum + (batch.counts[s] ?? 0), 0);

/** "2 settled, 1 failed": the statuses that have items, in lifecycle order. */
function countsText(batch: PayoutBatch): string {
  return ITEM_STATUSES.filter((s) => (batch.counts[s] ?? 0) > 0)
    .map((s) => `${batch.counts[s]} ${s}`)
    .join(', ');
}

/** A batch read again every second until it is completed, for at most FOLLOW_FOR_MS. */
function useFollowedBatch(api: Api, id: string, first: PayoutBatch | undefined) {
  const [batch, setBatch] = useState<PayoutBatch | undefined>(first);
  const [error, setError] = useState<unknown>(undefined);
  const [following, setFollowing] = useState(true);
  const [round, setRound] = useState(0);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => {
    let stopped = false;
    const deadline = Date.now() + FOLLOW_FOR_MS;
    const read = async () => {
      try {
        const current = await api.get<PayoutBatch>(apiPath`/v1/payout-batches/${id}`);
        if (stopped) return;
        setBatch(current);
        setError(undefined);
        if (current.status === 'completed') return setFollowing(false);
      } catch (failure) {
        if (stopped) return;
        setError(failure);
      }
      if (Date.now() >= deadline) return setFollowing(false);
      timer.current = setTimeout(read, POLL_MS);
    };
    setFollowing(true);
    void read();
    return () => {
      stopped = true;
      clearTimeout(timer.current);
    };
  }, [id, round]);
  return { batch, error, following, refresh: () => setRound((n) => n + 1) };
}

function CountsTable({ batch, label }: { batch: PayoutBatch; label: string }) {
  return (
    <table aria-label={label} class="counts">
      <thead>
        <tr>
          <th scope="col">Status</th>
          <th scope="col" class="num">
            Items
          </th>
          <th scope="col" class="num">
            Delivered amount
          </th>
        </tr>
      </thead>
      <tbody>
        {ITEM_STATUSES.map((status) => (
          <tr key={status}>
            <th scope="row">
              <span class={`status status-${status}`}>{status}</span>
            </th>
            <td class="num">{batch.counts[status] ?? 0}</td>
            <td class="num">
              <Amount minor={batch.totals[status]} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Outcome({ item }: { item: BatchItemResult }) {
  if (item.error) {
    return (
      <>
        <span class="mono">{item.error.code}</span>: {item.error.message}
      </>
    );
  }
  return item.reason ? <span class="mono">{item.reason}</span> : <span class="muted">—</span>;
}

function ItemsTable({
  items,
  label,
  rowOf,
}: {
  items: BatchItemResult[];
  label: string;
  rowOf?: (index: number) => number | undefined;
}) {
  return (
    <table aria-label={label}>
      <thead>
        <tr>
          <th scope="col">{rowOf ? 'Row' : 'Item'}</th>
          <th scope="col">Reference</th>
          <th scope="col">Status</th>
          <th scope="col" class="num">
            Amount
          </th>
          <th scope="col">Reason or error</th>
          <th scope="col">Payment</th>
        </tr>
      </thead>
      <tbody>
        {items.map((item) => (
          <tr key={item.index}>
            <td class="num">{rowOf ? (rowOf(item.index) ?? '—') : item.index + 1}</td>
            <td class="mono">{item.reference}</td>
            <td>
              <span class={`status status-${item.status}`}>{item.status}</span>
            </td>
            <td class="num">
              <Amount minor={item.amount} />
            </td>
            <td>
              <Outcome item={item} />
            </td>
            <td>
              {item.paymentId ? (
                <Link to={`/payments/${item.paymentId}`} class="mono">
                  {item.paymentId}
                </Link>
              ) : (
                <span class="muted">none</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * One batch followed until completed: a status line (a live region), the counts and amounts by
 * status, and every item's result. `rowOf` names items by the row of the file they came from.
 */
export function BatchProgress({
  api,
  id,
  first,
  title,
  rowOf,
}: {
  api: Api;
  id: string;
  first?: PayoutBatch;
  title: string;
  rowOf?: (index: number) => number | undefined;
}) {
  const { batch, error, following, refresh } = useFollowedBatch(api, id, first);
  return (
    <section class="batch" aria-label={title}>
      <h2>
        {title}: <span class="mono">{id}</span>
      </h2>
      <p role="status" class="batch-status">
        {batch ? (
          <>
            <span class={`status status-${batch.status === 'completed' ? 'settled' : 'pending'}`}>{batch.status}</span>{' '}
            {finalCount(batch)} of {batch.itemCount} items final{countsText(batch) ? ` (${countsText(batch)})` : ''}.
            {batch.status !== 'completed'
              ? following
                ? ' Following…'
                : ' Stopped following: refresh to follow again.'
              : ''}
          </>
        ) : (
          'Loading…'
        )}
      </p>
      <ErrorNote error={error} />
      {batch && batch.status !== 'completed' && !following ? (
        <button type="button" onClick={refresh}>
          Refresh batch
        </button>
      ) : null}
      {batch?.status === 'receiving' ? (
        <p class="notice">
          Its items are still being recorded. If this lasts, the request that sent it stopped midway: submit the same
          upload again (same key) to complete it.
        </p>
      ) : null}
      {batch ? (
        <>
          <CountsTable batch={batch} label={`${title} by status`} />
          <dl class="facts">
            <dt>Created</dt>
            <dd>
              <Time iso={batch.createdAt} />
            </dd>
            <dt>Completed</dt>
            <dd>
              {batch.completedAt ? (
                <Time iso={batch.completedAt} />
              ) : (
                <span class="muted">not yet: a payment is not final</span>
              )}
            </dd>
          </dl>
          {batch.items ? <ItemsTable items={batch.items} label={`${title} items`} rowOf={rowOf} /> : null}
        </>
      ) : null}
    </section>
  );
}

export function BatchesScreen({ api }: { api: Api }) {
  const paging = useCursor([]);
  const page = useLoad(
    () => api.get<Page<PayoutBatch>>(apiPath`/v1/payout-batches`, { limit: '25', cursor: paging.cursor }),
    [paging.cursor],
  );
  return (
    <section>
      <ScreenTitle>Payout batches</ScreenTitle>
      <div class="toolbar">
        <Link to="/payroll">Pay a payroll file</Link>
        <button type="button" onClick={page.reload}>
          Refresh batches
        </button>
      </div>
      <Loading loaded={page} />
      {page.data ? (
        page.data.data.length === 0 ? (
          <p class="muted">No payout batch yet.</p>
        ) : (
          <>
            <table aria-label="Payout batches">
              <thead>
                <tr>
                  <th scope="col">Created</th>
                  <th scope="col">Batch</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">
                    Items
                  </th>
                  <th scope="col" class="num">
                    Final
                  </th>
                  <th scope="col">By status</th>
                  <th scope="col" class="num">
                    Settled amount
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.data.data.map((batch) => (
                  <tr key={batch.id}>
                    <td>
                      <Time iso={batch.createdAt} />
                    </td>
                    <td>
                      <Link to={`/batches/${batch.id}`} class="mono">
                        {batch.id}
                      </Link>
                    </td>
                    <td>{batch.status}</td>
                    <td class="num">{batch.itemCount}</td>
                    <td class="num">{finalCount(batch)}</td>
                    <td>{countsText(batch)}</td>
                    <td class="num">{formatMinor(batch.totals.settled)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager paging={paging} nextCursor={page.data.next_cursor} label="Payout batches" />
          </>
        )
      ) : null}
    </section>
  );
}

export function BatchScreen({ api, id }: { api: Api; id: string }) {
  const [exportError, setExportError] = useState<unknown>(undefined);
  return (
    <section>
      <ScreenTitle>Payout batch</ScreenTitle>
      <div class="toolbar">
        <Link to="/batches">All payout batches</Link>
        <button
          type="button"
          onClick={async () => {
            setExportError(undefined);
            try {
              await api.download(apiPath`/v1/payments/export`, { batchId: id }, `payments-batch-${id}.csv`);
            } catch (failure) {
              setExportError(failure);
            }
          }}
        >
          Export its payments (CSV)
        </button>
      </div>
      <ErrorNote error={exportError} />
      <BatchProgress api={api} id={id} title="Batch" />
    </section>
  );
}
