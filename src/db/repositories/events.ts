// The outbox seen from its two readers: the events API (tenant-scoped) and the webhook dispatcher
// (claims due events across tenants under a lease, then records each attempt).
import type { EventStatus, EventType } from '../../domain/webhooks.ts';
import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';
import { Params } from './sql-params.ts';
import { ParamsOf } from './sql-params-of.ts';
import { assert } from '../../domain/assert.ts';

export interface EventRow {
  tenant_id: string;
  mode: Mode;
  id: bigint;
  event_type: EventType;
  aggregate_type: string;
  aggregate_id: string;
  status: EventStatus;
  attempts: number;
  last_error: string | null;
  next_attempt_at: Date | null;
  published_at: Date | null;
  dead_at: Date | null;
  created_at: Date;
}

export interface DeliveryRow {
  attempt: number;
  status_code: number | null;
  ok: boolean;
  error: string | null;
  duration_ms: number;
  created_at: Date;
}

const EVENT_COLUMNS = `tenant_id, mode, id, event_type, aggregate_type, aggregate_id, status, attempts, last_error,
  next_attempt_at, published_at, dead_at, created_at`;

/**
 * Newest first (id descending); `beforeId` is the previous page's last id. With `paymentId`, the
 * payment's events are found through the two unique indexes that hold them (its outcome, its
 * reversal): a payment has at most two, so the filters apply to those rows, not to a scan.
 */
export async function listEvents(
  db: Queryable,
  query: {
    tenantId: string;
    mode: Mode;
    status?: EventStatus;
    eventType?: EventType;
    paymentId?: string;
    beforeId?: bigint;
    limit: number;
  },
): Promise<EventRow[]> {
  const p = new Params();
  const tenant = p.add(query.tenantId);
  let source = 'outbox_events';
  if (query.paymentId !== undefined) {
    const payment = p.add(query.paymentId);
    source = `(SELECT * FROM outbox_events WHERE tenant_id = ${tenant} AND aggregate_id = ${payment} AND event_type IN ('payment.settled', 'payment.failed')
          UNION ALL
          SELECT * FROM outbox_events WHERE tenant_id = ${tenant} AND aggregate_id = ${payment} AND event_type = 'payment.reversed') AS payment_events`;
  }
  const [status, eventType, beforeId] = [
    p.add(query.status ?? null),
    p.add(query.eventType ?? null),
    p.add(query.beforeId ?? null),
  ];
  const { rows } = await db.query<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM ${source}
      WHERE tenant_id = ${tenant} AND mode = ${p.add(query.mode)}
        AND (${status}::text IS NULL OR status = ${status})
        AND (${eventType}::text IS NULL OR event_type = ${eventType})
        AND (${beforeId}::bigint IS NULL OR id < ${beforeId})
      ORDER BY id DESC
      LIMIT ${p.add(query.limit)}`,
    p.values,
  );
  return rows;
}

export async function findEvent(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  id: bigint,
): Promise<(EventRow & { payload_text: string }) | undefined> {
  const p = new Params();
  const { rows } = await db.query<EventRow & { payload_text: string }>(
    `SELECT ${EVENT_COLUMNS}, payload_text FROM outbox_events WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} AND id = ${p.add(id)}`,
    p.values,
  );
  return rows[0];
}

/** Attempts in order; a requeued event can pass 12, so the list is capped at the most recent `limit`. */
export async function listDeliveries(
  db: Queryable,
  tenantId: string,
  eventId: bigint,
  limit: number,
): Promise<DeliveryRow[]> {
  const p = new Params();
  const { rows } = await db.query<DeliveryRow>(
    `SELECT attempt, status_code, ok, error, duration_ms, created_at FROM (
       SELECT attempt, status_code, ok, error, duration_ms, created_at FROM webhook_deliveries
        WHERE tenant_id = ${p.add(tenantId)} AND event_id = ${p.add(eventId)} ORDER BY attempt DESC LIMIT ${p.add(limit)}) recent
      ORDER BY attempt`,
    p.values,
  );
  return rows;
}

/**
 * Puts one event back in the queue, due now. Returns the row and whether anything changed: an event
 * already pending and due (or being delivered right now) is left as it is.
 */
export async function requeueEvent(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  id: bigint,
  now: Date,
): Promise<{ row: EventRow; requeued: boolean } | undefined> {
  const p = new Params();
  const at = p.add(now);
  const { rows } = await db.query<EventRow>(
    `UPDATE outbox_events
        SET status = 'pending', next_attempt_at = ${at}, dead_at = NULL, published_at = NULL
      WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} AND id = ${p.add(id)}
        AND NOT (status = 'pending' AND next_attempt_at <= ${at})
      RETURNING ${EVENT_COLUMNS}`,
    p.values,
  );
  if (rows[0]) return { row: rows[0], requeued: true };
  const existing = await findEvent(db, tenantId, mode, id);
  return existing ? { row: existing, requeued: false } : undefined;
}

/** Requeues up to `limit` dead events of the program (the oldest first); returns how many, and the first and last id. */
export async function requeueDeadEvents(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  now: Date,
  limit: number,
): Promise<{ count: number; firstId: bigint | null; lastId: bigint | null }> {
  const p = new Params();
  const dead = `tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} AND status = 'dead'`;
  const { rows } = await db.query<{ count: number; first_id: bigint | null; last_id: bigint | null }>(
    `WITH requeued AS (
       UPDATE outbox_events
          SET status = 'pending', next_attempt_at = ${p.add(now)}, dead_at = NULL
        WHERE ${dead} AND id IN (
          SELECT id FROM outbox_events WHERE ${dead} ORDER BY id LIMIT ${p.add(limit)})
       RETURNING id)
     SELECT count(*)::int AS count, min(id) AS first_id, max(id) AS last_id FROM requeued`,
    p.values,
  );
  const row = rows[0]!;
  return { count: row.count, firstId: row.first_id, lastId: row.last_id };
}

/** One event, locked until the transaction ends (a retry reads what it changes). */
export async function lockEvent(
  tx: Queryable,
  tenantId: string,
  mode: Mode,
  id: bigint,
): Promise<EventRow | undefined> {
  const p = new Params();
  const { rows } = await tx.query<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM outbox_events WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} AND id = ${p.add(id)} FOR UPDATE`,
    p.values,
  );
  return rows[0];
}

