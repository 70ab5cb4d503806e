// Outbox events written straight into a test's database, as a commit writes them (the same SQL,
// db/commit/ledger-sql.ts), for tests of the dispatcher that need events without payouts.
import type { Queryable } from '../../src/db/database.ts';
import { outboxEventsSql } from '../../src/db/commit/ledger-sql.ts';
import { Params } from '../../src/db/repositories/sql-params.ts';
import type { Mode } from '../../src/domain/partition.ts';

type EventType = 'payment.settled' | 'payment.failed' | 'payment.reversed';

/** Writes one event (due at `at`) and returns its id. */
export async function insertOutboxEvent(
  db: Queryable,
  event: {
    tenantId: string;
    mode: Mode;
    type: EventType;
    paymentId: string;
    payload: Record<string, unknown>;
    at: Date;
  },
): Promise<bigint> {
  const p = new Params();
  const scope = { tenant: p.add(event.tenantId), mode: p.add(event.mode), now: p.add(event.at) };
  const sql = `WITH ${outboxEventsSql(p, scope, [{ paymentId: event.paymentId, type: event.type, payload: event.payload }])} SELECT id FROM outbox`;
  const { rows } = await db.query<{ id: bigint }>(sql, p.values);
  return rows[0]!.id;
}
