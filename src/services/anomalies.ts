// The operator's side of anomalies: list them, read one, resolve it with a note. Nothing here
// changes a payment or the ledger: an anomaly is resolved by a person who looked (and, where money
// moved contrary to the ledger, corrected it with a new, audited entry), never by editing records.
import type { Database } from '../db/database.ts';
import { findAnomaly, listAnomalies, lockAnomaly, markAnomalyResolved, type AnomalyFilter, type AnomalyRow } from '../db/repositories/anomalies.ts';
import type { Clock } from '../domain/clock.ts';
import { pageOf, positionAfter } from '../domain/page-cursor.ts';
import { ApiError, notFound } from '../http/errors.ts';

export class AnomalyService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async list(filter: AnomalyFilter, page: { limit: number; cursor?: string }) {
    const after = positionAfter(page.cursor);
    return pageOf(await listAnomalies(this.db, filter, { limit: page.limit, after }), page.limit);
  }

  async get(id: string): Promise<AnomalyRow> {
    const row = await findAnomaly(this.db, id);
    if (!row) throw notFound('anomaly');
    return row;
  }

  /**
   * Resolves an open anomaly: `resolvedBy` (the caller's API key id) and the note are stored on it.
   * 404 when there is none, 409 `anomaly_already_resolved` when it was resolved before (by anyone).
   */
  async resolve(id: string, resolution: { note: string; resolvedBy: string }): Promise<AnomalyRow> {
    return this.db.transaction(async (tx) => {
      const before = await lockAnomaly(tx, id);
      if (!before) throw notFound('anomaly');
      if (before.status === 'resolved') {
        throw new ApiError('anomaly_already_resolved', 'This anomaly was already resolved; nothing changed.', {
          resolved_at: before.resolved_at?.toISOString() ?? null,
          resolved_by: before.resolved_by,
        });
      }
      const after = await markAnomalyResolved(tx, id, { resolvedBy: resolution.resolvedBy, note: resolution.note, at: this.clock.now() });
      // The audit row of this operator action (actor, `anomaly.resolve`, the anomaly, its status and
      // note before and after) belongs here, in this transaction, once the audit trail exists.
      return after;
    });
  }
}
