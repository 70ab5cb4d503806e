import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../db/database.ts';
import { foldReportRollups } from '../db/repositories/report-rollups.ts';

/**
 * Keeps the payout report's rollups: each pass folds what was committed since the last one (the
 * first pass builds them from the payments). One process folds at a time; the others skip their
 * turn. A pass's work is what the service wrote in one REPORT_FOLD_INTERVAL_MS, so it stays small
 * whatever the history holds; after downtime, one pass takes in the backlog, in one statement.
 */
export class ReportFold {
  constructor(
    private readonly db: Database,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** One pass; never asks for another at once (the next interval's changes are the next pass's). */
  async runOnce(): Promise<false> {
    const result = await foldReportRollups(this.db);
    if (result.built)
      this.log.info({ paymentChanges: result.paymentChanges, deliveries: result.deliveries }, 'report rollups built');
    return false;
  }
}
