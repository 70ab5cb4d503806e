import type { DeliveryRow, EventRow } from '../../db/repositories/events.ts';
import { INT8_MAX, type EventService } from '../../services/events.ts';
import { auditActorOf, partitionOf } from '../context.ts';
import { validationFailed } from '../../domain/errors.ts';
import { errorResponses } from '../schemas/common.ts';
import {
  EventDetail,
  EventIdParam,
  EventList,
  EventListQuery,
  RetriedDeadEvents,
  RetriedEvent,
} from '../schemas/events.ts';
import type { App } from '../types.ts';

const iso = (date: Date | null) => (date ? date.toISOString() : null);

/** An event record, without the payload. */
function eventView(row: EventRow) {
  return {
    id: row.id.toString(),
    event_type: row.event_type,
    aggregate_type: row.aggregate_type,
    aggregate_id: row.aggregate_id,
    status: row.status,
    attempts: row.attempts,
    last_error: row.last_error,
    next_attempt_at: iso(row.next_attempt_at),
    published_at: iso(row.published_at),
    dead_at: iso(row.dead_at),
    created_at: row.created_at.toISOString(),
  };
}

function deliveryView(row: DeliveryRow) {
  return {
    attempt: row.attempt,
    status_code: row.status_code,
    ok: row.ok,
    error: row.error,
    duration_ms: row.duration_ms,
  };
}

const RETRY_NOTE =
  'A requeued event is delivered again with the next attempt number. If an event whose 12 attempts are spent fails again, it goes straight back to `dead`: a manual retry is one more attempt, not a new schedule.';

export async function eventRoutes(app: App, events: EventService): Promise<void> {
  listEventsRoute(app, events);
  getEventRoute(app, events);
  retryDeadEventsRoute(app, events);
  retryEventRoute(app, events);
}

function listEventsRoute(app: App, events: EventService): void {
  app.get(
    '/v1/events',
    {
      config: { scopes: ['events:read'] },
      schema: {
        tags: ['Events'],
        operationId: 'listEvents',
        summary: 'List outcome events',
        description:
          "Newest first (id descending), without payloads. Filter by `status` (`dead` is the failed queue), `eventType` and `paymentId` (a payment's outcome and reversal events; an id of no payment of yours lists none). `cursor` is the numeric id of an event: pass the previous page's `next_cursor` to read the events older than it.",
        querystring: EventListQuery,
        response: { 200: EventList, ...errorResponses() },
      },
    },
    async function listEvents(request) {
      const { status, eventType, paymentId, limit, cursor } = request.query;
      const before = cursor === undefined ? undefined : BigInt(cursor);
      if (before !== undefined && before > INT8_MAX) {
        throw validationFailed([
          {
            field: 'cursor',
            message: 'must be the numeric id of an event (the next_cursor of the previous page of /v1/events)',
          },
        ]);
      }
      const page = await events.list(partitionOf(request.auth), {
        status,
        eventType,
        paymentId,
        limit: limit ?? 25,
        cursor: before,
      });
      return { data: page.rows.map(eventView), has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );
}

function getEventRoute(app: App, events: EventService): void {
  app.get(
    '/v1/events/:id',
    {
      config: { scopes: ['events:read'] },
      schema: {
        tags: ['Events'],
        operationId: 'getEvent',
        summary: 'Read an event, its payload and its deliveries',
        description:
          "`payload` is the `payload` object exactly as sent in the webhook body; `deliveries` lists every attempt with the receiver's status code (null when no answer came in time). A non-numeric id is 400 `validation_failed`.",
        params: EventIdParam,
        response: { 200: EventDetail, ...errorResponses('resource_not_found') },
      },
    },
    async function getEvent(request) {
      const { row, payload, deliveries } = await events.get(partitionOf(request.auth), BigInt(request.params.id));
      return { ...eventView(row), payload, deliveries: deliveries.map(deliveryView) };
    },
  );
}

function retryDeadEventsRoute(app: App, events: EventService): void {
  app.post(
    '/v1/events/retry-dead',
    {
      config: { scopes: ['events:write'] },
      schema: {
        tags: ['Events'],
        operationId: 'retryDeadEvents',
        summary: 'Requeue the whole failed queue',
        description: `Every \`dead\` event of this tenant and mode goes back to \`pending\`, due now. No body. Works in batches of 1,000, up to 100,000 events per call: if \`requeued\` is 100000, call again. ${RETRY_NOTE}`,
        response: { 200: RetriedDeadEvents, ...errorResponses() },
      },
    },
    async function retryDeadEvents(request) {
      return { requeued: await events.retryDead(partitionOf(request.auth), auditActorOf(request)) };
    },
  );
}

function retryEventRoute(app: App, events: EventService): void {
  app.post(
    '/v1/events/:id/retry',
    {
      config: { scopes: ['events:write'] },
      schema: {
        tags: ['Events'],
        operationId: 'retryEvent',
        summary: 'Requeue one event',
        description: `Puts the event back in the delivery queue, due now: works on \`dead\`, \`pending\` and \`published\` events. No body. \`requeued\` is false when the event was already pending and due. ${RETRY_NOTE}`,
        params: EventIdParam,
        response: { 200: RetriedEvent, ...errorResponses('resource_not_found') },
      },
    },
    async function retryEvent(request) {
      const { row, requeued } = await events.retry(
        partitionOf(request.auth),
        BigInt(request.params.id),
        auditActorOf(request),
      );
      return {
        id: row.id.toString(),
        event_type: row.event_type,
        status: row.status,
        attempts: row.attempts,
        requeued,
      };
    },
  );
}
