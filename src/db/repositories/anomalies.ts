// Storage of anomalies (migration 023): contradictions between the rail and our records, and
// reconciliation discrepancies, each stored once (dedup_key) until an operator resolves it.
//
// A platform table: no tenant scoping, because it is read only platform-wide (the admin API) and a
// row may have no tenant (a notification naming a reference we have no payment for).
import { randomUUID } from 'node:crypto';
import { DEDUP_KEY_LENGTH_MAX, type AnomalyKind, type AnomalyStatus } from '../../domain/anomalies.ts';
import type { PagePosition } from '../../domain/page-cursor.ts';
import type { Queryable } from '../database.ts';
import { newestFirst, Params } from './sql-params.ts';
import type { Mode } from '../../domain/partition.ts';
import { assert } from '../../domain/assert.ts';

/** An anomaly to record. JSON fields are plain objects (amounts as strings). */
export interface NewAnomaly {
  kind: AnomalyKind;
  /** Null when nobody knows whose it is (a reference we have no payment for). */
  tenantId: string | null;
  mode: Mode | null;
  /** Set only with tenantId and mode. */
  paymentId: string | null;
  /** What we had. */
  ours: Record<string, unknown>;
  /** What the rail (or the check) said. */
  theirs: Record<string, unknown>;
  /** The report exactly as it came (a notification, an answer, a reconciliation's evidence). */
  raw: unknown;
  /**
   * The same contradiction always gives the same key, so it is stored once however often it is heard
   * (at most DEDUP_KEY_LENGTH_MAX characters; domain/anomalies.ts builds the rail's).
   */
  dedupKey: string;
  /** When the rail said it; default: when it is stored. */
  reportedAt?: Date;
}

export interface AnomalyRow {
  id: string;
  kind: AnomalyKind;
  tenant_id: string | null;
  mode: Mode | null;
  payment_id: string | null;
  ours: Record<string, unknown>;
  theirs: Record<string, unknown>;
  raw: unknown;
  reported_at: Date;
  created_at: Date;
  status: AnomalyStatus;
  resolved_by: string | null;
  resolution_note: string | null;
  resolved_at: Date | null;
}

export type ListedAnomalyRow = AnomalyRow & { created_at_us: bigint };

const COLUMNS = `id, kind, tenant_id, mode, payment_id, ours, theirs, raw, reported_at, created_at, status, resolved_by, resolution_note, resolved_at`;

/**
 * Records an anomaly in the caller's transaction (so it commits with whatever acknowledges the
 * report), or finds the one recorded before under the same dedup key. `created`: this call stored it.
 * `at` is the time it is stored (default: the transaction's start).
 *
 *   const { id, created } = await openAnomaly(tx, {
 *     kind: 'reconciliation_discrepancy', tenantId, mode, paymentId: null,
 *     ours: { ledger: '1200' }, theirs: { postings: '1100' }, raw: evidence, dedupKey: `recon:${check}:${hash}` });
 */
export async function openAnomaly(
  tx: Queryable,
  anomaly: NewAnomaly,
  at?: Date,
): Promise<{ id: string; created: boolean }> {
  const [opened] = await openAnomalies(tx, [anomaly], at);
  return opened!;
}

/** Many at once (one statement when all are new): per anomaly, in order, its id and whether this call stored it. */
export async function openAnomalies(
  tx: Queryable,
  anomalies: readonly NewAnomaly[],
  at?: Date,
): Promise<Array<{ id: string; created: boolean }>> {
  if (anomalies.length === 0) return [];
  for (const a of anomalies) {
    assert(
      a.dedupKey.length !== 0 && a.dedupKey.length <= DEDUP_KEY_LENGTH_MAX,
      `an anomaly's dedup key has 1 to ${DEDUP_KEY_LENGTH_MAX} characters`,
    );
    assert(
      a.paymentId === null || (a.tenantId !== null && a.mode !== null),
      'an anomaly about a payment names its tenant and mode',
    );
  }
  // Sorted by key: two transactions inserting the same keys wait for each other in one order only.
  const distinct = [...new Map(anomalies.map((a) => [a.dedupKey, a])).values()].sort((a, b) =>
    a.dedupKey < b.dedupKey ? -1 : 1,
  );
  const p = new Params();
  const given = p.unnest(
    {
      id: ['uuid', distinct.map(() => randomUUID())],
      kind: ['text', distinct.map((a) => a.kind)],
      tenant_id: ['uuid', distinct.map((a) => a.tenantId)],
      mode: ['text', distinct.map((a) => a.mode)],
      payment_id: ['uuid', distinct.map((a) => a.paymentId)],
      dedup_key: ['text', distinct.map((a) => a.dedupKey)],
      ours: ['jsonb', distinct.map((a) => JSON.stringify(a.ours))],
      theirs: ['jsonb', distinct.map((a) => JSON.stringify(a.theirs))],
      raw: ['jsonb', distinct.map((a) => JSON.stringify(a.raw ?? null))],
      reported_at: ['timestamptz', distinct.map((a) => a.reportedAt ?? null)],
    },
    { ordinality: true },
  );
  const storedAt = `coalesce(${p.add(at ?? null)}::timestamptz, now())`;
  const { rows: inserted } = await tx.query<{ id: string; dedup_key: string }>(
    `INSERT INTO anomalies (id, kind, tenant_id, mode, payment_id, dedup_key, ours, theirs, raw, reported_at, created_at)
     SELECT v.id, v.kind, v.tenant_id, v.mode, v.payment_id, v.dedup_key, v.ours, v.theirs, v.raw,
            coalesce(v.reported_at, ${storedAt}), ${storedAt}
       FROM ${given}
      ORDER BY v.n
     ON CONFLICT (dedup_key) DO NOTHING
     RETURNING id, dedup_key`,
    p.values,
  );
  const ids = new Map(inserted.map((r) => [r.dedup_key, { id: r.id, created: true }]));
  const earlier = distinct.filter((a) => !ids.has(a.dedupKey)).map((a) => a.dedupKey);
  if (earlier.length > 0) {
    // A statement of its own: it sees a row another transaction committed after the insert began.
    const lookup = new Params();
    const { rows } = await tx.query<{ id: string; dedup_key: string }>(
      `SELECT id, dedup_key FROM anomalies WHERE dedup_key = ANY(${lookup.add(earlier)}::text[])`,
      lookup.values,
    );
    for (const r of rows) ids.set(r.dedup_key, { id: r.id, created: false });
  }
  return anomalies.map((a) => {
    const found = ids.get(a.dedupKey);
    assert(found, `anomaly ${a.dedupKey} was neither stored nor found`);
    // The same key twice in one call is one anomaly: only its first mention stored it.
    const first = anomalies.find((b) => b.dedupKey === a.dedupKey) === a;
    return { id: found.id, created: found.created && first };
  });
}

