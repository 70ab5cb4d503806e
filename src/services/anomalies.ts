// The operator's side of anomalies: list them, read one, resolve it with a note. Nothing here
// changes a payment or the ledger: an anomaly is resolved by a person who looked (and, where money
// moved contrary to the ledger, corrected it with a new, audited entry), never by editing records.
import type { Database, Queryable } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import {
  findAnomaly,
  listAnomalies,
  lockAnomaly,
  markAnomalyResolved,
  type AnomalyFilter,
  type AnomalyRow,
} from '../db/repositories/anomalies.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import { pageOf, positionAfter } from '../domain/page-cursor.ts';
import { ApiError, notFound } from '../domain/errors.ts';

export class AnomalyService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    /** The list's handle: the read replica's (docs/read-replica.md), or `db`. */
    private readonly reads: Queryable = db,
  ) {}

  async list(filter: AnomalyFilter, page: { limit: number; cursor?: string }) {
    const after = positionAfter(page.cursor);
    return pageOf(await listAnomalies(this.reads, filter, { limit: page.limit, after }), page.limit);
  }

  async get(id: string): Promise<AnomalyRow> {
    const row = await findAnomaly(this.db, id);
    if (!row) throw notFound('anomaly');
    return row;
  }

  /**
   * Resolves an open anomaly: `resolvedBy` (the caller's API key id) and the note are stored on it,
   * and the audit trail records the action in the same transaction.
   * 404 when there is none, 409 `anomaly_already_resolved` when it was resolved before (by anyone).
   */
  async resolve(id: string, note: string, actor: AuditActor): Promise<AnomalyRow> {
    return this.db.transaction(async (tx) => {
      const before = await lockAnomaly(tx, id);
      if (!before) throw notFound('anomaly');
      if (before.status === 'resolved') {
        throw new ApiError('anomaly_already_resolved', 'This anomaly was already resolved; nothing changed.', {
          resolved_at: before.resolved_at?.toISOString() ?? null,
          resolved_by: before.resolved_by,
        });
      }
      const after = await markAnomalyResolved(tx, id, { resolvedBy: actor.keyId, note, at: this.clock.now() });
      await recordAudit(tx, {
        actor,
        action: 'anomaly.resolve',
        target: { type: 'anomaly', id, tenantId: before.tenant_id, mode: before.mode },
        before: { status: before.status },
        after: { status: after.status, resolutionNote: after.resolution_note },
      });
      return after;
    });
  }
}
