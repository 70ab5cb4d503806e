import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';
import { Params } from './sql-params.ts';

export interface WebhookEndpointRow {
  tenant_id: string;
  mode: Mode;
  url: string;
  origin: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const ENDPOINT_COLUMNS =
  'tenant_id, mode, url, origin, secret, previous_secret, previous_secret_expires_at, created_at, updated_at';

/**
 * Sets the program's webhook URL. A new endpoint gets `secretIfNew`; an existing one keeps its
 * secret (changing the URL is not a rotation).
 */
export async function upsertWebhookEndpoint(
  db: Queryable,
  endpoint: { tenantId: string; mode: Mode; url: string; origin: string; secretIfNew: string; at: Date },
): Promise<WebhookEndpointRow> {
  const p = new Params();
  const at = p.add(endpoint.at);
  const { rows } = await db.query<WebhookEndpointRow>(
    `INSERT INTO webhook_endpoints (tenant_id, mode, url, origin, secret, created_at, updated_at)
     VALUES (${p.add(endpoint.tenantId)}, ${p.add(endpoint.mode)}, ${p.add(endpoint.url)}, ${p.add(endpoint.origin)}, ${p.add(endpoint.secretIfNew)}, ${at}, ${at})
     ON CONFLICT (tenant_id, mode) DO UPDATE SET url = EXCLUDED.url, origin = EXCLUDED.origin, updated_at = EXCLUDED.updated_at
     RETURNING ${ENDPOINT_COLUMNS}`,
    p.values,
  );
  return rows[0]!;
}

/** The current secret becomes the previous one (signing until `previousExpiresAt`); undefined without an endpoint. */
export async function rotateWebhookSecret(
  db: Queryable,
  rotation: { tenantId: string; mode: Mode; newSecret: string; previousExpiresAt: Date; at: Date },
): Promise<WebhookEndpointRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<WebhookEndpointRow>(
    `UPDATE webhook_endpoints
        SET previous_secret = secret, previous_secret_expires_at = ${p.add(rotation.previousExpiresAt)}, secret = ${p.add(rotation.newSecret)}, updated_at = ${p.add(rotation.at)}
      WHERE tenant_id = ${p.add(rotation.tenantId)} AND mode = ${p.add(rotation.mode)}
      RETURNING ${ENDPOINT_COLUMNS}`,
    p.values,
  );
  return rows[0];
}

/** The program's endpoint, locked until the transaction ends (a change reads what it replaces). */
export async function lockWebhookEndpoint(
  tx: Queryable,
  tenantId: string,
  mode: Mode,
): Promise<WebhookEndpointRow | undefined> {
  const p = new Params();
  const { rows } = await tx.query<WebhookEndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} FOR UPDATE`,
    p.values,
  );
  return rows[0];
}

/** The signing secrets of the program a test-mode event belongs to, found by the event id alone. */
export interface TestEventSigner {
  tenant_id: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * The program of a test-mode event and its endpoint's secrets; undefined when there is no such
 * test-mode event or its program has no endpoint. A live-mode event is never returned.
 */
export async function findTestEventSigner(db: Queryable, eventId: bigint): Promise<TestEventSigner | undefined> {
  // `mode = 'test'` as a literal: it is what lets the planner use the partial index on test events.
  const p = new Params();
  const { rows } = await db.query<TestEventSigner>(
    `SELECT e.tenant_id, w.secret, w.previous_secret, w.previous_secret_expires_at
       FROM outbox_events e
       JOIN webhook_endpoints w ON w.tenant_id = e.tenant_id AND w.mode = e.mode
      WHERE e.id = ${p.add(eventId)} AND e.mode = 'test'
      LIMIT 2`,
    p.values,
  );
  // Ids come from one sequence; should two programs ever share one, neither is trusted.
  return rows.length === 1 ? rows[0] : undefined;
}

export interface SandboxReceiptRow {
  id: bigint;
  event_id: bigint;
  headers: Record<string, string | string[]>;
  raw_body: string;
  signature_verified: boolean;
  received_at: Date;
}

/** The sink keeps this many receipts per program; older ones are dropped as new ones arrive. */
const SANDBOX_RECEIPTS_KEPT = 1000;

/** Stores a verified test-mode delivery (the only kind the sink keeps) and trims the program's inbox. */
export async function insertSandboxReceipt(
  tx: Queryable,
  receipt: { tenantId: string; eventId: bigint; headers: Record<string, unknown>; rawBody: string; at: Date },
): Promise<SandboxReceiptRow> {
  const p = new Params();
  const { rows } = await tx.query<SandboxReceiptRow>(
    `INSERT INTO sandbox_webhook_receipts (tenant_id, mode, event_id, headers, raw_body, signature_verified, received_at)
     VALUES (${p.add(receipt.tenantId)}, 'test', ${p.add(receipt.eventId)}, ${p.add(JSON.stringify(receipt.headers))}::jsonb, ${p.add(receipt.rawBody)}, true, ${p.add(receipt.at)})
     RETURNING id, event_id, headers, raw_body, signature_verified, received_at`,
    p.values,
  );
  const trim = new Params();
  const tenant = trim.add(receipt.tenantId);
  await tx.query(
    `DELETE FROM sandbox_webhook_receipts
      WHERE tenant_id = ${tenant} AND mode = 'test' AND id <= (
        SELECT id FROM sandbox_webhook_receipts WHERE tenant_id = ${tenant} AND mode = 'test' ORDER BY id DESC OFFSET ${trim.add(SANDBOX_RECEIPTS_KEPT)} LIMIT 1)`,
    trim.values,
  );
  return rows[0]!;
}

/** Newest first; `beforeId` is the previous page's last id. Fetches one extra row to tell whether more exist. */
export async function listSandboxReceipts(
  db: Queryable,
  query: { tenantId: string; mode: Mode; beforeId?: bigint; eventId?: bigint; limit: number },
): Promise<SandboxReceiptRow[]> {
  const p = new Params();
  const [beforeId, eventId] = [p.add(query.beforeId ?? null), p.add(query.eventId ?? null)];
  const { rows } = await db.query<SandboxReceiptRow>(
    `SELECT id, event_id, headers, raw_body, signature_verified, received_at
       FROM sandbox_webhook_receipts
      WHERE tenant_id = ${p.add(query.tenantId)} AND mode = ${p.add(query.mode)}
        AND (${beforeId}::bigint IS NULL OR id < ${beforeId})
        AND (${eventId}::bigint IS NULL OR event_id = ${eventId})
      ORDER BY id DESC
      LIMIT ${p.add(query.limit)}`,
    p.values,
  );
  return rows;
}
