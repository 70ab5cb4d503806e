// Reconciliation runs: the queue (queued → running under a lease → completed, failed or abandoned),
// their stored discrepancies, each tenant and mode's standing (reconciliation_partitions), and the
// admin reads. Only these tables are written here; the money tables are only read (reconciliation-reads.ts).
import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';
import type { CheckName, CheckResult, Discrepancy } from '../../domain/reconciliation.ts';
import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';
import type { AccountKind, LedgerEntryKind } from '../../domain/ledger.ts';
import type { Checkpoint } from './reconciliation-reads.ts';

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'abandoned';
export type RunTrigger = 'schedule' | 'operator';
/** A run proves the whole history, or what was written since its tenant and mode's checkpoint. */
export type RunScope = 'full' | 'incremental';

export interface Examined {
  payments: number;
  ledgerTransactions: number;
  accounts: number;
  limitCounters: number;
}

export interface RunRow {
  tenant_id: string;
  mode: Mode;
  id: string;
  trigger: RunTrigger;
  status: RunStatus;
  /** Asked for while queued; what the run did once it ended (an incremental run with no checkpoint to start from proves the whole history). */
  scope: RunScope;
  /** An incremental run: the run whose checkpoint it started from. */
  since_run_id: string | null;
  requested_at: Date;
  started_at: Date | null;
  lease_until: Date | null;
  finished_at: Date | null;
  checks: Partial<Record<CheckName, CheckResult>>;
  discrepancy_count: bigint;
  examined: Partial<Examined>;
  error: string | null;
  /** Microseconds since the epoch of requested_at: the list's keyset position. */
  requested_at_us: bigint;
}

/** The run's columns, each prefixed with `alias.` when given (a statement that joins). */
const columnsOf = (alias = '') =>
  `${['tenant_id', 'mode', 'id', 'trigger', 'status', 'scope', 'since_run_id', 'requested_at', 'started_at', 'lease_until', 'finished_at', 'checks', 'discrepancy_count', 'examined', 'error']
    .map((c) => `${alias}${c}`)
    .join(', ')}, (extract(epoch FROM ${alias}requested_at) * 1000000)::bigint AS requested_at_us`;
const COLUMNS = columnsOf();

/** Which tenants and modes a request names: one tenant (one mode, or both), or every one with books. */
export type RunSelection = { tenantId: string; modes: readonly Mode[] } | { tenantId?: undefined; mode?: Mode };

// Every tenant and mode with books to reconcile: an account, or a key (a payment needs one; a payout
// that failed before the rail posts nothing). The platform's own tenant has neither money nor payouts.
const WITH_BOOKS = `SELECT DISTINCT s.tenant_id, s.mode
  FROM (SELECT tenant_id, mode FROM ledger_accounts UNION SELECT tenant_id, mode FROM api_keys WHERE NOT is_platform) s
  JOIN tenants t ON t.id = s.tenant_id AND NOT t.is_platform
 WHERE $6::text IS NULL OR s.mode = $6`;
const NAMED = `SELECT t.id AS tenant_id, m.mode FROM tenants t CROSS JOIN unnest($7::text[]) AS m(mode) WHERE t.id = $6 AND NOT t.is_platform`;

// A partition with a run waiting or under way keeps it (the conflict returns that run unchanged); a
// schedule (`$4` set) skips partitions with a run requested since then, and those whose last run
// ended less than `$5` times its own duration ago (so the schedule keeps a large tenant's proofs to a
// bounded share of a worker: RUN_REST_FACTOR). A full proof asked for while an incremental one waits
// makes the waiting run full.
const enqueueSql = (source: string, scopeParam: string) => `WITH part AS (${source})
INSERT INTO reconciliation_runs AS r (tenant_id, mode, id, trigger, status, scope, requested_at)
SELECT p.tenant_id, p.mode, gen_random_uuid(), $1::text, 'queued', ${scopeParam}::text, $2::timestamptz
  FROM part p
 WHERE $4::timestamptz IS NULL
    OR NOT EXISTS (SELECT 1 FROM reconciliation_runs x
                    WHERE x.tenant_id = p.tenant_id AND x.mode = p.mode
                      AND (x.requested_at > $4 OR x.finished_at + (x.finished_at - x.started_at) * $5::float8 > $2::timestamptz))
 ORDER BY p.tenant_id, p.mode
 LIMIT $3::int
ON CONFLICT (tenant_id, mode) WHERE status IN ('queued', 'running') DO UPDATE
  SET requested_at = r.requested_at, scope = CASE WHEN r.status = 'queued' AND EXCLUDED.scope = 'full' THEN 'full' ELSE r.scope END
RETURNING ${columnsOf('r.')}`;
const ENQUEUE_WITH_BOOKS_SQL = enqueueSql(WITH_BOOKS, '$7');
const ENQUEUE_NAMED_SQL = enqueueSql(NAMED, '$8');

