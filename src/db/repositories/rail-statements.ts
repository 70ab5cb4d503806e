// Storage of rail statements (migration 030): the statement row with its counts, its mismatches, and
// the reads of our payments a statement is checked against. Platform-wide, as a rail carries every
// tenant's payments; the payments are read by the rail's own indexes, never the whole table.
import { randomUUID } from 'node:crypto';
import type { PagePosition } from '../../domain/page-cursor.ts';
import type {
  ColumnMapping,
  StatementMismatchKind,
  StatementPayment,
  StatementResult,
} from '../../domain/rail-statement.ts';
import type { Mode } from '../../domain/partition.ts';
import type { Queryable } from '../database.ts';
import { newestFirst, Params } from './sql-params.ts';
import { assert } from '../../domain/assert.ts';

export interface RailStatementRow {
  id: string;
  rail: string;
  value_date: string;
  file_sha256: string;
  file_bytes: bigint;
  line_count: number;
  columns: ColumnMapping;
  matched: number;
  unknown_reference: number;
  missing_at_rail: number;
  amount_mismatch: number;
  status_mismatch: number;
  bank_reference_mismatch: number;
  anomalies_opened: number;
  created_at: Date;
  created_by: string;
}

export type ListedRailStatementRow = RailStatementRow & { created_at_us: bigint };

const COLUMNS = `id, rail, value_date::text AS value_date, file_sha256, file_bytes, line_count, columns, matched, unknown_reference,
  missing_at_rail, amount_mismatch, status_mismatch, bank_reference_mismatch, anomalies_opened, created_at, created_by`;

export interface MismatchRow {
  seq: number;
  result: StatementMismatchKind;
  line: number | null;
  reference: string;
  tenant_id: string | null;
  mode: Mode | null;
  payment_id: string | null;
  ours: Record<string, unknown>;
  theirs: Record<string, unknown>;
  anomaly_id: string;
}

/** The statement already stored for this rail, day and file, if any. */
export async function findStatementByFile(
  db: Queryable,
  key: { rail: string; day: string; sha256: string },
): Promise<RailStatementRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<RailStatementRow>(
    `SELECT ${COLUMNS} FROM rail_statements WHERE rail = ${p.add(key.rail)} AND value_date = ${p.add(key.day)}::date AND file_sha256 = ${p.add(key.sha256)}`,
    p.values,
  );
  return rows[0];
}

export async function findStatement(db: Queryable, id: string): Promise<RailStatementRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<RailStatementRow>(
    `SELECT ${COLUMNS} FROM rail_statements WHERE id = ${p.add(id)}`,
    p.values,
  );
  return rows[0];
}

/**
 * The statement's row, counts still zero, in the caller's transaction; undefined when this rail, day
 * and file is stored already (a concurrent post of the same file waits here for the first to end).
 */
