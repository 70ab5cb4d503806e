import type { FastifyBaseLogger } from 'fastify';
import type { TreasuryService } from '../services/treasury.ts';

const CLOSES_PER_PASS_MAX = 100;

/**
 * The scheduled daily close: once the Caracas day has ended, every credit tenant with something
 * drawn settles it. The daily_closes row makes each (tenant, mode, day) close exactly once, however
 * many worker processes run this.
 */
export class DailyCloseWorker {
  constructor(
    private readonly treasury: TreasuryService,
    private readonly log: FastifyBaseLogger,
  ) {}

  async runOnce(): Promise<boolean> {
    const day = this.treasury.previousBusinessDay();
    const due = await this.treasury.dueCloses(day, CLOSES_PER_PASS_MAX);
    for (const { tenantId, mode } of due) {
      const result = await this.treasury.close(tenantId, mode, day);
      this.log.info({ tenantId, mode, businessDay: day, closedAmount: result.closedAmount }, 'daily close');
    }
    return due.length === CLOSES_PER_PASS_MAX;
  }
}
