import { auditActorOf } from '../context.ts';
import type { WebhookEndpointService } from '../../services/webhook-endpoints.ts';
import { errorResponses } from '../schemas/common.ts';
import { RotatedSecret, WebhookEndpoint, WebhookEndpointBody } from '../schemas/events.ts';
import { ModeBody } from '../schemas/payouts.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';
import { ADMIN } from './admin-tenants.ts';

export async function adminWebhookRoutes(app: App, endpoints: WebhookEndpointService): Promise<void> {
  adminSetWebhookEndpointRoute(app, endpoints);
  adminRotateWebhookSecretRoute(app, endpoints);
}

function adminSetWebhookEndpointRoute(app: App, endpoints: WebhookEndpointService): void {
  app.put(
    '/v1/admin/tenants/:id/webhook-endpoint',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminSetWebhookEndpoint',
        summary: "Set a program's webhook endpoint",
        description:
          "One endpoint per tenant and mode. The first call creates the signing secret (`whsec_…`) and returns it; later calls change the URL and return the same secret (rotate it with `…/webhook-endpoint/rotate-secret`). Only http:// and https:// URLs; in live mode a URL that is, or resolves to, a loopback, private, link-local, CGNAT or metadata address is refused with 400 `validation_failed` (and checked again at every delivery). Test mode refuses the same private, link-local, CGNAT and metadata addresses, but allows loopback and the service's own origin (PUBLIC_BASE_URL, where the sandbox sink is).",
        params: IdParam,
        body: WebhookEndpointBody,
        response: { 200: WebhookEndpoint, ...errorResponses('resource_not_found') },
      },
    },
    async function adminSetWebhookEndpoint(request) {
      return endpoints.setEndpoint(request.params.id, request.body.mode, request.body.url, auditActorOf(request));
    },
  );
}

function adminRotateWebhookSecretRoute(app: App, endpoints: WebhookEndpointService): void {
  app.post(
    '/v1/admin/tenants/:id/webhook-endpoint/rotate-secret',
    {
      config: ADMIN,
      schema: {
        tags: ['Admin'],
        operationId: 'adminRotateWebhookSecret',
        summary: "Rotate a program's webhook signing secret",
        description:
          'A new secret signs from now on. Until `previousSecretExpiresAt` (WEBHOOK_SECRET_OVERLAP_HOURS, default 24 h) the old one signs too: `x-signature` then carries `sha256=<new>,sha256=<old>`, so receivers can switch at their pace. Rotating again during an overlap drops the oldest secret. 404 when the program has no endpoint.',
        params: IdParam,
        body: ModeBody,
        response: { 200: RotatedSecret, ...errorResponses('resource_not_found') },
      },
    },
    async function adminRotateWebhookSecret(request) {
      return endpoints.rotateSecret(request.params.id, request.body.mode, auditActorOf(request));
    },
  );
}
