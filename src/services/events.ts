import type { Database, Queryable } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import {
  findEvent,
  listDeliveries,
  listEvents,
  lockEvent,
  requeueDeadEvents,
  requeueEvent,
  type DeliveryRow,
  type EventRow,
} from '../db/repositories/events.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import type { EventStatus, EventType } from '../domain/webhooks.ts';
import { notFound } from '../domain/errors.ts';
import type { Partition } from '../domain/partition.ts';
import { assert } from '../domain/assert.ts';

export const INT8_MAX = 9_223_372_036_854_775_807n;
/** Deliveries shown with one event (a requeued event can pass 12 attempts). */
const EVENT_DELIVERIES_SHOWN_MAX = 100;
/** retry-dead requeues in batches of this size, at most this many batches per call. */
const RETRY_DEAD_BATCH = 1000;
const RETRY_DEAD_BATCHES_MAX = 100;

export interface EventPage {
  rows: EventRow[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** The events API: every query scoped to the caller's tenant and mode. */
export class EventService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    /** The list's handle: the read replica's (docs/read-replica.md), or `db`. */
    private readonly reads: Queryable = db,
  ) {}

  async list(
    partition: Partition,
    query: { status?: EventStatus; eventType?: EventType; paymentId?: string; limit: number; cursor?: bigint },
  ): Promise<EventPage> {
    const rows = await listEvents(this.reads, {
      ...partition,
      status: query.status,
      eventType: query.eventType,
      paymentId: query.paymentId,
      beforeId: query.cursor,
      limit: query.limit + 1,
    });
    const hasMore = rows.length > query.limit;
    const page = rows.slice(0, query.limit);
    return { rows: page, hasMore, nextCursor: hasMore ? page.at(-1)!.id.toString() : null };
  }

  async get(
    partition: Partition,
    id: bigint,
  ): Promise<{ row: EventRow; payload: Record<string, unknown>; deliveries: DeliveryRow[] }> {
    const event = id > INT8_MAX ? undefined : await findEvent(this.db, partition.tenantId, partition.mode, id);
    if (!event) throw notFound('event');
    const { payload_text, ...row } = event;
    const deliveries = await listDeliveries(this.db, partition.tenantId, id, EVENT_DELIVERIES_SHOWN_MAX);
    return { row, payload: JSON.parse(payload_text) as Record<string, unknown>, deliveries };
  }

  /** Back to `pending`, due now: works on dead, pending and published events. Recorded even when it was already due. */
  async retry(partition: Partition, id: bigint, actor: AuditActor): Promise<{ row: EventRow; requeued: boolean }> {
    if (id > INT8_MAX) throw notFound('event');
    const result = await this.db.transaction(async (tx) => {
      const before = await lockEvent(tx, partition.tenantId, partition.mode, id);
      if (!before) return undefined;
      const retried = await requeueEvent(tx, partition.tenantId, partition.mode, id, this.clock.now());
      assert(retried, `event ${id}, locked, vanished before its retry`);
      await recordAudit(tx, {
        actor,
        action: 'event.retry',
        target: { type: 'event', id: id.toString(), ...partition },
        before: deliveryState(before),
        after: deliveryState(retried.row),
      });
      return retried;
    });
    if (!result) throw notFound('event');
    return result;
  }

  /**
   * Requeues the program's failed queue, in bounded batches; returns how many events. Each batch that
   * requeued any is its own transaction with its own audit row (how many, and the range of ids).
   */
  async retryDead(partition: Partition, actor: AuditActor): Promise<number> {
    const now = this.clock.now();
    let total = 0;
    for (let batch = 0; batch < RETRY_DEAD_BATCHES_MAX; batch += 1) {
      const requeued = await this.db.transaction(async (tx) => {
        const done = await requeueDeadEvents(tx, partition.tenantId, partition.mode, now, RETRY_DEAD_BATCH);
        // Nothing requeued is nothing done: no row (a key calling it in a loop must not fill the trail).
        if (done.count > 0) {
          await recordAudit(tx, {
            actor,
            action: 'event.retry_dead',
            target: { type: 'program', id: partition.tenantId, ...partition },
            before: null,
            after: { requeued: done.count, firstEventId: done.firstId, lastEventId: done.lastId },
          });
        }
        return done.count;
      });
      total += requeued;
      if (requeued < RETRY_DEAD_BATCH) break;
    }
    return total;
  }
}

const deliveryState = (row: EventRow) => ({
  status: row.status,
  attempts: row.attempts,
  nextAttemptAt: row.next_attempt_at,
});
