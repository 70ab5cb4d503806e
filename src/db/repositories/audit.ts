import { randomUUID } from 'node:crypto';
import type { Mode } from '../../domain/api-keys.ts';
import { redactedFields, redactText, type AuditEntry } from '../../domain/audit.ts';
import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';
import type { Queryable } from '../database.ts';

export interface AuditRow {
  id: string;
  created_at: Date;
  actor_key_id: string;
  actor_tenant_id: string;
  action: string;
  target_type: string;
  target_id: string;
  target_tenant_id: string | null;
  target_mode: Mode | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  request_id: string | null;
}

/** A listed row with its exact time, the keyset position (a Date keeps only milliseconds). */
export type ListedAuditRow = AuditRow & { created_at_us: bigint };

const COLUMNS = `id, created_at, actor_key_id, actor_tenant_id, action, target_type, target_id, target_tenant_id, target_mode,
  before, after, request_id`;

/**
 * Records one admin or operator action. Call it with the transaction that makes the change, so the
 * row commits with the change or not at all. Every field passes through the audit redaction rule
 * (domain/audit.ts) here: a caller cannot record a secret, a key, a full account number or phone.
 * The row is new and nobody else knows it: it takes no lock anyone waits for (db/lock-order.ts).
 */
export async function recordAudit(tx: Queryable, entry: AuditEntry): Promise<void> {
  const { actor, target } = entry;
  await tx.query(
    `INSERT INTO audit_log (id, actor_key_id, actor_tenant_id, action, target_type, target_id, target_tenant_id, target_mode, before, after, request_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10::jsonb, $11)`,
    [
      randomUUID(),
      actor.keyId,
      actor.tenantId,
      entry.action,
      target.type,
      target.id,
      target.tenantId ?? null,
      target.mode ?? null,
      jsonOrNull(redactedFields(entry.before)),
      jsonOrNull(redactedFields(entry.after)),
      actor.requestId === null ? null : redactText(actor.requestId),
    ],
  );
}

const jsonOrNull = (fields: Record<string, unknown> | null) => (fields === null ? null : JSON.stringify(fields));

export interface AuditFilter {
  actorKeyId?: string;
  targetType?: string;
  targetId?: string;
  /** The tenant the target belongs to. */
  tenantId?: string;
  action?: string;
  /** Rows at or after this instant. */
  from?: Date;
  /** Rows before this instant. */
  to?: Date;
}

/**
 * One page of the trail, newest first, strictly after `after` in (created_at DESC, id DESC) order,
 * narrowed by `filter`. Reads `limit + 1` rows so the caller knows whether another page exists.
 * Each filter has an index that keeps the order (migration 025), so a page reads about its own rows.
 */
export async function listAudit(db: Queryable, page: { limit: number; after?: PagePosition; filter: AuditFilter }): Promise<ListedAuditRow[]> {
  const params: unknown[] = [page.limit + 1];
  const where: string[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  const { filter } = page;
  if (filter.actorKeyId !== undefined) add('actor_key_id = ?::uuid', filter.actorKeyId);
  if (filter.targetType !== undefined) add('target_type = ?', filter.targetType);
  if (filter.targetId !== undefined) add('target_id = ?', filter.targetId);
  if (filter.tenantId !== undefined) add('target_tenant_id = ?::uuid', filter.tenantId);
  if (filter.action !== undefined) add('action = ?', filter.action);
  if (filter.from !== undefined) add('created_at >= ?::timestamptz', filter.from);
  if (filter.to !== undefined) add('created_at < ?::timestamptz', filter.to);
  if (page.after) {
    params.push(microsToTimestamp(page.after.createdAtUs), page.after.id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
  }
  // extract(epoch …) is numeric on PostgreSQL 14+, so the microsecond value is exact.
  const { rows } = await db.query<ListedAuditRow>(
    `SELECT ${COLUMNS}, (extract(epoch FROM created_at) * 1000000)::bigint AS created_at_us
       FROM audit_log
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY created_at DESC, id DESC
      LIMIT $1`,
    params,
  );
  return rows;
}
