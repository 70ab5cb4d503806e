import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { componentSchemas } from '../schemas/common.ts';

export const API_DESCRIPTION = `Deliver Venezuelan bolivares (BS) to a beneficiary's bank account by Pago Móvil or bank transfer.

The flow is three calls: quote (\`POST /v1/quotes\`), register the beneficiary (\`POST /v1/beneficiaries\`),
disburse (\`POST /v1/payouts\`). The rail is asynchronous: the usual payout answer is \`submitted\`, and the
outcome arrives by signed webhook.

Amounts are integers in minor units (BS has 2 decimals): requests carry JSON integers, responses strings.
Errors share one envelope \`{error: {type, code, message, request_id, meta?}}\`; branch on \`error.code\`.

Guides, in the service's repository: \`README.md\` (running it, a five-minute walk-through), \`docs/sandbox.md\`
(test mode and every test national id), \`docs/webhooks.md\` (payloads, signatures, retries),
\`docs/limits.md\` (caps, limit rules, usage), \`docs/treasury.md\` (ledger, credit, daily close),
\`docs/admin.md\` (admin API and CLI), \`docs/errors.md\` (every error code).`;

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
        { name: 'Sandbox', description: 'Test-mode tools: webhook receivers, and outcomes of test payments on demand' },
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
    transformObject: (document) => ('openapiObject' in document ? liftDeprecatedParameters(document.openapiObject) : document.swaggerObject),
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });
}

type OpenApiDocument = { paths?: Record<string, Record<string, { parameters?: Array<{ deprecated?: boolean; schema?: { deprecated?: boolean } }> }>> };

/**
 * The swagger plugin leaves `deprecated` of a query parameter inside its schema; tools show a
 * parameter as deprecated only when the parameter object itself says so.
 */
function liftDeprecatedParameters<T extends object>(document: T): T {
  for (const operations of Object.values((document as OpenApiDocument).paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.schema?.deprecated === true) parameter.deprecated = true;
      }
    }
  }
  return document;
}
