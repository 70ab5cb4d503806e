import type { Database } from '../db/database.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import { findWebhookEndpoint, insertSandboxReceipt, listSandboxReceipts, type SandboxReceiptRow } from '../db/repositories/webhooks.ts';
import type { Mode } from '../domain/api-keys.ts';
import type { Clock } from '../domain/clock.ts';
import { signingSecrets } from '../domain/webhooks.ts';
import { notFound } from '../http/errors.ts';
import { verifyWebhook } from '../webhooks/verify.ts';

/** The sandbox sink: stores what our dispatcher sent and whether it verified. */
export class SandboxWebhookService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /**
   * Stores one received delivery for the program named in the sink URL. The signature is checked
   * against that program's endpoint secrets (the current one and, during a rotation, the previous
   * one) and the ±5 minute window, exactly as an integrator's receiver would.
   */
  async receive(input: { tenantId: string; mode: Mode; headers: Record<string, unknown>; rawBody: string }): Promise<SandboxReceiptRow> {
    const tenant = await findTenant(this.db, input.tenantId);
    if (!tenant || tenant.is_platform) throw notFound('tenant');
    const now = this.clock.now();
    const endpoint = await findWebhookEndpoint(this.db, input.tenantId, input.mode);
    const verified =
      endpoint !== undefined &&
      verifyWebhook({
        secret: signingSecrets({ secret: endpoint.secret, previousSecret: endpoint.previous_secret, previousSecretExpiresAt: endpoint.previous_secret_expires_at }, now),
        headers: input.headers as Record<string, string | string[] | undefined>,
        rawBody: input.rawBody,
        nowMs: now.getTime(),
      }).ok;
    const eventIdHeader = input.headers['x-event-id'];
    const eventId = typeof eventIdHeader === 'string' && /^[0-9]{1,18}$/.test(eventIdHeader) ? BigInt(eventIdHeader) : null;
    return this.db.transaction((tx) =>
      insertSandboxReceipt(tx, { tenantId: input.tenantId, mode: input.mode, eventId, headers: input.headers, rawBody: input.rawBody, signatureVerified: verified, at: now }),
    );
  }

  async list(partition: { tenantId: string; mode: Mode }, query: { limit: number; cursor?: bigint; eventId?: bigint }) {
    const rows = await listSandboxReceipts(this.db, { ...partition, beforeId: query.cursor, eventId: query.eventId, limit: query.limit + 1 });
    const hasMore = rows.length > query.limit;
    const page = rows.slice(0, query.limit);
    return { rows: page, hasMore, nextCursor: hasMore ? page.at(-1)!.id.toString() : null };
  }
}
