import type { Database } from '../db/database.ts';
import { purgeExpiredIdempotencyKeys } from '../db/repositories/idempotency.ts';
import type { Clock } from '../domain/clock.ts';
import { purgeInBatches } from './bounded-purge.ts';

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
    return purgeInBatches((max) => purgeExpiredIdempotencyKeys(this.db, this.clock.now(), max));
  }
}
