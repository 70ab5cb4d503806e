// Reconciliation runs: the queue (queued → running under a lease → completed, failed or abandoned),
// their stored discrepancies, each tenant and mode's standing (reconciliation_partitions), and the
// admin reads. Only these tables are written here; the money tables are only read (reconciliation-reads.ts).
import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';
import type { CheckName, CheckResult, Discrepancy } from '../../domain/reconciliation.ts';
import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';
import type { AccountKind, LedgerEntryKind } from '../../domain/ledger.ts';
import type { Checkpoint } from './reconciliation-reads.ts';
import { Params } from './sql-params.ts';
import { assert } from '../../domain/assert.ts';

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'abandoned';
type RunTrigger = 'schedule' | 'operator';
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
  `${[
    'tenant_id',
    'mode',
    'id',
    'trigger',
    'status',
    'scope',
    'since_run_id',
    'requested_at',
    'started_at',
    'lease_until',
    'finished_at',
    'checks',
    'discrepancy_count',
    'examined',
    'error',
  ]
    .map((c) => `${alias}${c}`)
    .join(', ')}, (extract(epoch FROM ${alias}requested_at) * 1000000)::bigint AS requested_at_us`;
const COLUMNS = columnsOf();

/** Which tenants and modes a request names: one tenant (one mode, or both), or every one with books. */
export type RunSelection = { tenantId: string; modes: readonly Mode[] } | { tenantId?: undefined; mode?: Mode };

// Every tenant and mode with books to reconcile: an account, or a key (a payment needs one; a payout
// that failed before the rail posts nothing). The platform's own tenant has neither money nor payouts.
// `mode` null: both modes (the condition is in the text either way: one statement for both).
function withBooks(params: Params, mode: Mode | null): string {
  const onlyMode = params.add(mode);
  return `SELECT DISTINCT s.tenant_id, s.mode
  FROM (SELECT tenant_id, mode FROM ledger_accounts UNION SELECT tenant_id, mode FROM api_keys WHERE NOT is_platform) s
  JOIN tenants t ON t.id = s.tenant_id AND NOT t.is_platform
 WHERE ${onlyMode}::text IS NULL OR s.mode = ${onlyMode}`;
}
const named = (params: Params, tenantId: string, modes: readonly Mode[]) =>
  `SELECT t.id AS tenant_id, m.mode FROM tenants t CROSS JOIN unnest(${params.add(modes)}::text[]) AS m(mode) WHERE t.id = ${params.add(tenantId)} AND NOT t.is_platform`;

/** How runs are queued (enqueueRuns). */
interface EnqueueOptions {
  trigger: RunTrigger;
  scope: RunScope;
  now: Date;
  max: number;
  dueBefore?: Date;
  restFactor?: number;
}

// A partition with a run waiting or under way keeps it (the conflict returns that run unchanged); a
// schedule (`dueBefore` set) skips partitions with a run requested since then, and those whose last
// run ended less than `restFactor` times its own duration ago (so the schedule keeps a large tenant's
// proofs to a bounded share of a worker: RUN_REST_FACTOR). A full proof asked for while an
// incremental one waits makes the waiting run full.
function enqueueSql(params: Params, part: string, options: EnqueueOptions): string {
  const now = params.add(options.now);
  const dueBefore = params.add(options.dueBefore ?? null);
  return `WITH part AS (${part})
INSERT INTO reconciliation_runs AS r (tenant_id, mode, id, trigger, status, scope, requested_at)
SELECT p.tenant_id, p.mode, gen_random_uuid(), ${params.add(options.trigger)}::text, 'queued', ${params.add(options.scope)}::text, ${now}::timestamptz
  FROM part p
 WHERE ${dueBefore}::timestamptz IS NULL
    OR NOT EXISTS (SELECT 1 FROM reconciliation_runs x
                    WHERE x.tenant_id = p.tenant_id AND x.mode = p.mode
                      AND (x.requested_at > ${dueBefore} OR x.finished_at + (x.finished_at - x.started_at) * ${params.add(options.restFactor ?? 0)}::float8 > ${now}::timestamptz))
 ORDER BY p.tenant_id, p.mode
 LIMIT ${params.add(options.max)}::int
ON CONFLICT (tenant_id, mode) WHERE status IN ('queued', 'running') DO UPDATE
  SET requested_at = r.requested_at, scope = CASE WHEN r.status = 'queued' AND EXCLUDED.scope = 'full' THEN 'full' ELSE r.scope END
RETURNING ${columnsOf('r.')}`;
}

