import type { Queryable } from '../database.ts';
import { Params } from './sql-params.ts';

/** Counts stop here: past it the figure only says "at least this many", and the count stays cheap. */
export const BACKLOG_COUNT_MAX = 100_000;

/** What waits: undelivered events and unresolved payments (the gauges of `/metrics`). */
export interface Backlog {
  outboxPending: number;
  outboxDead: number;
  oldestPendingEventAt: Date | null;
  unresolved: number;
  parked: number;
  /** The oldest submitted/unknown payment the reaper still asks about (not parked). */
  oldestUnresolvedAt: Date | null;
}

// One statement, every part bounded and served by an index:
// - the counts scan partial indexes of the rows counted (outbox_due, outbox_dead, payments_unresolved,
//   payments_parked), stopping at `countMax`;
// - the oldest pending event is one probe of outbox_pending_created (migration 016);
// - the oldest unresolved payment is one probe of payments_statement_status per tenant, mode and
//   status (tenants are few: a loose index scan instead of a new index on the payments hot path); a
//   probe steps over that tenant's parked payments, which are few by nature (each is an incident).
const backlogSql = (countMax: string): string => `SELECT
  (SELECT count(*) FROM (SELECT 1 FROM outbox_events WHERE status = 'pending' LIMIT ${countMax}) s)::int AS outbox_pending,
  (SELECT count(*) FROM (SELECT 1 FROM outbox_events WHERE status = 'dead' LIMIT ${countMax}) s)::int AS outbox_dead,
  (SELECT min(created_at) FROM outbox_events WHERE status = 'pending') AS oldest_pending_event_at,
  (SELECT count(*) FROM (SELECT 1 FROM payments WHERE status IN ('submitted', 'unknown') LIMIT ${countMax}) s)::int AS unresolved,
  (SELECT count(*) FROM (SELECT 1 FROM payments WHERE resolution_parked_at IS NOT NULL AND status IN ('submitted', 'unknown') LIMIT ${countMax}) s)::int AS parked,
  (SELECT min(p.created_at)
     FROM tenants t
    CROSS JOIN (VALUES ('test'), ('live')) AS m(mode)
    CROSS JOIN (VALUES ('submitted'), ('unknown')) AS st(status)
    CROSS JOIN LATERAL (
      SELECT created_at FROM payments
       WHERE tenant_id = t.id AND mode = m.mode AND status = st.status AND resolution_parked_at IS NULL
       ORDER BY created_at
       LIMIT 1) p) AS oldest_unresolved_at`;

export async function readBacklog(db: Queryable, countMax: number): Promise<Backlog> {
  const p = new Params();
  const { rows } = await db.query<{
    outbox_pending: number;
    outbox_dead: number;
    oldest_pending_event_at: Date | null;
    unresolved: number;
    parked: number;
    oldest_unresolved_at: Date | null;
  }>(backlogSql(p.add(countMax)), p.values);
  const row = rows[0]!;
  return {
    outboxPending: row.outbox_pending,
    outboxDead: row.outbox_dead,
    oldestPendingEventAt: row.oldest_pending_event_at,
    unresolved: row.unresolved,
    parked: row.parked,
    oldestUnresolvedAt: row.oldest_unresolved_at,
  };
}