/**
 * Queues a run for each selected tenant and mode that has none waiting or under way; answers the run
 * of each (new, or the one already open), at most `max` partitions. `dueBefore`: only partitions
 * with no run requested after it, nor one that ended less than `restFactor` times its duration ago
 * (the schedule).
 */
export async function enqueueRuns(
  db: Queryable,
  selection: RunSelection,
  options: { trigger: RunTrigger; scope: RunScope; now: Date; max: number; dueBefore?: Date; restFactor?: number },
): Promise<RunRow[]> {
  const common = [options.trigger, options.now, options.max, options.dueBefore ?? null, options.restFactor ?? 0];
  const { rows } =
    selection.tenantId !== undefined
      ? await db.query<RunRow>(ENQUEUE_NAMED_SQL, [...common, selection.tenantId, selection.modes, options.scope])
      : await db.query<RunRow>(ENQUEUE_WITH_BOOKS_SQL, [...common, selection.mode ?? null, options.scope]);
  return rows;
}

/**
 * Runs whose worker stopped (its lease ran out) become `abandoned`, at most `max` at a time: a crashed
 * run never stays `running`, and its tenant and mode can be queued again.
 */
export async function abandonExpiredRuns(db: Queryable, now: Date, max: number): Promise<Array<{ tenant_id: string; id: string }>> {
  const { rows } = await db.query<{ tenant_id: string; id: string }>(
    `UPDATE reconciliation_runs r
        SET status = 'abandoned', finished_at = $1, lease_until = NULL,
            error = 'abandoned: the process running it stopped (its lease ran out at ' || to_char(r.lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || ')'
       FROM (SELECT tenant_id, id FROM reconciliation_runs WHERE status = 'running' AND lease_until < $1
              ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED) x
      WHERE r.tenant_id = x.tenant_id AND r.id = x.id AND r.status = 'running'
      RETURNING r.tenant_id, r.id`,
    [now, max],
  );
  return rows;
}

/** The oldest queued run, now `running` under a lease until `leaseUntil`; undefined when none waits. */
export async function claimQueuedRun(db: Queryable, now: Date, leaseUntil: Date): Promise<RunRow | undefined> {
  const { rows } = await db.query<RunRow>(
    `UPDATE reconciliation_runs r SET status = 'running', started_at = $1, lease_until = $2
       FROM (SELECT tenant_id, id FROM reconciliation_runs WHERE status = 'queued' ORDER BY requested_at LIMIT 1 FOR UPDATE SKIP LOCKED) x
      WHERE r.tenant_id = x.tenant_id AND r.id = x.id AND r.status = 'queued'
      RETURNING ${columnsOf('r.')}`,
    [now, leaseUntil],
  );
  return rows[0];
}

