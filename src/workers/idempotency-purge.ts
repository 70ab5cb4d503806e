import type { Database } from '../db/database.ts';
import { purgeExpiredIdempotencyKeys } from '../db/repositories/idempotency.ts';
import type { Clock } from '../domain/clock.ts';

/** Expired keys deleted per statement, at most. */
const PURGE_BATCH_MAX = 1000;
/** Statements per pass, at most: a large backlog is worked off over several passes. */
const PURGE_STATEMENTS_PER_PASS_MAX = 10;

/**
 * Deletes Idempotency-Keys past IDEMPOTENCY_TTL_HOURS, so the table holds about one day of keys
 * instead of growing forever. Expired keys already answer as absent; this only reclaims the rows.
 */
export class IdempotencyPurge {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** One bounded pass; true when it stopped at its bound (more expired keys are waiting). */
  async runOnce(): Promise<boolean> {
    for (let i = 0; i < PURGE_STATEMENTS_PER_PASS_MAX; i += 1) {
      if ((await purgeExpiredIdempotencyKeys(this.db, this.clock.now(), PURGE_BATCH_MAX)) < PURGE_BATCH_MAX) return false;
    }
    return true;
  }
}