/** A claimed event with its program's endpoint (null columns when none is configured). */
export interface ClaimedEventRow {
  tenant_id: string;
  mode: Mode;
  id: bigint;
  event_type: EventType;
  /** The payment the event tells of. */
  aggregate_id: string;
  payload_text: string;
  attempts: number;
  url: string | null;
  origin: string | null;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

export interface DueEventsClaim {
  now: Date;
  leaseUntil: Date;
  leaseToken: string;
  limit: number;
  originMax: number;
  inFlight: ReadonlyArray<{ origin: string; count: number }>;
  scanMax: number;
}

const claimed = new ParamsOf<DueEventsClaim>();

// The dispatcher's claim (claimDueEvents), run with the 'queue-head' plan (QueryOptions): due events
// are read in outbox_due's order, never all read and then sorted (a generic plan made while the outbox
// was small once read every pending event: 35 ms a claim with 10,000 due, 230 deliveries a second).
// Built once: the test of that plan finds the claim's prepared statement by this text.
/** @internal Exported for its tests, not used elsewhere. */
export const CLAIM_DUE_EVENTS_SQL = claimDueEventsSql(claimed);

/**
 * The parameters of CLAIM_DUE_EVENTS_SQL for this claim.
 * @internal Exported for its tests, not used elsewhere.
 */
export function claimDueEventsParams(claim: DueEventsClaim): unknown[] {
  return claimed.values(claim);
}

function claimDueEventsSql(claim: ParamsOf<DueEventsClaim>): string {
  const now = claim.add((c) => c.now);
  return `WITH in_flight AS (
     SELECT origin, n FROM ${claim.unnest({ origin: ['text', (c) => c.inFlight.map((f) => f.origin)], n: ['int', (c) => c.inFlight.map((f) => f.count)] }, { alias: 'f' })}
   ),
   candidates AS (
     SELECT o.tenant_id, o.mode, o.id, o.next_attempt_at, w.origin
       FROM outbox_events o
       LEFT JOIN webhook_endpoints w ON w.tenant_id = o.tenant_id AND w.mode = o.mode
      WHERE o.status = 'pending' AND o.next_attempt_at <= ${now} AND (o.locked_until IS NULL OR o.locked_until <= ${now})
        AND (w.origin IS NULL OR w.origin <> ALL (${claim.add((c) => c.inFlight.filter((f) => f.count >= c.originMax).map((f) => f.origin))}::text[]))
      ORDER BY o.next_attempt_at, o.id
      LIMIT ${claim.add((c) => c.scanMax)}
   ),
   picked AS (
     SELECT r.tenant_id, r.mode, r.id FROM (
       SELECT c.tenant_id, c.mode, c.id, c.origin, c.next_attempt_at,
              row_number() OVER (PARTITION BY c.origin ORDER BY c.next_attempt_at, c.id) AS rn
         FROM candidates c) r
       LEFT JOIN in_flight f ON f.origin = r.origin
      WHERE r.origin IS NULL OR r.rn <= ${claim.add((c) => c.originMax)} - coalesce(f.n, 0)
      ORDER BY r.next_attempt_at, r.id
      LIMIT ${claim.add((c) => c.limit)}
   ),
   -- Each picked event is locked through its own primary-key probe (LATERAL; OFFSET 0 keeps the
   -- due conditions out of the probe), then checked on the row as locked (its latest version), and
   -- leased by that row version's ctid. Measured by "the webhook claim on PostgreSQL" in
   -- test/integration/database.test.ts (2,500 due, a look-ahead of 400, 100 picked; this form reads
   -- 600 rows of outbox_events): the plain form, a join FOR UPDATE OF o SKIP LOCKED and a lease by
   -- primary key, read 3,000–5,400 (every due event, through outbox_list or outbox_pending_created);
   -- the probe without OFFSET 0 had the conditions pushed into it and read 252,900 (2,500 per pick);
   -- the probe kept but the lease by primary key instead of ctid read 3,000 (outbox_list).
   due AS (
     SELECT o.row_version, o.tenant_id, o.mode, o.id, w.url, w.origin, w.secret, w.previous_secret, w.previous_secret_expires_at
       FROM picked p
       CROSS JOIN LATERAL (
         SELECT o.ctid AS row_version, o.tenant_id, o.id, o.mode, o.status, o.next_attempt_at, o.locked_until FROM outbox_events o
          WHERE o.tenant_id = p.tenant_id AND o.mode = p.mode AND o.id = p.id
         OFFSET 0
           FOR UPDATE SKIP LOCKED) o
       LEFT JOIN webhook_endpoints w ON w.tenant_id = o.tenant_id AND w.mode = o.mode
      WHERE o.status = 'pending' AND o.next_attempt_at <= ${now} AND (o.locked_until IS NULL OR o.locked_until <= ${now}))
   UPDATE outbox_events e SET locked_until = ${claim.add((c) => c.leaseUntil)}, lease_token = ${claim.add((c) => c.leaseToken)}
     FROM due
    WHERE e.ctid = due.row_version AND e.tenant_id = due.tenant_id AND e.mode = due.mode AND e.id = due.id
    RETURNING e.tenant_id, e.mode, e.id, e.event_type, e.aggregate_id, e.payload_text, e.attempts,
              due.url, due.origin, due.secret, due.previous_secret, due.previous_secret_expires_at`;
}

/**
 * The dispatcher's claim: up to `limit` due events, leased until `leaseUntil` under `leaseToken`.
 *
 * Per receiver (`origin`) it takes at most the slots this dispatcher has free there
 * (`originMax` minus its deliveries in flight, given as `inFlight`), so a slow receiver's backlog
 * is never claimed beyond its share and the rest of the batch goes to the others. The look-ahead is
 * bounded (`scanMax` due events, busy receivers' events skipped by the index scan's filter).
 *
 * SKIP LOCKED lets several dispatchers claim at once without waiting on each other; the lease
 * (re-checked by PostgreSQL on the latest row version when a concurrent claim has committed) keeps
 * a claimed event away from every other dispatcher until it is recorded or the lease expires.
 */
export async function claimDueEvents(tx: Queryable, claim: DueEventsClaim): Promise<ClaimedEventRow[]> {
  // queue-head: 600 outbox rows read instead of 252,900 (no seq scan) or 2,700 (no sort), −78 % at the
  // least, measured by "the webhook claim on PostgreSQL" (test/integration/database.test.ts).
  const { rows } = await tx.query<ClaimedEventRow>(CLAIM_DUE_EVENTS_SQL, claimDueEventsParams(claim), {
    plan: 'queue-head',
  });
  return rows;
}

export interface AttemptRecord {
  tenantId: string;
  eventId: bigint;
  leaseToken: string;
  attempt: number;
  next: { status: 'published' } | { status: 'pending'; at: Date } | { status: 'dead' };
  statusCode: number | null;
  ok: boolean;
  error: string | null;
  durationMs: number;
  at: Date;
}

/**
 * Records attempts, several at once (one statement, so all or none): each event moves on and its
 * delivery row is written only if this dispatcher still holds the lease for exactly that attempt.
 * Returns the keys (`tenantId:eventId`) recorded; a missing key means the lease had passed to
 * another dispatcher (its lease expired), and nothing was written for that attempt.
 */
export async function recordAttempts(db: Queryable, records: readonly AttemptRecord[]): Promise<Set<string>> {
  if (records.length === 0) return new Set();
  const keys = new Set(records.map((r) => `${r.tenantId}:${r.eventId}`));
  assert(keys.size === records.length, 'one event recorded twice in one batch');
  const p = new Params();
  const col = <T>(pick: (r: AttemptRecord) => T) => records.map(pick);
  const input = p.unnest(
    {
      tenant_id: ['uuid', col((r) => r.tenantId)],
      id: ['bigint', col((r) => r.eventId.toString())],
      lease_token: ['uuid', col((r) => r.leaseToken)],
      attempt: ['int', col((r) => r.attempt)],
      status: ['text', col((r) => r.next.status)],
      error: ['text', col((r) => r.error)],
      next_attempt_at: ['timestamptz', col((r) => (r.next.status === 'pending' ? r.next.at : null))],
      status_code: ['int', col((r) => r.statusCode)],
      ok: ['boolean', col((r) => r.ok)],
      duration_ms: ['int', col((r) => r.durationMs)],
      at: ['timestamptz', col((r) => r.at)],
    },
    { alias: 'r' },
  );
  const { rows } = await db.query<{ tenant_id: string; event_id: bigint }>(
    `WITH input AS (
       SELECT * FROM ${input}
     ),
     moved AS (
       UPDATE outbox_events o
          SET attempts = r.attempt,
              status = r.status,
              last_error = r.error,
              next_attempt_at = r.next_attempt_at,
              published_at = CASE WHEN r.status = 'published' THEN r.at ELSE o.published_at END,
              dead_at = CASE WHEN r.status = 'dead' THEN r.at ELSE NULL END,
              locked_until = NULL,
              lease_token = NULL
         FROM input r
        WHERE o.tenant_id = r.tenant_id AND o.id = r.id AND o.lease_token = r.lease_token AND o.attempts = r.attempt - 1
        RETURNING o.tenant_id, o.id, o.mode
     )
     INSERT INTO webhook_deliveries (tenant_id, event_id, attempt, status_code, ok, error, duration_ms, created_at, mode)
     SELECT r.tenant_id, r.id, r.attempt, r.status_code, r.ok, r.error, r.duration_ms, r.at, m.mode
       FROM input r JOIN moved m ON m.tenant_id = r.tenant_id AND m.id = r.id
     RETURNING tenant_id, event_id`,
    p.values,
  );
  return new Set(rows.map((row) => `${row.tenant_id}:${row.event_id}`));
}
