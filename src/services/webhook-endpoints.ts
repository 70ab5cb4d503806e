import type { Database, Queryable } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import { customerTenant } from './customer-tenant.ts';
import {
  lockWebhookEndpoint,
  rotateWebhookSecret,
  upsertWebhookEndpoint,
  type WebhookEndpointRow,
} from '../db/repositories/webhooks.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import { checkEndpointUrl, generateWebhookSecret } from '../domain/webhooks.ts';
import { notFound, validationFailed } from '../domain/errors.ts';
import { checkEndpointHost } from '../webhooks/destination.ts';
import type { Mode } from '../domain/partition.ts';
import { assert } from '../domain/assert.ts';

const HOUR_MS = 3_600_000;

/** Admin use cases on a program's webhook endpoint and its signing secret. */
export class WebhookEndpointService {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly settings: { secretOverlapHours: number; ownOrigin?: string | undefined },
  ) {}

  /**
   * Sets the URL. The first call creates the signing secret; later calls keep it (use rotation to
   * change it). URLs that are, or resolve to, addresses the mode may not reach are refused. The audit
   * row records the URL before and after, never the secret.
   */
  async setEndpoint(
    tenantId: string,
    mode: Mode,
    rawUrl: string,
    actor: AuditActor,
  ): Promise<{ url: string; secret: string }> {
    await customerTenant(this.db, tenantId);
    const url = await validEndpointUrl(rawUrl, mode, this.settings.ownOrigin);
    const endpoint = await this.db.transaction(async (tx) => {
      const before = await lockWebhookEndpoint(tx, tenantId, mode);
      const stored = await setWebhookEndpoint(tx, { tenantId, mode, url, at: this.clock.now() });
      await recordAudit(tx, {
        actor,
        action: 'webhook_endpoint.set',
        target: { type: 'webhook_endpoint', id: tenantId, tenantId, mode },
        before: before ? { url: before.url } : null,
        after: { url: stored.url },
      });
      return stored;
    });
    return { url: endpoint.url, secret: endpoint.secret };
  }

  /** A new secret; the old one keeps signing (second signature) for WEBHOOK_SECRET_OVERLAP_HOURS. */
  async rotateSecret(
    tenantId: string,
    mode: Mode,
    actor: AuditActor,
  ): Promise<{ secret: string; previousSecretExpiresAt: string }> {
    await customerTenant(this.db, tenantId);
    const now = this.clock.now();
    const previousExpiresAt = new Date(now.getTime() + Math.round(this.settings.secretOverlapHours * HOUR_MS));
    const rotated = await this.db.transaction(async (tx) => {
      const before = await lockWebhookEndpoint(tx, tenantId, mode);
      if (!before) return undefined;
      const row = await rotateWebhookSecret(tx, {
        tenantId,
        mode,
        newSecret: generateWebhookSecret(),
        previousExpiresAt,
        at: now,
      });
      assert(row, `the webhook endpoint of ${tenantId} (${mode}), locked, vanished before its rotation`);
      // When each secret was set and until when the old one signs: which secrets, never.
      await recordAudit(tx, {
        actor,
        action: 'webhook_endpoint.rotate_secret',
        target: { type: 'webhook_endpoint', id: tenantId, tenantId, mode },
        before: { secretSetAt: before.updated_at, previousSecretExpiresAt: before.previous_secret_expires_at },
        after: { secretSetAt: row.updated_at, previousSecretExpiresAt: row.previous_secret_expires_at },
      });
      return row;
    });
    if (!rotated)
      throw notFound(
        `webhook endpoint for this tenant in ${mode} mode (set one with PUT /v1/admin/tenants/{id}/webhook-endpoint first)`,
      );
    return { secret: rotated.secret, previousSecretExpiresAt: previousExpiresAt.toISOString() };
  }
}

/**
 * The normalized URL, or 400 validation_failed on `url` saying what is accepted. In test mode this
 * service's own origin (`ownOrigin`, where the sandbox sink is) is accepted wherever it is.
 */
async function validEndpointUrl(rawUrl: string, mode: Mode, ownOrigin?: string): Promise<string> {
  if (mode === 'test' && ownOrigin !== undefined) {
    const own = URL.canParse(rawUrl) ? new URL(rawUrl) : undefined;
    if (own !== undefined && own.origin === ownOrigin && own.hash === '') return own.href;
  }
  const checked = checkEndpointUrl(rawUrl, mode);
  if (!checked.ok) throw validationFailed([{ field: 'url', message: checked.message }]);
  const host = await checkEndpointHost(checked.url.hostname, mode);
  if (!host.ok) throw validationFailed([{ field: 'url', message: host.message }]);
  return checked.url.href;
}

/** Upsert with a fresh secret for a new endpoint (also used by the first-start bootstrap). */
export async function setWebhookEndpoint(
  db: Queryable,
  endpoint: { tenantId: string; mode: Mode; url: string; at: Date },
): Promise<WebhookEndpointRow> {
  const url = new URL(endpoint.url);
  return upsertWebhookEndpoint(db, {
    ...endpoint,
    url: url.href,
    origin: url.origin,
    secretIfNew: generateWebhookSecret(),
  });
}
