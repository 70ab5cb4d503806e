import { randomUUID } from 'node:crypto';
import { redactedFields, redactText, type AuditEntry } from '../../domain/audit.ts';
import { canonicalJson } from '../../domain/canonical-json.ts';
import type { PagePosition } from '../../domain/page-cursor.ts';
import type { Queryable } from '../database.ts';
import { newestFirst, Params } from './sql-params.ts';
import type { Mode } from '../../domain/partition.ts';

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
 * An entry whose `before` equals its `after` is no change and is not recorded.
 * The row is new and nobody else knows it: it takes no lock anyone waits for (db/commit/README.md).
 */
export async function recordAudit(tx: Queryable, entry: AuditEntry): Promise<void> {
  const { actor, target } = entry;
  // An action that changed nothing (a setting set to the value it had) leaves no row: the trail
  // records changes, and a key repeating a no-op in a loop must not fill it.
  if (entry.before != null && entry.after != null && sameFields(entry.before, entry.after)) return;
  const p = new Params();
  await tx.query(
    `INSERT INTO audit_log (id, actor_key_id, actor_tenant_id, action, target_type, target_id, target_tenant_id, target_mode, before, after, request_id)
     VALUES (${p.add(randomUUID())}, ${p.add(actor.keyId)}, ${p.add(actor.tenantId)}, ${p.add(entry.action)},
       ${p.add(target.type)}, ${p.add(target.id)}, ${p.add(target.tenantId ?? null)}, ${p.add(target.mode ?? null)},
       ${p.add(jsonOrNull(redactedFields(entry.before)))}::jsonb, ${p.add(jsonOrNull(redactedFields(entry.after)))}::jsonb,
       ${p.add(actor.requestId === null ? null : redactText(actor.requestId))})`,
    p.values,
  );
}

/** Whether two sides hold the same values, before redaction (bigints and dates by value, key order aside). */
function sameFields(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const plain = (fields: Record<string, unknown>): unknown =>
    JSON.parse(JSON.stringify(fields, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value)));
  return canonicalJson(plain(a)) === canonicalJson(plain(b));
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
export async function listAudit(
  db: Queryable,
  page: { limit: number; after?: PagePosition; filter: AuditFilter },
): Promise<ListedAuditRow[]> {
  const params = new Params();
  const { filter } = page;
  const where: string[] = [];
  if (filter.actorKeyId !== undefined) where.push(`actor_key_id = ${params.add(filter.actorKeyId)}::uuid`);
  if (filter.targetType !== undefined) where.push(`target_type = ${params.add(filter.targetType)}`);
  if (filter.targetId !== undefined) where.push(`target_id = ${params.add(filter.targetId)}`);
  if (filter.tenantId !== undefined) where.push(`target_tenant_id = ${params.add(filter.tenantId)}::uuid`);
  if (filter.action !== undefined) where.push(`action = ${params.add(filter.action)}`);
  if (filter.from !== undefined) where.push(`created_at >= ${params.add(filter.from)}::timestamptz`);
  if (filter.to !== undefined) where.push(`created_at < ${params.add(filter.to)}::timestamptz`);
  return newestFirst<ListedAuditRow>(db, {
    columns: COLUMNS,
    from: 'audit_log',
    time: 'created_at',
    params,
    where,
    limit: page.limit,
    after: page.after,
  });
}
