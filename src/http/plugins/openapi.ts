import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { componentSchemas } from '../schemas/common.ts';
import { WEBHOOK_DELIVERY_HEADERS } from '../schemas/webhooks.ts';

const API_DESCRIPTION = `Deliver Venezuelan bolivares (BS) to a beneficiary's bank account by Pago Móvil or bank transfer.

The flow is three calls: quote (\`POST /v1/quotes\`), register the beneficiary (\`POST /v1/beneficiaries\`),
disburse (\`POST /v1/payouts\`). The rail is asynchronous: the usual payout answer is \`submitted\`, and the
outcome arrives by signed webhook.

Amounts are integers in minor units (BS has 2 decimals): requests carry JSON integers, responses strings.
Errors share one envelope \`{error: {type, code, message, request_id, meta?}}\`; branch on \`error.code\`.

Guides, in the service's repository: \`README.md\` (running it, a five-minute walk-through), \`docs/sandbox.md\`
(test mode and every test national id), \`docs/webhooks.md\` (payloads, signatures, retries),
\`docs/limits.md\` (caps, limit rules, usage), \`docs/treasury.md\` (ledger, credit, daily close),
\`docs/admin.md\` (admin API and CLI), \`docs/errors.md\` (every error code).`;

/**
 * Relative: the service that serves the document (GET /docs/json), http://localhost:3000 when run
 * locally, behind TLS in production. Not internal (`x-internal`): it is the integrators' API.
 */
const SERVERS = [
  {
    url: '/',
    description: 'The service that serves this document (http://localhost:3000 when run with npm start)',
    'x-internal': false,
  },
];

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
        // No public licence: the service is proprietary (package.json is private).
        license: { name: 'Proprietary: all rights reserved' },
      },
      servers: SERVERS,
      tags: [
        { name: 'Tenant', description: 'Who the API key belongs to' },
        { name: 'Quotes', description: 'Fix the delivered amount, the rate and the fee' },
        { name: 'Beneficiaries', description: 'Who receives the bolivares' },
        { name: 'Payouts', description: 'Move money' },
        { name: 'Payments', description: 'What happened afterwards: payment state and statement' },
        { name: 'Treasury', description: 'Prefunding balance, credit and limit usage' },
        {
          name: 'Reports',
          description:
            'Aggregates over time for dashboards: payouts by status, bank and instrument, settlement times, webhooks, treasury',
        },
        { name: 'Events', description: 'Outcome events and their webhook deliveries' },
        { name: 'Sandbox', description: 'Test-mode tools: webhook receivers, and outcomes of test payments on demand' },
        { name: 'Rails', description: "Called by bank gateways, not integrators: a connector's signed callbacks" },
        {
          name: 'Admin',
          description: 'Platform administration (platform key, scope platform:admin); outside the public contract',
        },
        { name: 'Operations', description: 'Health and metrics' },
      ],
      components: {
        securitySchemes: {
          ApiKeyAuth: {
            type: 'apiKey',
            in: 'header',
            name: 'x-api-key',
            description: 'bsk_test_…, bsk_live_… or bsk_platform_…',
          },
          MetricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, for GET /metrics only' },
        },
      },
      security: [{ ApiKeyAuth: [] }],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
    transformObject: (document) =>
      'openapiObject' in document
        ? shareErrorResponses(
            shareResponseHeaders(describeDeliveryHeaders(liftDeprecatedParameters(document.openapiObject))),
          )
        : document.swaggerObject,
  });
  await registerDocsPage(app);
}

/** The interactive page at /docs: its own scope, so that the page's headers go on its answers only. */
async function registerDocsPage(app: FastifyInstance): Promise<void> {
  await app.register(async (docs) => {
    docs.addHook('onRequest', async (_request, reply) => {
      reply
        .header('content-security-policy', DOCS_CSP)
        .header('x-frame-options', 'DENY')
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer');
    });
    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      // BaseLayout: without the top bar, whose logo is an inline <style> the CSP refuses (and whose
      // box loads other documents). "Try it out" calls the document's server, this origin.
      uiConfig: { deepLinking: true, layout: 'BaseLayout' },
    });
  });
}

