import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Registry } from 'prom-client';
import './http/context.ts';
import { ApiError, validationFailed } from './domain/errors.ts';
import { closeObjectSchemas, findUnstorableText, nonDecimalIntegers, undeclaredInput } from './http/input-hygiene.ts';
import type { TSchema } from '@sinclair/typebox';
import { registerAuth } from './http/plugins/auth.ts';
import { registerErrorHandling } from './http/plugins/error-handler.ts';
import { clientErrorHandler, frameworkErrors, registerTransportAnswers } from './http/plugins/transport-errors.ts';
import { registerIdempotency } from './http/plugins/idempotency.ts';
import { registerLiveModeGuard } from './http/plugins/live-mode-guard.ts';
import { apiPortMetricsAccess, createMetricsRegistry, registerMetrics } from './http/plugins/metrics.ts';
import { registerRateLimits } from './http/plugins/rate-limits.ts';
import { registerOpenApi } from './http/plugins/openapi.ts';
import { adminTenantRoutes } from './http/routes/admin-tenants.ts';
import { operationsRoutes } from './http/routes/operations.ts';
import { consoleRoutes } from './http/routes/console.ts';
import { tenantRoutes } from './http/routes/tenant.ts';
import { adminRateRoutes } from './http/routes/admin-rates.ts';
import { adminPaymentRoutes } from './http/routes/admin-payments.ts';
import { adminAuditRoutes } from './http/routes/admin-audit.ts';
import { adminAnomalyRoutes } from './http/routes/admin-anomalies.ts';
import { quoteRoutes } from './http/routes/quotes.ts';
import { bankRoutes } from './http/routes/banks.ts';
import { beneficiaryRoutes } from './http/routes/beneficiaries.ts';
import { adminTreasuryRoutes } from './http/routes/admin-treasury.ts';
import { paymentRoutes } from './http/routes/payments.ts';
import { statementRoutes } from './http/routes/statement.ts';
import { reportRoutes } from './http/routes/reports.ts';
import { payoutRoutes } from './http/routes/payouts.ts';
import { payoutBatchRoutes } from './http/routes/payout-batches.ts';
import { batchItemBudgetOf, registerBatchItemBudget } from './http/batch-item-budget.ts';
import { treasuryRoutes } from './http/routes/treasury.ts';
import { limitRoutes } from './http/routes/limits.ts';
import type { App } from './http/types.ts';
import { createServices, type ServiceDeps, type Services } from './services/index.ts';
import { validatorCompiler } from './http/validation.ts';
import { lazyCompilers, type LazyCompilers } from './http/schema-compilers.ts';
import { completeRouteContract } from './http/route-contract.ts';
import { adminWebhookRoutes } from './http/routes/admin-webhooks.ts';
import { eventRoutes } from './http/routes/events.ts';
import { sandboxWebhookRoutes } from './http/routes/sandbox-webhooks.ts';
import { sandboxPaymentRoutes } from './http/routes/sandbox-payments.ts';
import { sandboxRailRoutes } from './http/routes/sandbox-rail.ts';
import { adminReconciliationRoutes } from './http/routes/admin-reconciliation.ts';
import { CallbackBudget } from './http/callback-budget.ts';
import { railCallbackRoutes } from './http/routes/rail-callbacks.ts';
import { adminRailStatementRoutes } from './http/routes/admin-rail-statements.ts';
import { adminRailRoutes } from './http/routes/admin-rails.ts';
import type { BackgroundShare } from './services/background-share.ts';

/** @internal Exported for its tests, not used elsewhere. */
export const BODY_LIMIT_BYTES = 64 * 1024;

export interface AppDeps extends ServiceDeps {
  /** Fastify logger options; `false` in tests. */
  logger?: FastifyServerOptions['logger'];
  metrics?: Registry;
  /**
   * What the HTTP server answers: `api` (default) every route; `operations` only the health checks
   * and the metrics, for a ROLE=worker process, which has no API but must still be probed and scraped.
   */
  surface?: HttpSurface;
}

