// The inbox of connectors' callbacks (migration 028). Written by the callback route, read and
// acknowledged by the connector's adapter (pendingNotifications / acknowledgeNotification). Every time
// comes from the caller's clock.
import type { Queryable } from '../database.ts';
import { Params } from './sql-params.ts';
import { assert } from '../../domain/assert.ts';

export interface RailInboxRow {
  rail: string;
  event_id: string;
  payload: unknown;
  occurred_at: Date;
  received_at: Date;
  acknowledged_at: Date | null;
}

const COLUMNS = 'rail, event_id, payload, occurred_at, received_at, acknowledged_at';

/** Stores an event once per (rail, event id): false when it was already there (a redelivery). */
export async function insertRailInboxEvent(
  db: Queryable,
  event: { rail: string; eventId: string; payload: unknown; occurredAt: Date; receivedAt: Date },
): Promise<boolean> {
  const p = new Params();
  const result = await db.query(
    `INSERT INTO rail_inbox (rail, event_id, payload, occurred_at, received_at)
     VALUES (${p.add(event.rail)}, ${p.add(event.eventId)}, ${p.add(JSON.stringify(event.payload))}::jsonb, ${p.add(event.occurredAt)},
       ${p.add(event.receivedAt)})
     ON CONFLICT (rail, event_id) DO NOTHING`,
    p.values,
  );
  return result.rowCount === 1;
}

/** One rail's unacknowledged events, oldest first (by when they happened), at most `limit`. */
export async function listPendingRailInbox(db: Queryable, rail: string, limit: number): Promise<RailInboxRow[]> {
  const p = new Params();
  const { rows } = await db.query<RailInboxRow>(
    `SELECT ${COLUMNS} FROM rail_inbox
      WHERE rail = ${p.add(rail)} AND acknowledged_at IS NULL
      ORDER BY occurred_at, event_id
      LIMIT ${p.add(limit)}`,
    p.values,
  );
  return rows;
}

/** Marks an event acknowledged (idempotent: the first time stays); false when there is no such event. */
export async function acknowledgeRailInboxEvent(
  db: Queryable,
  rail: string,
  eventId: string,
  at: Date,
): Promise<boolean> {
  const p = new Params();
  const result = await db.query(
    `UPDATE rail_inbox SET acknowledged_at = COALESCE(acknowledged_at, ${p.add(at)}) WHERE rail = ${p.add(rail)} AND event_id = ${p.add(eventId)}`,
    p.values,
  );
  return result.rowCount === 1;
}

/** Deletes at most `limit` events acknowledged before `before`; how many it deleted. */
export async function purgeAcknowledgedRailInbox(db: Queryable, before: Date, limit: number): Promise<number> {
  assert(Number.isSafeInteger(limit) && limit >= 1, `purge limit must be a positive integer, got ${limit}`);
  const p = new Params();
  const result = await db.query(
    `DELETE FROM rail_inbox
      WHERE (rail, event_id) IN (
              SELECT rail, event_id FROM rail_inbox
               WHERE acknowledged_at IS NOT NULL AND acknowledged_at < ${p.add(before)}
               ORDER BY acknowledged_at
               LIMIT ${p.add(limit)}
               FOR UPDATE SKIP LOCKED)`,
    p.values,
  );
  return result.rowCount;
}
