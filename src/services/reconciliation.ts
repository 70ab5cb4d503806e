// Reconciliation as a job: runs are queued (by the schedule, every RECONCILE_INTERVAL_S per tenant and
// mode, or by an operator), and any process of the worker role takes them one at a time under a
// lease. The database decides who runs what — at most one run waiting or under way per tenant and
// mode (a unique index), a queued run claimed by one worker (SKIP LOCKED), a run whose worker died
// abandoned once its lease runs out — so any number of workers share one database.
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../db/database.ts';
import {
  abandonExpiredRuns,
  claimQueuedRun,
  enqueueRuns,
  findRun,
  listRuns,
  purgeRuns,
  runDiscrepancies,
  type DiscrepancyRow,
  type RunRow,
  type RunScope,
  type RunSelection,
  type RunStatus,
} from '../db/repositories/reconciliation-runs.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import { openAnomalies } from '../db/repositories/anomalies.ts';
import type { AuditActor } from '../domain/audit.ts';
import { discrepancyAnomalies } from '../domain/reconciliation.ts';
import type { MoneyMetrics } from './money-metrics.ts';
import type { Clock } from '../domain/clock.ts';
import { pageOf, positionAfter } from '../domain/page-cursor.ts';
import { notFound } from '../domain/errors.ts';
import {
  ReconciliationRunner,
  RUN_LEASE_MS,
  type DiscrepancyHook,
  type PageSizes,
  type RunObserver,
} from './reconciliation-run.ts';
import type { Mode } from '../domain/partition.ts';

/** Runs one process takes from the queue in one drain, at most (then the worker loop comes back). */
export const RUNS_PER_DRAIN_MAX = 20;
/** Runs whose lease ran out, marked abandoned per pass, at most. */
const ABANDONED_PER_PASS_MAX = 100;
/** Tenants and modes one request or one schedule pass queues, at most. */
const RUNS_QUEUED_PER_REQUEST_MAX = 10_000;
/** Finished runs are kept this long, then purged (each tenant and mode's standing stays). */
const RUN_RETENTION_DAYS = 90;
/** Runs purged per statement, at most. */
export const RUNS_PURGED_PER_PASS_MAX = 1000;

export interface ReconciliationOptions {
  /** RECONCILE_INTERVAL_S: how often each tenant and mode is reconciled by the schedule; 0 = on demand only. */
  intervalS: number;
  /**
   * RECONCILE_FULL_INTERVAL_S: the schedule's runs are incremental, except the first of each tenant and
   * mode and one whose last full proof is older than this.
   */
  fullIntervalS: number;
  /** This process runs queued runs (the worker role); an API-only process only queues them. */
  executesRuns: boolean;
  /** Rows per page of a run (default: the runner's bounds). */
  pageSizes?: PageSizes;
}

/**
 * The schedule waits at least this many times a run's own duration after it ended before the next
 * run of that tenant and mode, whatever RECONCILE_INTERVAL_S says: a tenant whose proof takes long
 * (it grows with its history: 100,000 payments took 8 s on an idle 2-core machine) gets at
 * most a tenth of a worker for it, not all of it. An operator's request is never held back.
 * @internal Exported for its tests, not used elsewhere.
 */
export const RUN_REST_FACTOR = 9;

/** Run ids an operator's request lists in its audit row (the total is always there). */
const AUDITED_RUN_IDS_MAX = 100;

