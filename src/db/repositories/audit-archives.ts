// Storage of the audit trail's archives (migration 038): the rows due for archiving, the chain of
// archive files, and the one removal the database allows (rows covered by an archive recorded in the
// same transaction).
import type { Queryable } from '../database.ts';
import type { AuditRow } from './audit.ts';
import { Params } from './sql-params.ts';

/** An audit row as archived: its time exact, with microseconds, as PostgreSQL prints it in UTC. */
export type ArchivedAuditRow = Omit<AuditRow, 'created_at'> & { created_at: string };

export interface AuditArchiveRow {
  seq: number;
  through_created_at: string;
  through_id: string;
  row_count: number;
  file: string;
  prev_hash: string;
  last_hash: string;
  file_sha256: string;
  archived_at: Date;
}

const ARCHIVE_LOCK_KEY = 'audit_archive';

/**
 * Takes the archiving's one lock (its app_state row, made on first use) until the transaction ends:
 * one process archives at a time, so the chain has one next link. Nothing else locks that row.
 */
export async function lockAuditArchiving(tx: Queryable): Promise<void> {
  const p = new Params();
  await tx.query(
    `INSERT INTO app_state (key, value) VALUES (${p.add(ARCHIVE_LOCK_KEY)}, 'true'::jsonb) ON CONFLICT (key) DO NOTHING`,
    p.values,
  );
  const lock = new Params();
  await tx.query(`SELECT 1 FROM app_state WHERE key = ${lock.add(ARCHIVE_LOCK_KEY)} FOR UPDATE`, lock.values);
}

export async function lastAuditArchive(db: Queryable): Promise<AuditArchiveRow | undefined> {
  const { rows } = await db.query<AuditArchiveRow>(
    `SELECT seq, to_char(through_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS through_created_at, through_id, row_count, file, prev_hash, last_hash, file_sha256, archived_at
       FROM audit_archives ORDER BY seq DESC LIMIT 1`,
  );
  return rows[0];
}

/** The oldest rows created before `before` and after the last archive, in (created_at, id) order, at most `limit`. */
export async function auditRowsDue(
  db: Queryable,
  before: Date,
  after: { createdAt: string; id: string } | undefined,
  limit: number,
): Promise<ArchivedAuditRow[]> {
  const p = new Params();
  const afterTime = p.add(after?.createdAt ?? null);
  const { rows } = await db.query<ArchivedAuditRow>(
    `SELECT id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at, actor_key_id, actor_tenant_id, action,
            target_type, target_id, target_tenant_id, target_mode, before, after, request_id
       FROM audit_log
      WHERE created_at < ${p.add(before)} AND (${afterTime}::timestamptz IS NULL OR (created_at, id) > (${afterTime}::timestamptz, ${p.add(after?.id ?? null)}::uuid))
      ORDER BY created_at, id
      LIMIT ${p.add(limit)}`,
    p.values,
  );
  return rows;
}

/**
 * Records an archive and removes exactly the rows it holds (by id: a row another transaction commits
 * meanwhile with an older time is not removed unarchived), in the caller's transaction — the removal
 * the trigger allows. Answers how many rows went.
 */
export async function recordAuditArchive(
  tx: Queryable,
  archive: Omit<AuditArchiveRow, 'archived_at'>,
  ids: readonly string[],
  at: Date,
): Promise<number> {
  const p = new Params();
  await tx.query(
    `INSERT INTO audit_archives (seq, through_created_at, through_id, row_count, file, prev_hash, last_hash, file_sha256, archived_at)
     VALUES (${p.add(archive.seq)}, ${p.add(archive.through_created_at)}::timestamptz, ${p.add(archive.through_id)}, ${p.add(archive.row_count)},
       ${p.add(archive.file)}, ${p.add(archive.prev_hash)}, ${p.add(archive.last_hash)}, ${p.add(archive.file_sha256)}, ${p.add(at)})`,
    p.values,
  );
  const removal = new Params();
  const { rowCount } = await tx.query(
    `DELETE FROM audit_log WHERE id = ANY(${removal.add(ids)}::uuid[])`,
    removal.values,
  );
  return rowCount ?? 0;
}
