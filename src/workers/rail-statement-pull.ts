import type { FastifyBaseLogger } from 'fastify';
import { businessDate, minutesIntoBusinessDate, previousDate } from '../domain/caracas-time.ts';
import type { Clock } from '../domain/clock.ts';
import { SERVICE_ACTOR } from '../domain/audit.ts';
import { pullStateOf, type RailStatementPullService } from '../services/rail-statement-pull.ts';

/** How often the worker looks whether a rail's statement of yesterday is due: a pass that finds nothing due costs two SQL statements per live rail. */
export const STATEMENT_PULL_POLL_MS = 60_000;

/**
 * The scheduled bank-side check: from RAIL_STATEMENT_PULL_AT (Caracas time) on, each live connector's
 * statement of the day before is pulled and matched, once per rail and day however many worker
 * processes run this (a lease on the day's row), and retried with a backoff while it fails.
 */
export class RailStatementPullWorker {
  constructor(
    private readonly pulls: RailStatementPullService,
    private readonly clock: Clock,
    /** Minutes after Caracas midnight; null: the scheduled pull is off. */
    private readonly pullAtMinutes: number | null,
    private readonly log: FastifyBaseLogger,
  ) {}

  async runOnce(): Promise<boolean> {
    if (this.pullAtMinutes === null) return false;
    const now = this.clock.now();
    if (minutesIntoBusinessDate(now) < this.pullAtMinutes) return false;
    const day = previousDate(businessDate(now));
    for (const rail of await this.pulls.liveRails()) {
      const pull = await this.pulls.pull(rail, day, { actor: SERVICE_ACTOR, force: false });
      if (!pull) continue;
      const state = pullStateOf(pull, this.clock.now());
      if (state === 'done')
        this.log.info({ rail, day, statementId: pull.statement_id }, 'rail statement pulled and matched');
      else
        this.log.warn(
          { rail, day, state, attempts: pull.attempts, error: pull.last_error, nextAttemptAt: pull.next_attempt_at },
          'rail statement pull failed',
        );
    }
    return false;
  }
}