/**
 * Queues a run for each selected tenant and mode that has none waiting or under way; answers the run
 * of each (new, or the one already open), at most `max` partitions. `dueBefore`: only partitions
 * with no run requested after it, nor one that ended less than `restFactor` times its duration ago
 * (the schedule).
 */
export async function enqueueRuns(db: Queryable, selection: RunSelection, options: EnqueueOptions): Promise<RunRow[]> {
  const params = new Params();
  const part =
    selection.tenantId !== undefined
      ? named(params, selection.tenantId, selection.modes)
      : withBooks(params, selection.mode ?? null);
  const { rows } = await db.query<RunRow>(enqueueSql(params, part, options), params.values);
  return rows;
}

/**
 * Runs whose worker stopped (its lease ran out) become `abandoned`, at most `max` at a time: a crashed
 * run never stays `running`, and its tenant and mode can be queued again.
 */
export async function abandonExpiredRuns(
  db: Queryable,
  now: Date,
  max: number,
): Promise<Array<{ tenant_id: string; id: string }>> {
  const p = new Params();
  const at = p.add(now);
  const { rows } = await db.query<{ tenant_id: string; id: string }>(
    `UPDATE reconciliation_runs r
        SET status = 'abandoned', finished_at = ${at}, lease_until = NULL,
            error = 'abandoned: the process running it stopped (its lease ran out at ' || to_char(r.lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || ')'
       FROM (SELECT tenant_id, id FROM reconciliation_runs WHERE status = 'running' AND lease_until < ${at}
              ORDER BY lease_until LIMIT ${p.add(max)} FOR UPDATE SKIP LOCKED) x
      WHERE r.tenant_id = x.tenant_id AND r.id = x.id AND r.status = 'running'
      RETURNING r.tenant_id, r.id`,
    p.values,
  );
  return rows;
}

/** The oldest queued run, now `running` under a lease until `leaseUntil`; undefined when none waits. */
export async function claimQueuedRun(db: Queryable, now: Date, leaseUntil: Date): Promise<RunRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<RunRow>(
    `UPDATE reconciliation_runs r SET status = 'running', started_at = ${p.add(now)}, lease_until = ${p.add(leaseUntil)}
       FROM (SELECT tenant_id, id FROM reconciliation_runs WHERE status = 'queued' ORDER BY requested_at LIMIT 1 FOR UPDATE SKIP LOCKED) x
      WHERE r.tenant_id = x.tenant_id AND r.id = x.id AND r.status = 'queued'
      RETURNING ${columnsOf('r.')}`,
    p.values,
  );
  return rows[0];
}