export class ReconciliationService {
  private readonly runner: ReconciliationRunner;
  private draining: Promise<number> | undefined;
  private queuedMeanwhile = false;
  private stopping = false;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly options: ReconciliationOptions,
    observer: RunObserver,
    private readonly log?: FastifyBaseLogger,
    onDiscrepancies?: DiscrepancyHook,
  ) {
    this.runner = new ReconciliationRunner(
      db,
      clock,
      observer,
      log,
      onDiscrepancies,
      options.fullIntervalS,
      options.pageSizes,
    );
  }

  /**
   * An operator's request: a run queued for one tenant (the given mode, or both), or for every tenant
   * and mode with books; a full proof unless `scope` says incremental. A tenant and mode that already
   * has a run waiting or under way gets no second one: its run is answered (made full, if it still
   * waits and a full one is asked for). With an actor (an operator's call), the audit row of the
   * request is written in the transaction that queues the runs.
   */
  async request(
    selection: { tenantId?: string; mode?: Mode; scope?: RunScope },
    actor?: AuditActor,
  ): Promise<RunRow[]> {
    if (selection.tenantId !== undefined) {
      const tenant = await findTenant(this.db, selection.tenantId);
      if (!tenant || tenant.is_platform) throw notFound('tenant');
    }
    const chosen: RunSelection =
      selection.tenantId !== undefined
        ? { tenantId: selection.tenantId, modes: selection.mode ? [selection.mode] : ['test', 'live'] }
        : { mode: selection.mode };
    const runs = await this.db.transaction(async (tx) => {
      const scope = selection.scope ?? 'full';
      const queued = await enqueueRuns(tx, chosen, {
        trigger: 'operator',
        scope,
        now: this.clock.now(),
        max: RUNS_QUEUED_PER_REQUEST_MAX,
      });
      if (actor) {
        await recordAudit(tx, {
          actor,
          action: 'reconciliation.start',
          target: {
            type: 'reconciliation',
            id: selection.tenantId ?? 'all',
            tenantId: selection.tenantId ?? null,
            mode: selection.mode ?? null,
          },
          before: null,
          after: { scope, runs: queued.slice(0, AUDITED_RUN_IDS_MAX).map((run) => run.id), total: queued.length },
        });
      }
      return queued;
    });
    if (this.options.executesRuns) {
      this.drain().catch((error: unknown) =>
        this.log?.error({ message: (error as Error)?.message }, 'reconciliation: running the queued runs failed'),
      );
    }
    return runs;
  }

  /**
   * The schedule: queues an incremental run for every tenant and mode not reconciled within
   * RECONCILE_INTERVAL_S, nor within RUN_REST_FACTOR times its last run's duration (the run proves the
   * whole history when RECONCILE_FULL_INTERVAL_S has passed since the last full proof).
   */
  async scheduleDue(): Promise<number> {
    if (this.options.intervalS <= 0) return 0;
    const now = this.clock.now();
    const dueBefore = new Date(now.getTime() - this.options.intervalS * 1000);
    return (
      await enqueueRuns(
        this.db,
        {},
        {
          trigger: 'schedule',
          scope: 'incremental',
          now,
          max: RUNS_QUEUED_PER_REQUEST_MAX,
          dueBefore,
          restFactor: RUN_REST_FACTOR,
        },
      )
    ).length;
  }

  /**
   * Runs what is queued, one run at a time in this process, until the queue is empty (or
   * RUNS_PER_DRAIN_MAX runs); answers how many it ran. A call while a drain is under way joins it (and
   * makes it look again).
   */
  drain(): Promise<number> {
    if (this.draining) {
      this.queuedMeanwhile = true;
      return this.draining;
    }
    this.draining = (async () => {
      try {
        let runs = 0;
        do {
          this.queuedMeanwhile = false;
          runs += await this.drainOnce(RUNS_PER_DRAIN_MAX - runs);
        } while (this.queuedMeanwhile && runs < RUNS_PER_DRAIN_MAX && !this.stopping);
        return runs;
      } finally {
        this.draining = undefined;
      }
    })();
    return this.draining;
  }

  private async drainOnce(max: number): Promise<number> {
    const abandoned = await abandonExpiredRuns(this.db, this.clock.now(), ABANDONED_PER_PASS_MAX);
    for (const run of abandoned)
      this.log?.warn(
        { runId: run.id, tenantId: run.tenant_id },
        'reconciliation run abandoned: the process running it stopped',
      );
    let done = 0;
    while (done < max && !this.stopping) {
      const now = this.clock.now();
      const run = await claimQueuedRun(this.db, now, new Date(now.getTime() + RUN_LEASE_MS));
      if (!run) break;
      done += 1;
      await this.runner.execute(run, () => this.stopping);
    }
    return done;
  }

  /** Deletes finished runs older than RUN_RETENTION_DAYS; answers how many (RUNS_PURGED_PER_PASS_MAX at most). */
  purgeOld(): Promise<number> {
    return purgeRuns(
      this.db,
      new Date(this.clock.now().getTime() - RUN_RETENTION_DAYS * 86_400_000),
      RUNS_PURGED_PER_PASS_MAX,
    );
  }

  /** Ends the run under way at its next page (recorded as abandoned) and waits for it. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.draining?.catch(() => undefined);
  }

  async list(filter: { limit: number; cursor?: string; tenantId?: string; mode?: Mode; status?: RunStatus }) {
    const after = positionAfter(filter.cursor);
    const rows = await listRuns(this.db, {
      limit: filter.limit,
      after,
      tenantId: filter.tenantId,
      mode: filter.mode,
      status: filter.status,
    });
    return pageOf(
      rows.map((r) => ({ ...r, created_at_us: r.requested_at_us })),
      filter.limit,
    );
  }

  async get(id: string): Promise<{ run: RunRow; discrepancies: DiscrepancyRow[] }> {
    const run = await findRun(this.db, id);
    if (!run) throw notFound('reconciliation run');
    return { run, discrepancies: await runDiscrepancies(this.db, { tenantId: run.tenant_id, id: run.id }) };
  }
}

/**
 * The discrepancies a run stores open anomalies, the operator's review queue, in the transaction that
 * records the run's end; the same disagreement found by the next run is the same anomaly. Counted in
 * `bolivar_anomalies_total` once committed, and only those stored now.
 */
export function openDiscrepancyAnomalies(metrics: Pick<MoneyMetrics, 'anomalyRecorded'>): DiscrepancyHook {
  return async (tx, run, discrepancies) => {
    const opened = await openAnomalies(tx, discrepancyAnomalies(run, discrepancies));
    const created = opened.filter((a) => a.created).length;
    return () => {
      for (let i = 0; i < created; i += 1) metrics.anomalyRecorded('reconciliation_discrepancy');
    };
  };
}
