import type { Database } from '../db/database.ts';
import { purgeAcknowledgedRailInbox } from '../db/repositories/rail-inbox.ts';
import type { Clock } from '../domain/clock.ts';

/**
 * How long an applied callback is kept: a gateway's redelivery of the same event within it is
 * recognised by its event id and stored once. Past it, a redelivery would be stored and applied again,
 * which changes nothing (an outcome already recorded, or an anomaly recorded once per event id).
 */
export const RAIL_INBOX_RETENTION_MS = 30 * 24 * 3_600_000;
/** Events deleted per statement, at most. */
const PURGE_BATCH_MAX = 1000;
/** Statements per pass, at most: a large backlog is worked off over several passes. */
const PURGE_STATEMENTS_PER_PASS_MAX = 10;

/** Deletes the connectors' callbacks acknowledged more than RAIL_INBOX_RETENTION_MS ago, so the inbox does not grow forever. */
export class RailInboxPurge {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** One bounded pass; true when it stopped at its bound (more are waiting). */
  async runOnce(): Promise<boolean> {
    const before = new Date(this.clock.now().getTime() - RAIL_INBOX_RETENTION_MS);
    for (let i = 0; i < PURGE_STATEMENTS_PER_PASS_MAX; i += 1) {
      if ((await purgeAcknowledgedRailInbox(this.db, before, PURGE_BATCH_MAX)) < PURGE_BATCH_MAX) return false;
    }
    return true;
  }
}