/** Extends a running run's lease; false when it is no longer this worker's (abandoned meanwhile). */
export async function renewLease(db: Queryable, run: { tenantId: string; id: string }, leaseUntil: Date): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE reconciliation_runs SET lease_until = $3 WHERE tenant_id = $1 AND id = $2 AND status = 'running'`,
    [run.tenantId, run.id, leaseUntil],
  );
  return rowCount === 1;
}

export interface RunEnd {
  status: 'completed' | 'failed' | 'abandoned';
  scope: RunScope;
  sinceRunId: string | null;
  finishedAt: Date;
  checks: Record<CheckName, CheckResult>;
  discrepancyCount: number;
  examined: Examined;
  error: string | null;
}

/** Records how a run ended; false when the run was no longer running (abandoned meanwhile: nothing written). */
export async function finishRun(tx: Queryable, run: { tenantId: string; id: string }, end: RunEnd): Promise<RunRow | undefined> {
  const { rows } = await tx.query<RunRow>(
    `UPDATE reconciliation_runs
        SET status = $3, finished_at = $4, lease_until = NULL, checks = $5::jsonb, discrepancy_count = $6, examined = $7::jsonb, error = $8,
            scope = $9, since_run_id = $10
      WHERE tenant_id = $1 AND id = $2 AND status = 'running'
      RETURNING ${COLUMNS}`,
    [run.tenantId, run.id, end.status, end.finishedAt, JSON.stringify(end.checks), end.discrepancyCount, JSON.stringify(end.examined), end.error, end.scope, end.sinceRunId],
  );
  return rows[0];
}

/** Stores a run's discrepancies (already bounded by the caller), in the order found. */
export async function insertDiscrepancies(tx: Queryable, run: { tenantId: string; id: string }, discrepancies: readonly Discrepancy[]): Promise<void> {
  if (discrepancies.length === 0) return;
  const col = <T>(pick: (d: Discrepancy) => T) => discrepancies.map(pick);
  await tx.query(
    `INSERT INTO reconciliation_discrepancies (tenant_id, run_id, seq, check_name, subject_type, subject_id, facet, payment_id, expected, found, detail)
     SELECT $1, $2, v.seq, v.check_name, v.subject_type, v.subject_id, v.facet, v.payment_id, v.expected, v.found, v.detail
       FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::uuid[], $8::text[], $9::text[], $10::jsonb[]) WITH ORDINALITY
         AS v(check_name, subject_type, subject_id, facet, payment_id, expected, found, detail, seq)`,
    [
      run.tenantId,
      run.id,
      col((d) => d.check),
      col((d) => d.subjectType),
      col((d) => d.subjectId),
      col((d) => d.facet),
      col((d) => d.paymentId),
      col((d) => d.expected),
      col((d) => d.found),
      col((d) => JSON.stringify(d.detail)),
    ],
  );
}

/** What a completed run proved, for the next one to start from; `full`: it proved the whole history. */
export type ProvenCheckpoint = Checkpoint & { full: boolean };

/**
 * A completed run becomes its tenant and mode's standing (what the metrics read) and leaves its
 * checkpoint. A checkpoint only moves forward: one below the stored one is refused loudly.
 */
export async function recordStanding(
  tx: Queryable,
  run: { tenantId: string; mode: Mode; id: string },
  at: Date,
  discrepancies: Record<CheckName, number>,
  clean: boolean,
  checkpoint: ProvenCheckpoint,
): Promise<void> {
  const postings = JSON.stringify(checkpoint.postings.map((p) => ({ kind: p.kind, asset: p.asset, account: p.account, amount: p.amount.toString() })));
  const { rows } = await tx.query<{ moved: boolean }>(
    `INSERT INTO reconciliation_partitions AS p (tenant_id, mode, first_completed_at, last_run_id, last_completed_at, last_clean_at, last_discrepancies,
                                                 proven_below, proven_postings, last_full_at)
     VALUES ($1, $2, $4, $3, $4, CASE WHEN $5 THEN $4::timestamptz END, $6::jsonb, $7::xid8, $8::jsonb, CASE WHEN $9 THEN $4::timestamptz END)
     ON CONFLICT (tenant_id, mode) DO UPDATE
        SET last_run_id = EXCLUDED.last_run_id, last_completed_at = EXCLUDED.last_completed_at,
            last_clean_at = coalesce(EXCLUDED.last_clean_at, p.last_clean_at), last_discrepancies = EXCLUDED.last_discrepancies,
            proven_below = EXCLUDED.proven_below, proven_postings = EXCLUDED.proven_postings,
            last_full_at = coalesce(EXCLUDED.last_full_at, p.last_full_at)
      WHERE p.proven_below IS NULL OR p.proven_below <= EXCLUDED.proven_below
     RETURNING true AS moved`,
    [run.tenantId, run.mode, run.id, at, clean, JSON.stringify(discrepancies), checkpoint.provenBelow, postings, checkpoint.full],
  );
  if (rows.length !== 1) throw new Error(`invariant: the checkpoint of tenant ${run.tenantId} (${run.mode}) would move back to ${checkpoint.provenBelow}`);
}

/** A tenant and mode's checkpoint: the run that left it, what it proved, and when the whole history was last proven. */
export type StoredCheckpoint = Checkpoint & { runId: string; lastFullAt: Date | null };

export async function readCheckpoint(db: Queryable, partition: { tenantId: string; mode: Mode }): Promise<StoredCheckpoint | undefined> {
  const { rows } = await db.query<{
    last_run_id: string;
    proven_below: string | null;
    proven_postings: Array<{ kind: LedgerEntryKind; asset: string; account: AccountKind; amount: string }> | null;
    last_full_at: Date | null;
  }>(
    `SELECT last_run_id, proven_below::text, proven_postings, last_full_at FROM reconciliation_partitions WHERE tenant_id = $1 AND mode = $2`,
    [partition.tenantId, partition.mode],
  );
  const row = rows[0];
  if (!row || row.proven_below === null || row.proven_postings === null) return undefined;
  return {
    runId: row.last_run_id,
    provenBelow: row.proven_below,
    postings: row.proven_postings.map((p) => ({ kind: p.kind, asset: p.asset, account: p.account, amount: BigInt(p.amount) })),
    lastFullAt: row.last_full_at,
  };
}

export interface Standing {
  /** Discrepancies by check, summed over every tenant and mode's last completed run. */
  discrepancies: Record<string, number>;
  /** The longest any tenant and mode has gone without a clean run (since its first completed run if never clean); 0 when none ran. */
  oldestCleanAgeSeconds: number;
  partitions: number;
}

export async function readStanding(db: Queryable, now: Date): Promise<Standing> {
  const { rows } = await db.query<{ ages: number | null; partitions: number; discrepancies: Record<string, string> | null }>(
    `SELECT (SELECT max(extract(epoch FROM ($1::timestamptz - coalesce(last_clean_at, first_completed_at))))::float8 FROM reconciliation_partitions) AS ages,
            (SELECT count(*)::int FROM reconciliation_partitions) AS partitions,
            (SELECT jsonb_object_agg(key, total) FROM (
               SELECT d.key, sum(d.value::bigint)::text AS total FROM reconciliation_partitions, jsonb_each_text(last_discrepancies) AS d GROUP BY d.key) s) AS discrepancies`,
    [now],
  );
  const row = rows[0]!;
  return {
    oldestCleanAgeSeconds: Math.max(0, row.ages ?? 0),
    partitions: row.partitions,
    discrepancies: Object.fromEntries(Object.entries(row.discrepancies ?? {}).map(([k, v]) => [k, Number(v)])),
  };
}

export interface RunListFilter {
  limit: number;
  after?: PagePosition;
  tenantId?: string;
  mode?: Mode;
  status?: RunStatus;
}

/** Runs, newest request first, by keyset (requested_at, id); `limit + 1` rows so the caller knows if more follow. */
export async function listRuns(db: Queryable, filter: RunListFilter): Promise<RunRow[]> {
  const params: unknown[] = [filter.limit + 1];
  const where: string[] = [];
  const add = (sql: (n: number) => string, ...values: unknown[]) => {
    values.forEach((v) => params.push(v));
    where.push(sql(params.length));
  };
  if (filter.tenantId) add((n) => `tenant_id = $${n}`, filter.tenantId);
  if (filter.mode) add((n) => `mode = $${n}`, filter.mode);
  if (filter.status) add((n) => `status = $${n}`, filter.status);
  if (filter.after) add((n) => `(requested_at, id) < ($${n - 1}::timestamptz, $${n}::uuid)`, microsToTimestamp(filter.after.createdAtUs), filter.after.id);
  const { rows } = await db.query<RunRow>(
    `SELECT ${COLUMNS} FROM reconciliation_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY requested_at DESC, id DESC LIMIT $1`,
    params,
  );
  return rows;
}

export async function findRun(db: Queryable, id: string): Promise<RunRow | undefined> {
  const { rows } = await db.query<RunRow>(`SELECT ${COLUMNS} FROM reconciliation_runs WHERE id = $1`, [id]);
  return rows[0];
}

export interface DiscrepancyRow {
  seq: number;
  check_name: CheckName;
  subject_type: Discrepancy['subjectType'];
  subject_id: string;
  facet: string;
  payment_id: string | null;
  expected: string;
  found: string;
  detail: Record<string, unknown>;
}

export async function runDiscrepancies(db: Queryable, run: { tenantId: string; id: string }): Promise<DiscrepancyRow[]> {
  const { rows } = await db.query<DiscrepancyRow>(
    `SELECT seq, check_name, subject_type, subject_id, facet, payment_id, expected, found, detail
       FROM reconciliation_discrepancies WHERE tenant_id = $1 AND run_id = $2 ORDER BY seq`,
    [run.tenantId, run.id],
  );
  return rows;
}

/** Deletes finished runs requested before `before` (their discrepancies with them), at most `max`; answers how many. */
export async function purgeRuns(db: Queryable, before: Date, max: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM reconciliation_runs r
      USING (SELECT tenant_id, id FROM reconciliation_runs
              WHERE requested_at < $1 AND status IN ('completed', 'failed', 'abandoned')
              ORDER BY requested_at LIMIT $2) x
      WHERE r.tenant_id = x.tenant_id AND r.id = x.id`,
    [before, max],
  );
  return rowCount;
}