export interface AnomalyFilter {
  status?: AnomalyStatus;
  kind?: AnomalyKind;
  /** `live`: live ones and those of no mode; absent: every mode. */
  mode?: 'live' | 'test';
  tenantId?: string;
}

/** Newest first (created_at, then id, descending): `limit + 1` rows after `after`, for pageOf. */
export async function listAnomalies(
  db: Queryable,
  filter: AnomalyFilter,
  page: { limit: number; after?: PagePosition },
): Promise<ListedAnomalyRow[]> {
  const params = new Params();
  // The status is one of two literals (validated): written as such so the open ones use their index.
  const where: string[] = [];
  if (filter.status !== undefined) where.push(filter.status === 'open' ? `status = 'open'` : `status = 'resolved'`);
  if (filter.kind !== undefined) where.push(`kind = ${params.add(filter.kind)}`);
  if (filter.mode === 'live') where.push(`(mode = 'live' OR mode IS NULL)`);
  if (filter.mode === 'test') where.push(`mode = 'test'`);
  if (filter.tenantId !== undefined) where.push(`tenant_id = ${params.add(filter.tenantId)}`);
  return newestFirst<ListedAnomalyRow>(db, {
    columns: COLUMNS,
    from: 'anomalies',
    time: 'created_at',
    params,
    where,
    ...page,
  });
}

export async function findAnomaly(db: Queryable, id: string): Promise<AnomalyRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<AnomalyRow>(`SELECT ${COLUMNS} FROM anomalies WHERE id = ${p.add(id)}`, p.values);
  return rows[0];
}

/** The anomaly, locked for the rest of the caller's transaction (its resolution). */
export async function lockAnomaly(tx: Queryable, id: string): Promise<AnomalyRow | undefined> {
  const p = new Params();
  const { rows } = await tx.query<AnomalyRow>(
    `SELECT ${COLUMNS} FROM anomalies WHERE id = ${p.add(id)} FOR UPDATE`,
    p.values,
  );
  return rows[0];
}

/** An open anomaly resolved by `resolvedBy` (an API key id) with `note`; asserts it was open. */
export async function markAnomalyResolved(
  tx: Queryable,
  id: string,
  resolution: { resolvedBy: string; note: string; at: Date },
): Promise<AnomalyRow> {
  const p = new Params();
  const { rows } = await tx.query<AnomalyRow>(
    `UPDATE anomalies SET status = 'resolved', resolved_by = ${p.add(resolution.resolvedBy)}, resolution_note = ${p.add(resolution.note)},
            resolved_at = ${p.add(resolution.at)}
      WHERE id = ${p.add(id)} AND status = 'open'
      RETURNING ${COLUMNS}`,
    p.values,
  );
  assert(rows.length === 1, `anomaly ${id} was not open when resolved`);
  return rows[0]!;
}

/** Open anomalies by kind, counting at most `max` rows in all (a bounded read for the metrics). */
export async function countOpenAnomalies(db: Queryable, max: number): Promise<Map<AnomalyKind, number>> {
  const p = new Params();
  const { rows } = await db.query<{ kind: AnomalyKind; n: number }>(
    `SELECT kind, count(*)::int AS n FROM (SELECT kind FROM anomalies WHERE status = 'open' LIMIT ${p.add(max)}) open GROUP BY kind`,
    p.values,
  );
  return new Map(rows.map((r) => [r.kind, r.n]));
}