export async function insertStatement(
  tx: Queryable,
  statement: {
    rail: string;
    day: string;
    sha256: string;
    bytes: number;
    lines: number;
    columns: ColumnMapping;
    createdBy: string;
    at: Date;
  },
): Promise<string | undefined> {
  const p = new Params();
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO rail_statements (id, rail, value_date, file_sha256, file_bytes, line_count, columns, created_at, created_by)
     VALUES (${p.add(randomUUID())}, ${p.add(statement.rail)}, ${p.add(statement.day)}::date, ${p.add(statement.sha256)}, ${p.add(statement.bytes)}, ${p.add(statement.lines)},
             ${p.add(JSON.stringify(statement.columns))}::jsonb, ${p.add(statement.at)}, ${p.add(statement.createdBy)})
     ON CONFLICT (rail, value_date, file_sha256) DO NOTHING
     RETURNING id`,
    p.values,
  );
  return rows[0]?.id;
}

/** The statement's final counts. */
export async function recordCounts(
  tx: Queryable,
  id: string,
  counts: Record<StatementResult, number>,
  anomaliesOpened: number,
): Promise<RailStatementRow> {
  const p = new Params();
  const { rows } = await tx.query<RailStatementRow>(
    `UPDATE rail_statements
        SET matched = ${p.add(counts.matched)}, unknown_reference = ${p.add(counts.unknown_reference)}, missing_at_rail = ${p.add(counts.missing_at_rail)},
            amount_mismatch = ${p.add(counts.amount_mismatch)}, status_mismatch = ${p.add(counts.status_mismatch)},
            bank_reference_mismatch = ${p.add(counts.bank_reference_mismatch)}, anomalies_opened = ${p.add(anomaliesOpened)}
      WHERE id = ${p.add(id)}
      RETURNING ${COLUMNS}`,
    p.values,
  );
  assert(rows.length === 1, `rail statement ${id} vanished before its counts were recorded`);
  return rows[0]!;
}

export interface NewMismatch {
  seq: number;
  result: StatementMismatchKind;
  line: number | null;
  reference: string;
  tenantId: string | null;
  mode: Mode | null;
  paymentId: string | null;
  ours: Record<string, unknown>;
  theirs: Record<string, unknown>;
  anomalyId: string;
}

/** One batch of a statement's mismatches (the caller bounds it). */
export async function insertMismatches(
  tx: Queryable,
  statementId: string,
  mismatches: readonly NewMismatch[],
): Promise<void> {
  if (mismatches.length === 0) return;
  const params = new Params();
  const col = <T>(pick: (m: NewMismatch) => T) => mismatches.map(pick);
  const rows = params.unnest({
    seq: ['integer', col((m) => m.seq)],
    result: ['text', col((m) => m.result)],
    line: ['integer', col((m) => m.line)],
    reference: ['text', col((m) => m.reference)],
    tenant_id: ['uuid', col((m) => m.tenantId)],
    mode: ['text', col((m) => m.mode)],
    payment_id: ['uuid', col((m) => m.paymentId)],
    ours: ['jsonb', col((m) => JSON.stringify(m.ours))],
    theirs: ['jsonb', col((m) => JSON.stringify(m.theirs))],
    anomaly_id: ['uuid', col((m) => m.anomalyId)],
  });
  await tx.query(
    `INSERT INTO rail_statement_mismatches (statement_id, seq, result, line, reference, tenant_id, mode, payment_id, ours, theirs, anomaly_id)
     SELECT ${params.add(statementId)}::uuid, v.seq, v.result, v.line, v.reference, v.tenant_id, v.mode, v.payment_id, v.ours, v.theirs, v.anomaly_id FROM ${rows}`,
    params.values,
  );
}

/** A statement's mismatches in file order (missing payments last), `limit + 1` after `afterSeq`. */
export async function listMismatches(
  db: Queryable,
  statementId: string,
  page: { limit: number; afterSeq: number },
): Promise<MismatchRow[]> {
  const p = new Params();
  const { rows } = await db.query<MismatchRow>(
    `SELECT seq, result, line, reference, tenant_id, mode, payment_id, ours, theirs, anomaly_id
       FROM rail_statement_mismatches WHERE statement_id = ${p.add(statementId)} AND seq > ${p.add(page.afterSeq)} ORDER BY seq LIMIT ${p.add(page.limit + 1)}`,
    p.values,
  );
  return rows;
}

/** A rail's statements, newest first: `limit + 1` rows after `after`, for pageOf. */
export async function listStatements(
  db: Queryable,
  rail: string,
  page: { limit: number; after?: PagePosition },
): Promise<ListedRailStatementRow[]> {
  const params = new Params();
  return newestFirst<ListedRailStatementRow>(db, {
    columns: COLUMNS,
    from: 'rail_statements',
    time: 'created_at',
    params,
    where: [`rail = ${params.add(rail)}`],
    ...page,
  });
}

/** Whether any payment went through this rail (one index probe). */
export async function railCarriedPayments(db: Queryable, rail: string): Promise<boolean> {
  const p = new Params();
  const { rows } = await db.query<{ used: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM payments WHERE rail = ${p.add(rail)}) AS used`,
    p.values,
  );
  return rows[0]?.used === true;
}

