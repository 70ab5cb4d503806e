import type { Database } from '../db/database.ts';
import { purgeAcknowledgedRailInbox } from '../db/repositories/rail-inbox.ts';
import type { Clock } from '../domain/clock.ts';
import { purgeInBatches } from './bounded-purge.ts';

/**
 * How long an applied callback is kept: a gateway's redelivery of the same event within it is
 * recognised by its event id and stored once. Past it, a redelivery would be stored and applied again,
 * which changes nothing (an outcome already recorded, or an anomaly recorded once per event id).
 * @internal Exported for its tests, not used elsewhere.
 */
export const RAIL_INBOX_RETENTION_MS = 30 * 24 * 3_600_000;

/** Deletes the connectors' callbacks acknowledged more than RAIL_INBOX_RETENTION_MS ago, so the inbox does not grow forever. */
export class RailInboxPurge {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** One bounded pass; true when it stopped at its bound (more are waiting). */
  async runOnce(): Promise<boolean> {
    const before = new Date(this.clock.now().getTime() - RAIL_INBOX_RETENTION_MS);
    return purgeInBatches((max) => purgeAcknowledgedRailInbox(this.db, before, max));
  }
}
