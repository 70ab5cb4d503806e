import { Answer, errorResponses } from '../schemas/common.ts';
import { TenantContext } from '../schemas/tenant.ts';
import type { App } from '../types.ts';

export async function tenantRoutes(app: App): Promise<void> {
  getTenantMeRoute(app);
}

function getTenantMeRoute(app: App): void {
  app.get(
    '/v1/tenant/me',
    {
      config: { scopes: [] },
      schema: {
        tags: ['Tenant'],
        operationId: 'getTenantMe',
        summary: 'Who this API key belongs to',
        description:
          'The first call to make when integrating: confirms the mode (test or live) and the scopes of the key. Needs no scope.',
        response: { 200: Answer('The tenant, mode and scopes of this key', TenantContext), ...errorResponses() },
      },
    },
    async function getTenantMe(request) {
      const auth = request.auth!;
      return {
        tenantId: auth.tenantId,
        name: auth.tenantName,
        mode: auth.mode,
        scopes: [...auth.scopes],
        apiKeyId: auth.apiKeyId,
        isPlatform: auth.isPlatform,
      };
    },
  );
}
