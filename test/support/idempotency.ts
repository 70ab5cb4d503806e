// What a test reads of an Idempotency-Key's row.
import type { Queryable } from '../../src/db/database.ts';
import type { IdempotencyRow, IdempotencyScope } from '../../src/db/repositories/idempotency.ts';
import { Params } from '../../src/db/repositories/sql-params.ts';

/** The key's row as stored, or undefined. */
export async function findIdempotencyKey(db: Queryable, scope: IdempotencyScope): Promise<IdempotencyRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<IdempotencyRow>(
    `SELECT tenant_id, mode, key, fingerprint, status, owner, response_status, response_body, locked_until, created_at, expires_at FROM idempotency_keys WHERE tenant_id = ${p.add(scope.tenantId)} AND mode = ${p.add(scope.mode)} AND key = ${p.add(scope.key)}`,
    p.values,
  );
  return rows[0];
}