const PAYMENT_COLUMNS = 'tenant_id, mode, id::text AS id, status, payout_amount, bank_reference, settled_at';

/** The payments of this rail among `ids` (payment ids, already known to be uuids). */
export async function railPaymentsByIds(
  db: Queryable,
  rail: string,
  ids: readonly string[],
): Promise<StatementPayment[]> {
  if (ids.length === 0) return [];
  const p = new Params();
  const { rows } = await db.query<StatementPayment>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE rail = ${p.add(rail)} AND id = ANY(${p.add(ids)}::uuid[])`,
    p.values,
  );
  return rows;
}

/**
 * Waits for any other statement of this rail and day being matched, and holds them off until the
 * caller's transaction ends. Two files of one day open the same anomalies (one per rail, day, reference
 * and kind), batch after batch: matched side by side, each could wait for a key the other inserted
 * while holding one the other needs. One day of one rail is matched at a time instead.
 */
export async function beginStatementMatch(
  tx: Queryable,
  key: { rail: string; day: string },
  boundMs: number,
): Promise<void> {
  assert(Number.isInteger(boundMs) && boundMs > 0, `bound ${boundMs} is not a positive integer`);
  // Each statement, and the wait for another statement of the day, bounded by `boundMs` instead of the
  // pool's defaults (a day's lines are matched in one transaction: it may take longer than a payout).
  await tx.exec(`SET LOCAL statement_timeout = ${boundMs}; SET LOCAL lock_timeout = ${boundMs}`);
  const p = new Params();
  await tx.query(
    `SELECT pg_advisory_xact_lock(hashtextextended('rail_statement:' || ${p.add(key.rail)} || ':' || ${p.add(key.day)}, 0))`,
    p.values,
  );
}

/**
 * Makes the caller's transaction remember the references a statement names (a temporary table, gone
 * at its end), so the payments it does not name are found by the database, not held in memory.
 */
export async function beginStatementReferences(tx: Queryable): Promise<void> {
  await tx.exec(
    `CREATE TEMPORARY TABLE rail_statement_references (reference text PRIMARY KEY, line integer NOT NULL) ON COMMIT DROP`,
  );
}

/**
 * Remembers a batch of references (distinct within the batch); answers those named before, with the
 * line that named them first.
 */
export async function rememberReferences(
  tx: Queryable,
  lines: ReadonlyArray<{ reference: string; line: number }>,
): Promise<Array<{ reference: string; line: number }>> {
  if (lines.length === 0) return [];
  const p = new Params();
  const given = p.unnest({
    reference: ['text', lines.map((l) => l.reference)],
    line: ['integer', lines.map((l) => l.line)],
  });
  const { rows } = await tx.query<{ reference: string; line: number }>(
    `WITH given AS (SELECT * FROM ${given}),
          added AS (INSERT INTO rail_statement_references (reference, line) SELECT reference, line FROM given ON CONFLICT (reference) DO NOTHING RETURNING reference)
     -- The statement's own insert (added) is not visible here: only references named by earlier batches are found.
     SELECT r.reference, r.line FROM rail_statement_references r JOIN given g ON g.reference = r.reference`,
    p.values,
  );
  return rows;
}

/**
 * The next page of this rail's payments settled on `day` (America/Caracas) that the statement does not
 * name: by id, after `afterId`, at most `limit`.
 */
export async function unnamedSettledPayments(
  tx: Queryable,
  key: { rail: string; day: string },
  page: { afterId: string; limit: number },
): Promise<StatementPayment[]> {
  const params = new Params();
  const { rows } = await tx.query<StatementPayment>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments p
      WHERE p.rail = ${params.add(key.rail)} AND p.settled_at IS NOT NULL AND ((p.settled_at AT TIME ZONE 'America/Caracas')::date) = ${params.add(key.day)}::date
        AND p.id > ${params.add(page.afterId)}::uuid
        AND NOT EXISTS (SELECT 1 FROM rail_statement_references r WHERE r.reference = p.id::text)
      ORDER BY p.id
      LIMIT ${params.add(page.limit)}`,
    params.values,
  );
  return rows;
}
