import type { Database, Queryable } from '../db/database.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import { rotateWebhookSecret, upsertWebhookEndpoint, type WebhookEndpointRow } from '../db/repositories/webhooks.ts';
import type { Mode } from '../domain/api-keys.ts';
import type { Clock } from '../domain/clock.ts';
import { checkEndpointUrl, generateWebhookSecret } from '../domain/webhooks.ts';
import { notFound, validationFailed } from '../http/errors.ts';
import { checkEndpointHost } from '../webhooks/destination.ts';

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
   * change it). URLs that are, or resolve to, addresses the mode may not reach are refused.
   */
  async setEndpoint(tenantId: string, mode: Mode, rawUrl: string): Promise<{ url: string; secret: string }> {
    await this.customerTenant(tenantId);
    const url = await validEndpointUrl(rawUrl, mode, this.settings.ownOrigin);
    const endpoint = await setWebhookEndpoint(this.db, { tenantId, mode, url, at: this.clock.now() });
    return { url: endpoint.url, secret: endpoint.secret };
  }

  /** A new secret; the old one keeps signing (second signature) for WEBHOOK_SECRET_OVERLAP_HOURS. */
  async rotateSecret(tenantId: string, mode: Mode): Promise<{ secret: string; previousSecretExpiresAt: string }> {
    await this.customerTenant(tenantId);
    const now = this.clock.now();
    const previousExpiresAt = new Date(now.getTime() + Math.round(this.settings.secretOverlapHours * HOUR_MS));
    const rotated = await rotateWebhookSecret(this.db, { tenantId, mode, newSecret: generateWebhookSecret(), previousExpiresAt, at: now });
    if (!rotated) throw notFound(`webhook endpoint for this tenant in ${mode} mode (set one with PUT /v1/admin/tenants/{id}/webhook-endpoint first)`);
    return { secret: rotated.secret, previousSecretExpiresAt: previousExpiresAt.toISOString() };
  }

  private async customerTenant(id: string): Promise<void> {
    const tenant = await findTenant(this.db, id);
    if (!tenant || tenant.is_platform) throw notFound('tenant');
  }
}

/**
 * The normalized URL, or 400 validation_failed on `url` saying what is accepted. In test mode this
 * service's own origin (`ownOrigin`, where the sandbox sink is) is accepted wherever it is.
 */
export async function validEndpointUrl(rawUrl: string, mode: Mode, ownOrigin?: string): Promise<string> {
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
export async function setWebhookEndpoint(db: Queryable, endpoint: { tenantId: string; mode: Mode; url: string; at: Date }): Promise<WebhookEndpointRow> {
  const url = new URL(endpoint.url);
  return upsertWebhookEndpoint(db, { ...endpoint, url: url.href, origin: url.origin, secretIfNew: generateWebhookSecret() });
}
