// What a test reads of a program's webhook endpoint.
import type { Queryable } from '../../src/db/database.ts';
import type { WebhookEndpointRow } from '../../src/db/repositories/webhooks.ts';
import { Params } from '../../src/db/repositories/sql-params.ts';
import type { Mode } from '../../src/domain/partition.ts';

/** The program's endpoint as stored, or undefined. */
export async function findWebhookEndpoint(
  db: Queryable,
  tenantId: string,
  mode: Mode,
): Promise<WebhookEndpointRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<WebhookEndpointRow>(
    `SELECT tenant_id, mode, url, origin, secret, previous_secret, previous_secret_expires_at, created_at, updated_at FROM webhook_endpoints WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)}`,
    p.values,
  );
  return rows[0];
}