type HttpSurface = 'api' | 'operations';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: {
      paths: [
        'req.headers["x-api-key"]',
        'req.headers.authorization',
        'req.headers.cookie',
        '*.apiKey',
        '*.key',
        '*.secret',
        '*.signingSecret',
        '*.accountNumber',
        '*.account_number',
        '*.phone',
        '*.password',
      ],
      censor: '[redacted]',
    },
  };
}

export async function buildApp(
  deps: AppDeps,
): Promise<{ app: App; services: Services; warmCompilers: LazyCompilers['warm'] }> {
  const compilers = lazyCompilers(validatorCompiler);
  const app = createFastify(deps, compilers);
  app.setValidatorCompiler(compilers.validatorCompiler);
  registerTransportAnswers(app, BODY_LIMIT_BYTES);
  refuseWhileClosing(app);

  const registry = deps.metrics ?? createMetricsRegistry();
  const services = createServices(deps, registry, app.log);
  app.addHook('onClose', () => services.closeConnectors());
  app.addHook('onClose', () => services.closeReads());

  registerJsonBodies(app);
  registerInputHygiene(app);
  countRequestsForTheBackground(app, services.background);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...(route.config ?? {}), public: true };
    closeObjectSchemas(route.schema?.body);
    closeObjectSchemas(route.schema?.querystring);
    closeObjectSchemas(route.schema?.params);
    completeRouteContract(route);
  });

  registerErrorHandling(app);
  if (deps.surface === 'operations') {
    await registerRateLimits(app, deps.config);
    registerMetrics(app, registry);
    await operationsRoutes(app, deps.db, registry, { document: false, metrics: apiPortMetricsAccess(deps.config) });
    return { app, services, warmCompilers: compilers.warm };
  }
  registerAuth(app, services.authenticator, services.authFailures);
  // Before the Idempotency-Key layer: a refused live change claims no key, a batch over its budget costs no fingerprint.
  registerLiveModeGuard(app);
  registerBatchItemBudget(app, batchItemBudgetOf(deps.config, services.clock), deps.config.payoutBatchMaxItems);
  registerIdempotency(app, deps.db, services.clock, deps.config);
  // After the Idempotency-Key layer has taken the body's fingerprint: a background request's
  // validation and its handler each start on a turn of the background share.
  sliceBackgroundRequests(app, services.background);
  // Before every route, /docs included: the limits attach to routes as they are added.
  await registerRateLimits(app, deps.config);
  await registerOpenApi(app);
  registerMetrics(app, registry);
  await registerApiRoutes(app, deps, services, registry);
  return { app, services, warmCompilers: compilers.warm };
}

function createFastify(deps: AppDeps, compilers: LazyCompilers): App {
  return Fastify({
    schemaController: { compilersFactory: compilers.compilersFactory },
    logger: deps.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    connectionTimeout: 30_000,
    requestTimeout: 30_000,
    keepAliveTimeout: 75_000,
    pluginTimeout: 30_000,
    requestIdHeader: false,
    // Behind a proxy every client would share the proxy's address (and its auth-failure budget).
    trustProxy: deps.config.trustProxy,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_PATTERN.test(given)
        ? given
        : `req_${randomUUID().replace(/-/g, '')}`;
    },
    ajv: { customOptions: {} },
    frameworkErrors,
    clientErrorHandler,
    // A request without Host is answered by our hook, in the envelope (registerTransportAnswers).
    http: { requireHostHeader: false },
    // Our own answer while closing (refuseWhileClosing), in the envelope with Retry-After.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;
}

/**
 * During a graceful shutdown a request still arriving on a kept-alive connection is refused
 * before any work, so the client retries it on another process. A request in flight when the
 * shutdown began is answered with `connection: close`: the server's close ends only idle connections
 * once, and a connection that became idle afterwards would otherwise hold the close for the whole
 * keep-alive (75 s), past the shutdown's grace.
 */
function refuseWhileClosing(app: App): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    throw new ApiError(
      'service_unavailable',
      'This process is shutting down; nothing was done. Retry (with the same Idempotency-Key).',
    );
  });
}

