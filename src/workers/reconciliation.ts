import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../domain/clock.ts';
import {
  RUNS_PER_DRAIN_MAX,
  RUNS_PURGED_PER_PASS_MAX,
  type ReconciliationService,
} from '../services/reconciliation.ts';
import type { PassOutcome } from './run-loop.ts';

/**
 * How often this loop looks at the queue: a run an operator asked for (on any process) starts within
 * this, on whichever worker claims it first.
 */
export const RECONCILE_QUEUE_POLL_MS = 2_000;
/** How often a process asks which tenants and modes are due (the due time itself is in the database). */
const SCHEDULE_CHECK_MAX_MS = 60_000;
/** How often a process purges runs past their retention. */
const PURGE_INTERVAL_MS = 3_600_000;

/**
 * The reconciliation's worker pass: queue the tenants and modes that are due (every
 * RECONCILE_INTERVAL_S), run what is queued, and now and then purge old runs.
 */
export class ReconciliationWorker {
  private nextScheduleMs = 0;
  private nextPurgeMs = 0;

  constructor(
    private readonly service: ReconciliationService,
    private readonly clock: Clock,
    private readonly intervalS: number,
    private readonly log: FastifyBaseLogger,
  ) {}

  async runOnce(): Promise<PassOutcome> {
    const now = this.clock.now().getTime();
    if (this.intervalS > 0 && now >= this.nextScheduleMs) {
      const queued = await this.service.scheduleDue();
      if (queued > 0) this.log.info({ queued }, 'reconciliation: runs queued by the schedule');
      this.nextScheduleMs = now + Math.min(this.intervalS * 1000, SCHEDULE_CHECK_MAX_MS);
    }
    const ran = await this.service.drain();
    if (now >= this.nextPurgeMs) {
      const purged = await this.service.purgeOld();
      // A full batch: more are due, purge again at the next pass.
      this.nextPurgeMs = purged === RUNS_PURGED_PER_PASS_MAX ? now : now + PURGE_INTERVAL_MS;
    }
    // As many runs as a drain takes: more are probably queued, go again at once.
    return ran >= RUNS_PER_DRAIN_MAX;
  }
}
