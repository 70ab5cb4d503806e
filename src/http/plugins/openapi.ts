import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { componentSchemas } from '../schemas/common.ts';

export const API_DESCRIPTION = `Deliver Venezuelan bolivares (BS) to a beneficiary's bank account by Pago Móvil or bank transfer.

The flow is three calls: quote (\`POST /v1/quotes\`), register the beneficiary (\`POST /v1/beneficiaries\`),
disburse (\`POST /v1/payouts\`). The rail is asynchronous: the usual payout answer is \`submitted\`, and the
outcome arrives by signed webhook.

Amounts are integers in minor units (BS has 2 decimals): requests carry JSON integers, responses strings.
Errors share one envelope \`{error: {type, code, message, request_id, meta?}}\`; branch on \`error.code\`.`;

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  for (const schema of componentSchemas()) app.addSchema(schema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Bolivar Disbursement Service',
        version: '1.0.0',
        description: API_DESCRIPTION,
        contact: { name: 'Bolivar Disbursement Service support', email: 'support@bolivar.example' },
      },
      servers: [{ url: 'http://localhost:3000', description: 'Local (npm start)' }],
      tags: [
        { name: 'Tenant', description: 'Who the API key belongs to' },
        { name: 'Quotes', description: 'Fix the delivered amount, the rate and the fee' },
        { name: 'Beneficiaries', description: 'Who receives the bolivares' },
        { name: 'Payouts', description: 'Move money' },
        { name: 'Payments', description: 'What happened afterwards: payment state and statement' },
        { name: 'Treasury', description: 'Prefunding balance, credit and limit usage' },
        { name: 'Events', description: 'Outcome events and their webhook deliveries' },
        { name: 'Sandbox', description: 'Test-mode webhook receivers' },
        { name: 'Admin', description: 'Platform administration (platform key, scope platform:admin); outside the public contract' },
        { name: 'Operations', description: 'Health and metrics' },
      ],
      components: {
        securitySchemes: {
          ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'bsk_test_…, bsk_live_… or bsk_platform_…' },
        },
      },
      security: [{ ApiKeyAuth: [] }],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });
}