/** Every request but a background one counts, from its arrival until its connection is done with it. */
function countRequestsForTheBackground(app: App, background: BackgroundShare): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.background === true) return;
    background.requestStarted();
    // 'close' is emitted once, whether the answer was sent or the client went away.
    reply.raw.once('close', () => background.requestEnded());
  });
}

/**
 * A background request (a payout batch: parsing, fingerprinting and validating 1,000 items is about
 * 25 ms of this thread) yields between those steps to the requests that arrived meanwhile, as its
 * handler does between slices of items.
 */
function sliceBackgroundRequests(app: App, background: BackgroundShare): void {
  const turn = async (request: FastifyRequest) => {
    if (request.routeOptions.config.background === true) await background.turn();
  };
  app.addHook('preValidation', turn);
  app.addHook('preHandler', turn);
}

/** Only JSON bodies; an empty body is "no body" (POSTs such as retry take none). */
function registerJsonBodies(app: App): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(new ApiError('invalid_json', 'The request body is not valid JSON.'), undefined);
    }
    const unstorable = findUnstorableText(parsed, '');
    if (unstorable) return done(validationFailed([{ ...unstorable, field: unstorable.field || 'body' }]), undefined);
    done(null, parsed);
  });
}

/** Text the database cannot store, integers not written in decimal, and input no schema declares are refused before validation. */
function registerInputHygiene(app: App): void {
  app.addHook('preValidation', async (request) => {
    const schema = request.routeOptions.schema;
    const errors = [
      ...[findUnstorableText(request.params, 'params'), findUnstorableText(request.query, 'query')].filter(
        (e) => e !== undefined,
      ),
      ...nonDecimalIntegers(schema?.querystring as TSchema | undefined, request.query),
      ...nonDecimalIntegers(schema?.params as TSchema | undefined, request.params),
    ];
    if (request.routeOptions.config.public !== true)
      errors.push(...undeclaredInput(schema, request.query, request.body));
    if (errors.length > 0)
      throw validationFailed(errors.map((e) => ({ ...e, field: e.field.replace(/^(params|query)\./, '') })));
  });
}

/** Every route of the API, in the order the OpenAPI document lists them. */
async function registerApiRoutes(app: App, deps: AppDeps, services: Services, registry: Registry): Promise<void> {
  await operationsRoutes(app, deps.db, registry, { metrics: apiPortMetricsAccess(deps.config) });
  await consoleRoutes(app);
  await tenantRoutes(app);
  await adminTenantRoutes(app, services.tenants);
  await adminRateRoutes(app, services.rates);
  await adminPaymentRoutes(app, services.payments);
  await adminAuditRoutes(app, services.reads);
  await adminAnomalyRoutes(app, services.anomalies);
  await quoteRoutes(app, services.quotes);
  await beneficiaryRoutes(app, services.beneficiaries);
  await bankRoutes(app, services.catalogue);
  await payoutRoutes(app, services.payouts);
  await payoutBatchRoutes(app, services.payoutBatches, deps.config.payoutBatchMaxItems);
  await paymentRoutes(app, services.payments);
  await statementRoutes(app, services.reads);
  await reportRoutes(app, services.payoutReports);
  await treasuryRoutes(app, services.treasury);
  await adminTreasuryRoutes(app, services.treasury, services.senders);
  await eventRoutes(app, services.events);
  await adminWebhookRoutes(app, services.webhookEndpoints);
  await sandboxWebhookRoutes(app, services.sandboxWebhooks);
  await sandboxPaymentRoutes(app, services.sandboxSimulation);
  await sandboxRailRoutes(app, services.sandboxSimulation);
  await limitRoutes(app, services.limitService);
  await adminReconciliationRoutes(app, services.reconciliation);
  await railCallbackRoutes(
    app,
    services.railCallbacks,
    new CallbackBudget(deps.config.railCallbackRps, deps.config.publicRateLimitRps, services.connectors.length, () =>
      Date.now(),
    ),
  );
  await adminRailStatementRoutes(app, services.railStatements, services.railStatementPulls);
  await adminRailRoutes(app, services.railAdmin);
}
