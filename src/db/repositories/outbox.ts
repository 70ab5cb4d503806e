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