/**
 * The Swagger UI at /docs runs only its own files, reads the document and tries calls on this origin
 * only, and may not be framed (a framed "Try it out" with a pasted key is a clickjacking target).
 * @internal Exported for its tests, not used elsewhere.
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

type OpenApiDocument = {
  paths?: Record<
    string,
    Record<string, { parameters?: Array<{ deprecated?: boolean; schema?: { deprecated?: boolean } }> }>
  >;
};

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

type Header = Record<string, unknown>;
type Response = {
  headers?: Record<string, Header>;
  content?: Record<string, { schema?: { allOf?: Array<{ properties?: any }> } }>;
};
type Responses = Record<string, Response>;
type HeaderDocument = {
  paths?: Record<string, Record<string, { responses?: Responses; callbacks?: unknown }>>;
  components?: { headers?: Record<string, Header>; responses?: Record<string, Response> };
};

/**
 * Response headers are the same on most answers (x-request-id on all of them): each one defined
 * once under `components.headers` and referenced, instead of repeated in every response.
 */
function shareResponseHeaders<T extends object>(document: T): T {
  const doc = document as HeaderDocument;
  const responses = Object.values(doc.paths ?? {}).flatMap((operations) =>
    Object.values(operations).flatMap((operation) => Object.values(operation.responses ?? {})),
  );
  const definitions = new Map<string, Set<string>>();
  for (const response of responses) {
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      definitions.set(name, (definitions.get(name) ?? new Set()).add(JSON.stringify(header)));
    }
  }
  const shared = [...definitions].filter(([, forms]) => forms.size === 1).map(([name]) => name);
  if (shared.length === 0) return document;
  doc.components ??= {};
  doc.components.headers ??= {};
  for (const response of responses) {
    for (const name of shared) {
      const header = response.headers?.[name];
      if (header === undefined) continue;
      doc.components.headers[name] = header;
      response.headers![name] = { $ref: `#/components/headers/${name}` };
    }
  }
  return document;
}

/** The codes an error answer narrows `error.code` to (schemas/common.ts `errorAnswer`), if it is one. */
function errorCodesOf(response: Response): string[] | undefined {
  const codes = response.content?.['application/json']?.schema?.allOf?.[1]?.properties?.error?.properties?.code?.enum;
  return Array.isArray(codes) ? codes : undefined;
}

const pascal = (code: string) =>
  code.replace(/(^|_)([a-z])/g, (_, _sep: string, letter: string) => letter.toUpperCase());

/**
 * Most operations give the same error answers (the 401, the 429, the 5xx): an answer given alike by
 * several operations is defined once under `components.responses`, named after its codes.
 */
function shareErrorResponses<T extends object>(document: T): T {
  const doc = document as HeaderDocument;
  const uses = new Map<string, Array<{ responses: Responses; status: string; codes: string[] }>>();
  for (const operations of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const codes = errorCodesOf(response);
        if (codes === undefined) continue;
        const key = JSON.stringify(response);
        uses.set(key, [...(uses.get(key) ?? []), { responses: operation.responses!, status, codes }]);
      }
    }
  }
  const names = new Set<string>();
  // The most used form of an answer gets the plain name (the keyed routes' one, with rate-limit headers).
  for (const [key, places] of [...uses].sort(([, a], [, b]) => b.length - a.length)) {
    if (places.length < 2) continue;
    const base = places[0]!.codes.map(pascal).join('Or');
    let name = base;
    for (let n = 2; names.has(name); n += 1) name = `${base}${n}`;
    names.add(name);
    doc.components ??= {};
    doc.components.responses ??= {};
    doc.components.responses[name] = JSON.parse(key) as Response;
    for (const { responses, status } of places)
      (responses as Record<string, unknown>)[status] = { $ref: `#/components/responses/${name}` };
  }
  return document;
}

type CallbackDocument = {
  paths?: Record<
    string,
    Record<string, { callbacks?: Record<string, Record<string, Record<string, { parameters?: unknown[] }>>> }>
  >;
};

/**
 * Every callback is a webhook delivery, with the delivery headers (the swagger plugin passes only a
 * callback's body and responses through).
 */
function describeDeliveryHeaders<T extends object>(document: T): T {
  for (const operations of Object.values((document as CallbackDocument).paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const expressions of Object.values(operation.callbacks ?? {})) {
        for (const methods of Object.values(expressions)) {
          for (const callback of Object.values(methods)) {
            callback.parameters = Object.entries(WEBHOOK_DELIVERY_HEADERS).map(([name, header]) => ({
              name,
              in: 'header',
              required: true,
              ...header,
            }));
          }
        }
      }
    }
  }
  return document;
}
