import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';

export type EventType = 'payment.settled' | 'payment.failed' | 'payment.reversed';

/**
 * Writes the event inside the caller's transaction (the one that changed the payment), so the
 * state change and its event commit or vanish together. The partial unique indexes make a second
 * outcome event for one payment impossible.
 */
export async function insertOutboxEvent(
  tx: Queryable,
  event: { tenantId: string; mode: Mode; type: EventType; paymentId: string; payload: Record<string, unknown>; at: Date },
): Promise<bigint> {
  const payloadText = JSON.stringify(event.payload);
  const { rows } = await tx.query<{ id: bigint }>(
    `INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, next_attempt_at, created_at)
     VALUES ($1, $2, $3, 'payment', $4, $5::jsonb, $6, $7, $7) RETURNING id`,
    [event.tenantId, event.mode, event.type, event.paymentId, payloadText, payloadText, event.at],
  );
  return rows[0]!.id;
}

/**
 * true when no pending event is due at `now` and unleased: nothing a dispatcher pass could claim
 * (`dispatchDue` stops on it).
 */
export async function nothingClaimable(db: Queryable, now: Date): Promise<boolean> {
  const { rows } = await db.query<{ n: bigint }>(
    `SELECT count(*)::bigint AS n FROM outbox_events
      WHERE status = 'pending' AND next_attempt_at <= $1 AND (locked_until IS NULL OR locked_until <= $1)`,
    [now],
  );
  return rows[0]!.n === 0n;
}
