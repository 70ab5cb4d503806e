// The outcome events queue by status, one event's deliveries, and the retries (one event, or the
// whole dead queue), each confirmed first.
import { useState } from 'preact/hooks';
import type { Api, Page, TenantMe } from '../api.ts';
import { apiPath, hasScope } from '../api.ts';
import { ConfirmButton, Json, Link, Loading, Pager, ScreenTitle, Time, useCursor, useLoad } from '../ui.tsx';

const EVENT_STATUSES = ['pending', 'published', 'dead'] as const;

export interface EventRecord {
  id: string;
  event_type: string;
  aggregate_type: string;
  aggregate_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
  next_attempt_at: string | null;
  published_at: string | null;
  dead_at: string | null;
  created_at: string;
}

export interface Delivery {
  attempt: number;
  status_code: number | null;
  ok: boolean;
  error: string | null;
  duration_ms: number;
}

export interface EventDetail extends EventRecord {
  payload: Record<string, unknown>;
  deliveries: Delivery[];
}

interface Retried {
  id: string;
  event_type: string;
  status: string;
  attempts: number;
  requeued: boolean;
}

export function EventDeliveries({ deliveries }: { deliveries: Delivery[] }) {
  if (deliveries.length === 0) return <p class="muted">No delivery attempt yet.</p>;
  return (
    <table aria-label="Delivery attempts">
      <thead>
        <tr>
          <th scope="col">Attempt</th>
          <th scope="col">Answer</th>
          <th scope="col">Result</th>
          <th scope="col" class="num">
            Duration
          </th>
        </tr>
      </thead>
      <tbody>
        {deliveries.map((d) => (
          <tr key={d.attempt}>
            <td>{d.attempt}</td>
            <td>{d.status_code === null ? 'no answer' : `HTTP ${d.status_code}`}</td>
            <td>{d.ok ? 'delivered' : `failed${d.error ? `: ${d.error}` : ''}`}</td>
            <td class="num">{d.duration_ms} ms</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The answer of the last retry, announced to screen readers too. */
function useRetryNote() {
  const [note, setNote] = useState<string | undefined>(undefined);
  const element = note ? (
    <p class="notice" role="status">
      {note}
    </p>
  ) : null;
  return { setNote, element };
}

function retriedNote(r: Retried): string {
  return r.requeued
    ? `Event ${r.id} requeued: now ${r.status}, due for delivery now (${r.attempts} attempts so far).`
    : `Event ${r.id} was already pending and due: nothing changed.`;
}

export function RetryEventButton({
  api,
  event,
  onDone,
}: {
  api: Api;
  event: EventRecord;
  onDone: (note: string) => void;
}) {
  return (
    <ConfirmButton
      label={`Retry event ${event.id}`}
      title={`Retry event ${event.id}?`}
      confirmLabel="Retry now"
      onConfirm={async () => onDone(retriedNote(await api.post<Retried>(apiPath`/v1/events/${event.id}/retry`)))}
    >
      <p>
        The {event.event_type} event (now {event.status}, {event.attempts} attempts) goes back to the delivery queue,
        due now, and is sent again to the program's webhook endpoint
        {event.status === 'published' ? ': the receiver gets it a second time' : ''}.
      </p>
    </ConfirmButton>
  );
}

/** Every dead event back to the delivery queue, confirmed first. */
function RetryDeadButton({ api, onDone }: { api: Api; onDone: (note: string) => void }) {
  return (
    <ConfirmButton
      label="Retry all dead events"
      title="Retry every dead event?"
      confirmLabel="Retry all"
      onConfirm={async () => {
        const { requeued } = await api.post<{ requeued: number }>(apiPath`/v1/events/retry-dead`);
        onDone(`${requeued} dead event${requeued === 1 ? '' : 's'} requeued: pending, due for delivery now.`);
      }}
    >
      <p>
        Every dead event of this program goes back to the delivery queue, due now. One that fails again goes straight
        back to dead.
      </p>
    </ConfirmButton>
  );
}

/** One page of the queue; with events:write each row has its retry. */
function EventTable({
  api,
  events,
  canWrite,
  onRetried,
}: {
  api: Api;
  events: EventRecord[];
  canWrite: boolean;
  onRetried: (note: string) => void;
}) {
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Event</th>
          <th scope="col">Type</th>
          <th scope="col">Payment</th>
          <th scope="col">Status</th>
          <th scope="col" class="num">
            Attempts
          </th>
          <th scope="col">Last error</th>
          <th scope="col">Created</th>
          {canWrite ? <th scope="col">Action</th> : null}
        </tr>
      </thead>
      <tbody>
        {events.map((event) => (
          <tr key={event.id}>
            <td>
              <Link to={`/events/${event.id}`}>{event.id}</Link>
            </td>
            <td>{event.event_type}</td>
            <td>
              <Link to={`/payments/${event.aggregate_id}`} class="mono">
                {event.aggregate_id.slice(0, 8)}…
              </Link>
            </td>
            <td>
              <span class={`status status-${event.status}`}>{event.status}</span>
            </td>
            <td class="num">{event.attempts}</td>
            <td>{event.last_error ?? '—'}</td>
            <td>
              <Time iso={event.created_at} />
            </td>
            {canWrite ? (
              <td>
                <RetryEventButton api={api} event={event} onDone={onRetried} />
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function EventsScreen({ api, me }: { api: Api; me: TenantMe }) {
  const [status, setStatus] = useState<string>('dead');
  const paging = useCursor([status]);
  const retry = useRetryNote();
  const page = useLoad(
    () => api.get<Page<EventRecord>>(apiPath`/v1/events`, { status, limit: '25', cursor: paging.cursor }),
    [status, paging.cursor],
  );
  const canWrite = hasScope(me, 'events:write');
  const after = (note: string) => {
    retry.setNote(note);
    page.reload();
  };
  return (
    <section>
      <ScreenTitle>Events</ScreenTitle>
      <p class="muted">
        Outcome events (payment.settled, payment.failed, payment.reversed) and their webhook delivery.
      </p>
      <div class="tabs" role="group" aria-label="Event status">
        {EVENT_STATUSES.map((s) => (
          <button key={s} type="button" aria-pressed={status === s} onClick={() => setStatus(s)}>
            {s}
          </button>
        ))}
      </div>
      <div class="toolbar">
        <button type="button" onClick={page.reload}>
          Refresh
        </button>
        {canWrite && status === 'dead' ? <RetryDeadButton api={api} onDone={after} /> : null}
      </div>
      {retry.element}
      <Loading loaded={page} />
      {page.data ? (
        page.data.data.length === 0 ? (
          <p class="muted">No {status} events.</p>
        ) : (
          <>
            <EventTable api={api} events={page.data.data} canWrite={canWrite} onRetried={after} />
            <Pager paging={paging} nextCursor={page.data.next_cursor} label="Events" />
          </>
        )
      ) : null}
    </section>
  );
}

/** Where the event is in its delivery: status, attempts, last error and when it moved. */
function EventFacts({ event: e }: { event: EventDetail }) {
  return (
    <dl class="facts">
      <dt>Type</dt>
      <dd>{e.event_type}</dd>
      <dt>Status</dt>
      <dd>
        <span class={`status status-${e.status}`}>{e.status}</span>
      </dd>
      <dt>Payment</dt>
      <dd>
        <Link to={`/payments/${e.aggregate_id}`} class="mono">
          {e.aggregate_id}
        </Link>
      </dd>
      <dt>Attempts</dt>
      <dd>{e.attempts}</dd>
      <dt>Last error</dt>
      <dd>{e.last_error ?? '—'}</dd>
      <dt>Next attempt</dt>
      <dd>
        <Time iso={e.next_attempt_at} />
      </dd>
      <dt>Published</dt>
      <dd>
        <Time iso={e.published_at} />
      </dd>
      <dt>Dead since</dt>
      <dd>
        <Time iso={e.dead_at} />
      </dd>
      <dt>Created</dt>
      <dd>
        <Time iso={e.created_at} />
      </dd>
    </dl>
  );
}

export function EventScreen({ api, me, id }: { api: Api; me: TenantMe; id: string }) {
  const event = useLoad(() => api.get<EventDetail>(apiPath`/v1/events/${id}`), [id]);
  const retry = useRetryNote();
  const e = event.data;
  return (
    <section>
      <ScreenTitle>Event {id}</ScreenTitle>
      <p>
        <Link to="/events">← Events</Link>
      </p>
      {retry.element}
      {!e ? (
        <Loading loaded={event} />
      ) : (
        <>
          <div class="toolbar">
            <button type="button" onClick={event.reload}>
              Refresh
            </button>
            {hasScope(me, 'events:write') ? (
              <RetryEventButton
                api={api}
                event={e}
                onDone={(note) => {
                  retry.setNote(note);
                  event.reload();
                }}
              />
            ) : null}
          </div>
          <EventFacts event={e} />
          <h2>Deliveries</h2>
          <EventDeliveries deliveries={e.deliveries} />
          <h2>Payload</h2>
          <Json value={e.payload} />
        </>
      )}
    </section>
  );
}
