import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';

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

const ENDPOINT_COLUMNS = 'tenant_id, mode, url, origin, secret, previous_secret, previous_secret_expires_at, created_at, updated_at';

/**
 * Sets the program's webhook URL. A new endpoint gets `secretIfNew`; an existing one keeps its
 * secret (changing the URL is not a rotation).
 */
export async function upsertWebhookEndpoint(
  db: Queryable,
  endpoint: { tenantId: string; mode: Mode; url: string; origin: string; secretIfNew: string; at: Date },
): Promise<WebhookEndpointRow> {
  const { rows } = await db.query<WebhookEndpointRow>(
    `INSERT INTO webhook_endpoints (tenant_id, mode, url, origin, secret, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6)
     ON CONFLICT (tenant_id, mode) DO UPDATE SET url = EXCLUDED.url, origin = EXCLUDED.origin, updated_at = EXCLUDED.updated_at
     RETURNING ${ENDPOINT_COLUMNS}`,
    [endpoint.tenantId, endpoint.mode, endpoint.url, endpoint.origin, endpoint.secretIfNew, endpoint.at],
  );
  return rows[0]!;
}

/** The current secret becomes the previous one (signing until `previousExpiresAt`); undefined without an endpoint. */
export async function rotateWebhookSecret(
  db: Queryable,
  rotation: { tenantId: string; mode: Mode; newSecret: string; previousExpiresAt: Date; at: Date },
): Promise<WebhookEndpointRow | undefined> {
  const { rows } = await db.query<WebhookEndpointRow>(
    `UPDATE webhook_endpoints
        SET previous_secret = secret, previous_secret_expires_at = $4, secret = $3, updated_at = $5
      WHERE tenant_id = $1 AND mode = $2
      RETURNING ${ENDPOINT_COLUMNS}`,
    [rotation.tenantId, rotation.mode, rotation.newSecret, rotation.previousExpiresAt, rotation.at],
  );
  return rows[0];
}

export async function findWebhookEndpoint(db: Queryable, tenantId: string, mode: Mode): Promise<WebhookEndpointRow | undefined> {
  const { rows } = await db.query<WebhookEndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 AND mode = $2`, [
    tenantId,
    mode,
  ]);
  return rows[0];
}

/** The program's endpoint, locked until the transaction ends (a change reads what it replaces). */
export async function lockWebhookEndpoint(tx: Queryable, tenantId: string, mode: Mode): Promise<WebhookEndpointRow | undefined> {
  const { rows } = await tx.query<WebhookEndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 AND mode = $2 FOR UPDATE`, [
    tenantId,
    mode,
  ]);
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
  const { rows } = await db.query<TestEventSigner>(
    `SELECT e.tenant_id, w.secret, w.previous_secret, w.previous_secret_expires_at
       FROM outbox_events e
       JOIN webhook_endpoints w ON w.tenant_id = e.tenant_id AND w.mode = e.mode
      WHERE e.id = $1 AND e.mode = 'test'
      LIMIT 2`,
    [eventId],
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
  const { rows } = await tx.query<SandboxReceiptRow>(
    `INSERT INTO sandbox_webhook_receipts (tenant_id, mode, event_id, headers, raw_body, signature_verified, received_at)
     VALUES ($1, 'test', $2, $3::jsonb, $4, true, $5)
     RETURNING id, event_id, headers, raw_body, signature_verified, received_at`,
    [receipt.tenantId, receipt.eventId, JSON.stringify(receipt.headers), receipt.rawBody, receipt.at],
  );
  await tx.query(
    `DELETE FROM sandbox_webhook_receipts
      WHERE tenant_id = $1 AND mode = 'test' AND id <= (
        SELECT id FROM sandbox_webhook_receipts WHERE tenant_id = $1 AND mode = 'test' ORDER BY id DESC OFFSET $2 LIMIT 1)`,
    [receipt.tenantId, SANDBOX_RECEIPTS_KEPT],
  );
  return rows[0]!;
}

/** Newest first; `beforeId` is the previous page's last id. Fetches one extra row to tell whether more exist. */
export async function listSandboxReceipts(
  db: Queryable,
  query: { tenantId: string; mode: Mode; beforeId?: bigint; eventId?: bigint; limit: number },
): Promise<SandboxReceiptRow[]> {
  const { rows } = await db.query<SandboxReceiptRow>(
    `SELECT id, event_id, headers, raw_body, signature_verified, received_at
       FROM sandbox_webhook_receipts
      WHERE tenant_id = $1 AND mode = $2
        AND ($3::bigint IS NULL OR id < $3)
        AND ($4::bigint IS NULL OR event_id = $4)
      ORDER BY id DESC
      LIMIT $5`,
    [query.tenantId, query.mode, query.beforeId ?? null, query.eventId ?? null, query.limit],
  );
  return rows;
}