/** Extends a running run's lease; false when it is no longer this worker's (abandoned meanwhile). */
export async function renewLease(
  db: Queryable,
  run: { tenantId: string; id: string },
  leaseUntil: Date,
): Promise<boolean> {
  const p = new Params();
  const { rowCount } = await db.query(
    `UPDATE reconciliation_runs SET lease_until = ${p.add(leaseUntil)} WHERE tenant_id = ${p.add(run.tenantId)} AND id = ${p.add(run.id)} AND status = 'running'`,
    p.values,
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
export async function finishRun(
  tx: Queryable,
  run: { tenantId: string; id: string },
  end: RunEnd,
): Promise<RunRow | undefined> {
  const p = new Params();
  const { rows } = await tx.query<RunRow>(
    `UPDATE reconciliation_runs
        SET status = ${p.add(end.status)}, finished_at = ${p.add(end.finishedAt)}, lease_until = NULL, checks = ${p.add(JSON.stringify(end.checks))}::jsonb,
            discrepancy_count = ${p.add(end.discrepancyCount)}, examined = ${p.add(JSON.stringify(end.examined))}::jsonb, error = ${p.add(end.error)},
            scope = ${p.add(end.scope)}, since_run_id = ${p.add(end.sinceRunId)}
      WHERE tenant_id = ${p.add(run.tenantId)} AND id = ${p.add(run.id)} AND status = 'running'
      RETURNING ${COLUMNS}`,
    p.values,
  );
  return rows[0];
}

/** Stores a run's discrepancies (already bounded by the caller), in the order found. */
export async function insertDiscrepancies(
  tx: Queryable,
  run: { tenantId: string; id: string },
  discrepancies: readonly Discrepancy[],
): Promise<void> {
  if (discrepancies.length === 0) return;
  const col = <T>(pick: (d: Discrepancy) => T) => discrepancies.map(pick);
  const p = new Params();
  const [tenant, runId] = [p.add(run.tenantId), p.add(run.id)];
  const found = p.unnest(
    {
      check_name: ['text', col((d) => d.check)],
      subject_type: ['text', col((d) => d.subjectType)],
      subject_id: ['text', col((d) => d.subjectId)],
      facet: ['text', col((d) => d.facet)],
      payment_id: ['uuid', col((d) => d.paymentId)],
      expected: ['text', col((d) => d.expected)],
      found: ['text', col((d) => d.found)],
      detail: ['jsonb', col((d) => JSON.stringify(d.detail))],
    },
    { ordinality: true },
  );
  // A discrepancy's seq is its position in the list (the ordinality, v.n).
  await tx.query(
    `INSERT INTO reconciliation_discrepancies (tenant_id, run_id, seq, check_name, subject_type, subject_id, facet, payment_id, expected, found, detail)
     SELECT ${tenant}, ${runId}, v.n, v.check_name, v.subject_type, v.subject_id, v.facet, v.payment_id, v.expected, v.found, v.detail
       FROM ${found}`,
    p.values,
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
  const postings = JSON.stringify(
    checkpoint.postings.map((p) => ({ kind: p.kind, asset: p.asset, account: p.account, amount: p.amount.toString() })),
  );
  const params = new Params();
  const [tenant, mode, completedAt] = [params.add(run.tenantId), params.add(run.mode), params.add(at)];
  const { rows } = await tx.query<{ moved: boolean }>(
    `INSERT INTO reconciliation_partitions AS p (tenant_id, mode, first_completed_at, last_run_id, last_completed_at, last_clean_at, last_discrepancies,
                                                 proven_below, proven_postings, last_full_at)
     VALUES (${tenant}, ${mode}, ${completedAt}, ${params.add(run.id)}, ${completedAt}, CASE WHEN ${params.add(clean)} THEN ${completedAt}::timestamptz END,
             ${params.add(JSON.stringify(discrepancies))}::jsonb, ${params.add(checkpoint.provenBelow)}::xid8, ${params.add(postings)}::jsonb,
             CASE WHEN ${params.add(checkpoint.full)} THEN ${completedAt}::timestamptz END)
     ON CONFLICT (tenant_id, mode) DO UPDATE
        SET last_run_id = EXCLUDED.last_run_id, last_completed_at = EXCLUDED.last_completed_at,
            last_clean_at = coalesce(EXCLUDED.last_clean_at, p.last_clean_at), last_discrepancies = EXCLUDED.last_discrepancies,
            proven_below = EXCLUDED.proven_below, proven_postings = EXCLUDED.proven_postings,
            last_full_at = coalesce(EXCLUDED.last_full_at, p.last_full_at)
      WHERE p.proven_below IS NULL OR p.proven_below <= EXCLUDED.proven_below
     RETURNING true AS moved`,
    params.values,
  );
  assert(
    rows.length === 1,
    `the checkpoint of tenant ${run.tenantId} (${run.mode}) would move back to ${checkpoint.provenBelow}`,
  );
}

/** A tenant and mode's checkpoint: the run that left it, what it proved, and when the whole history was last proven. */
export type StoredCheckpoint = Checkpoint & { runId: string; lastFullAt: Date | null };

export async function readCheckpoint(
  db: Queryable,
  partition: { tenantId: string; mode: Mode },
): Promise<StoredCheckpoint | undefined> {
  const p = new Params();
  const { rows } = await db.query<{
    last_run_id: string;
    proven_below: string | null;
    proven_postings: Array<{ kind: LedgerEntryKind; asset: string; account: AccountKind; amount: string }> | null;
    last_full_at: Date | null;
  }>(
    `SELECT last_run_id, proven_below::text, proven_postings, last_full_at FROM reconciliation_partitions WHERE tenant_id = ${p.add(partition.tenantId)} AND mode = ${p.add(partition.mode)}`,
    p.values,
  );
  const row = rows[0];
  if (!row || row.proven_below === null || row.proven_postings === null) return undefined;
  return {
    runId: row.last_run_id,
    provenBelow: row.proven_below,
    postings: row.proven_postings.map((p) => ({
      kind: p.kind,
      asset: p.asset,
      account: p.account,
      amount: BigInt(p.amount),
    })),
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
  const p = new Params();
  const { rows } = await db.query<{
    ages: number | null;
    partitions: number;
    discrepancies: Record<string, string> | null;
  }>(
    `SELECT (SELECT max(extract(epoch FROM (${p.add(now)}::timestamptz - coalesce(last_clean_at, first_completed_at))))::float8 FROM reconciliation_partitions) AS ages,
            (SELECT count(*)::int FROM reconciliation_partitions) AS partitions,
            (SELECT jsonb_object_agg(key, total) FROM (
               SELECT d.key, sum(d.value::bigint)::text AS total FROM reconciliation_partitions, jsonb_each_text(last_discrepancies) AS d GROUP BY d.key) s) AS discrepancies`,
    p.values,
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
  const p = new Params();
  const where: string[] = [];
  if (filter.tenantId) where.push(`tenant_id = ${p.add(filter.tenantId)}`);
  if (filter.mode) where.push(`mode = ${p.add(filter.mode)}`);
  if (filter.status) where.push(`status = ${p.add(filter.status)}`);
  if (filter.after)
    where.push(
      `(requested_at, id) < (${p.add(microsToTimestamp(filter.after.createdAtUs))}::timestamptz, ${p.add(filter.after.id)}::uuid)`,
    );
  const { rows } = await db.query<RunRow>(
    `SELECT ${COLUMNS} FROM reconciliation_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY requested_at DESC, id DESC LIMIT ${p.add(filter.limit + 1)}`,
    p.values,
  );
  return rows;
}

export async function findRun(db: Queryable, id: string): Promise<RunRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<RunRow>(
    `SELECT ${COLUMNS} FROM reconciliation_runs WHERE id = ${p.add(id)}`,
    p.values,
  );
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

export async function runDiscrepancies(
  db: Queryable,
  run: { tenantId: string; id: string },
): Promise<DiscrepancyRow[]> {
  const p = new Params();
  const { rows } = await db.query<DiscrepancyRow>(
    `SELECT seq, check_name, subject_type, subject_id, facet, payment_id, expected, found, detail
       FROM reconciliation_discrepancies WHERE tenant_id = ${p.add(run.tenantId)} AND run_id = ${p.add(run.id)} ORDER BY seq`,
    p.values,
  );
  return rows;
}

/** Deletes finished runs requested before `before` (their discrepancies with them), at most `max`; answers how many. */
export async function purgeRuns(db: Queryable, before: Date, max: number): Promise<number> {
  const p = new Params();
  const { rowCount } = await db.query(
    `DELETE FROM reconciliation_runs r
      USING (SELECT tenant_id, id FROM reconciliation_runs
              WHERE requested_at < ${p.add(before)} AND status IN ('completed', 'failed', 'abandoned')
              ORDER BY requested_at LIMIT ${p.add(max)}) x
      WHERE r.tenant_id = x.tenant_id AND r.id = x.id`,
    p.values,
  );
  return rowCount;
}
