// The composition of the services: every service of a process built once, from the config and
// the database, for the HTTP routes (src/app.ts) and the worker loops (src/workers/index.ts) alike.
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { systemClock, type Clock } from '../domain/clock.ts';
import { PayoutReportService } from './payout-report.ts';
import { readsOf } from './read-replica.ts';
import { BankCatalogue, LocalBankCatalogue, type BankCatalogueProvider } from '../rails/catalogue.ts';
import { RoutedBankCatalogue } from './routed-catalogue.ts';
import type { RailAdapter } from '../rails/rail.ts';
import type { ConnectorConfig } from '../rails/rails-file.ts';
import { SandboxRail } from '../rails/sandbox-rail.ts';
import { HttpBankRail } from '../rails/http-bank/adapter.ts';
import { isCallbackReceiver, RailCallbackService } from './rail-callbacks.ts';
import { AnomalyService } from './anomalies.ts';
import {
  AUTH_FAILURE_ADDRESSES_MAX,
  AUTH_FAILURE_PREFIXES_MAX,
  AuthFailureLimiter,
  FailedAuthentications,
} from './auth-failures.ts';
import { Authenticator } from './authenticator.ts';
import { BeneficiaryService } from './beneficiaries.ts';
import { ownOriginOf } from './bootstrap.ts';
import { Committer } from './commit/committer.ts';
import { EventService } from './events.ts';
import { LimitService } from './limits.ts';
import { MoneyMetrics } from './money-metrics.ts';
import { PaymentOutcomes, resolutionScheduleOf } from './commit/payment-outcomes.ts';
import { PayoutService } from './payouts.ts';
import { PayoutBatchService } from './payout-batches.ts';
import { PaymentReads } from './payment-reads.ts';
import { SenderService } from './senders.ts';
import { RailAdminService } from './rail-admin.ts';
import { RailMetrics } from './rail-metrics.ts';
import { RailRegistry } from './rail-registry.ts';
import type { RailsByMode } from '../rails/send.ts';
import { QuoteService } from './quotes.ts';
import { RailStatementService } from './rail-statements.ts';
import { RailStatementPullService } from './rail-statement-pull.ts';
import { RateService, StoredRateSource, type RateSource } from './rates.ts';
import { ReconciliationMetrics } from './reconciliation-metrics.ts';
import { openDiscrepancyAnomalies, ReconciliationService } from './reconciliation.ts';
import { SandboxSimulationService } from './sandbox-simulation.ts';
import { SandboxWebhookService } from './sandbox-webhooks.ts';
import { TenantService } from './tenants.ts';
import { TreasuryService } from './treasury.ts';
import { WebhookEndpointService } from './webhook-endpoints.ts';
import { BackgroundShare } from './background-share.ts';

/** What the services are built from. */
export interface ServiceDeps {
  config: Config;
  db: Database;
  clock?: Clock;
  rateSource?: RateSource;
  /** The rail's bank catalogue; default the shipped copy (what the sandbox rail serves). */
  catalogueProvider?: BankCatalogueProvider;
  /**
   * Replaces the connectors RAILS_FILE configures (tests pass adapters they built): rails besides the
   * sandbox, each serving the modes its configuration gives (RailAdapter.modes, default live) unless
   * the rails settings say otherwise (docs/rails.md).
   */
  connectors?: RailAdapter[];
  /** The connectors the RAILS_FILE lists, read at start (rails/rails-file.ts readRailsFile); none without one. */
  connectorConfigs?: readonly ConnectorConfig[];
  /** A live-mode rail: one more connector (none at all: live payouts fail with `no_route`). */
  liveRail?: RailAdapter;
  /** Replaces the test-mode sandbox rail (tests simulate crashes with it). */
  testRail?: RailAdapter;
  /** How a payout's answer is serialised (the HTTP layer's view): the bytes stored under its Idempotency-Key. */
}

/** The services every route may use, built once per app. */
export interface Services {
  config: Config;
  db: Database;
  /**
   * The read handle of the list routes (docs/read-replica.md): the streaming replica of
   * DATABASE_READ_URL while it is near enough, else the primary; `db` itself without a replica.
   * Never for a write, a read in a money path, or a read the client expects to follow its own write.
   */
  reads: Database;
  /** Stops the replica's lag sampling and closes its connections (the app's close). */
  closeReads(): Promise<void>;
  clock: Clock;
  authenticator: Authenticator;
  authFailures: FailedAuthentications;
  tenants: TenantService;
  rates: RateService;
  quotes: QuoteService;
  catalogue: RoutedBankCatalogue;
  beneficiaries: BeneficiaryService;
  /** The sandbox (test) and the live default rail, as a single-rail caller sees them. */
  rails: RailsByMode;
  /** The configured connectors (RAILS_FILE), each observed like the other rails. */
  connectors: RailAdapter[];
  /** Receives the connectors' signed callbacks into our inbox. */
  railCallbacks: RailCallbackService;
  /** Closes the connectors' connections (the app's close). */
  closeConnectors(): Promise<void>;
  /** Every rail of this process, its settings, routing rules and breakers. */
  railRegistry: RailRegistry;
  railMetrics: RailMetrics;
  railAdmin: RailAdminService;
  treasury: TreasuryService;
  /** Programs' default senders and customers' stored senders, set by an operator. */
  senders: SenderService;
  /** A payment as its tenant and the operator read it, and the operator's recheck. */
  payments: PaymentReads;
  /** Requests first: what background work may run beside them (services/background-share.ts). */
  background: BackgroundShare;
  committer: Committer;
  outcomes: PaymentOutcomes;
  payouts: PayoutService;
  payoutBatches: PayoutBatchService;
  payoutReports: PayoutReportService;
  limitService: LimitService;
  metrics: MoneyMetrics;
  events: EventService;
  webhookEndpoints: WebhookEndpointService;
  sandboxWebhooks: SandboxWebhookService;
  sandboxSimulation: SandboxSimulationService;
  anomalies: AnomalyService;
  reconciliation: ReconciliationService;
  railStatements: RailStatementService;
  /** The daily pull of each live connector's statement from the bank, matched by railStatements. */
  railStatementPulls: RailStatementPullService;
}

/** Batches waiting across tenants before new writes are refused with 503 `overloaded`. */
const COMMIT_QUEUE_MAX = 8192;

// long function: the wiring of every service, one entry each — a declarative table read top to bottom.
export function createServices(deps: ServiceDeps, registry: Registry, log?: FastifyBaseLogger): Services {
  const { config, db } = deps;
  const clock = deps.clock ?? systemClock;
  const nowMs = () => clock.now().getTime();
  const reads = readsOf(config, db, registry, log);
  const authenticator = new Authenticator(db, {
    nowMs,
    onPartialIndex: (max) =>
      log?.warn(
        { max },
        'more active API keys than the index of possibly valid keys holds: keys past it are refused to a client being limited',
      ),
  });
  const rates = new RateService(db, deps.rateSource ?? new StoredRateSource(db), clock, config.rateMaxAgeSeconds);
  const metrics = new MoneyMetrics(registry, db, clock);
  const { connectors, railMetrics, railRegistry, rails } = railsOf(deps, clock, metrics, registry, log);
  const catalogueOptions = { nowMs: () => clock.now().getTime(), log };
  const catalogue = new RoutedBankCatalogue(
    railRegistry,
    new BankCatalogue(deps.catalogueProvider ?? new LocalBankCatalogue(), catalogueOptions),
    catalogueOptions,
  );
  const limitService = new LimitService(db, clock);
  // Commit transactions may hold at most half of the pool: reads and the rest keep the other half.
  const background = new BackgroundShare();
  const committer = new Committer(
    db,
    { transactionsMax: Math.max(1, Math.floor(config.dbPoolSize / 2)), pendingMax: COMMIT_QUEUE_MAX },
    log,
    metrics,
    background,
  );
  metrics.watchCommitter(() => committer.depth);
  metrics.watchBackground(() => background.state);
  const outcomes = new PaymentOutcomes(clock, committer, resolutionScheduleOf(config), metrics, log);
  const beneficiaries = new BeneficiaryService(db, catalogue, reads.db);
  const idempotencyTtlMs = config.idempotencyTtlHours * 3_600_000;
  const quotes = new QuoteService(db, rates, clock, config.quoteTtlSeconds);
  const payoutSettings = {
    railTimeoutMs: config.sandboxRailTimeoutMs,
    reaperIntervalMs: config.reaperIntervalMs,
    idempotencyTtlMs,
  };
  const payouts = new PayoutService(
    db,
    clock,
    catalogue,
    railRegistry,
    outcomes,
    committer,
    limitService,
    payoutSettings,
    log,
    metrics,
  );
  return {
    config,
    db,
    reads: reads.db,
    closeReads: reads.close,
    clock,
    authenticator,
    authFailures: failedAuthenticationsOf(config, nowMs),
    tenants: new TenantService(db, (hash) => authenticator.learn(hash)),
    rates,
    quotes,
    catalogue,
    beneficiaries,
    rails,
    ...connectorServicesOf(connectors, railRegistry, registry),
    railRegistry,
    railMetrics,
    railAdmin: new RailAdminService(db, clock, railRegistry, railMetrics),
    ...paymentAdminServicesOf(db, clock, idempotencyTtlMs),
    committer,
    background,
    outcomes,
    limitService,
    metrics,
    payouts,
    payoutReports: new PayoutReportService(reads.db, clock, catalogue.sandbox),
    payoutBatches: new PayoutBatchService(
      db,
      clock,
      payouts,
      quotes,
      committer,
      limitService,
      { maxItems: config.payoutBatchMaxItems, inProgressMax: config.payoutBatchesInProgressMax },
      background,
      log,
    ),
    events: new EventService(db, clock, reads.db),
    webhookEndpoints: new WebhookEndpointService(db, clock, {
      secretOverlapHours: config.webhookSecretOverlapHours,
      ownOrigin: ownOriginOf(config),
    }),
    sandboxWebhooks: new SandboxWebhookService(db, clock),
    sandboxSimulation: new SandboxSimulationService(db, clock, outcomes),
    anomalies: new AnomalyService(db, clock, reads.db),
    reconciliation: new ReconciliationService(
      db,
      clock,
      {
        intervalS: config.reconcileIntervalS,
        fullIntervalS: config.reconcileFullIntervalS,
        executesRuns: config.role !== 'api',
      },
      new ReconciliationMetrics(registry, db, clock),
      log,
      openDiscrepancyAnomalies(metrics),
    ),
    ...railStatementServicesOf(db, clock, railRegistry, metrics),
  };
}

/** A tenant's money and payments as the operator and the tenant manage them: funding, senders, reads. */
function paymentAdminServicesOf(db: Database, clock: Clock, idempotencyTtlMs: number) {
  return {
    treasury: new TreasuryService(db, clock, { ttlMs: idempotencyTtlMs }),
    senders: new SenderService(db),
    payments: new PaymentReads(db, clock),
  };
}

/** The statement matching and the daily pull that feeds it the banks' statements. */
function railStatementServicesOf(db: Database, clock: Clock, railRegistry: RailRegistry, metrics: MoneyMetrics) {
  const railStatements = new RailStatementService(db, clock, railRegistry, metrics);
  return {
    railStatements,
    railStatementPulls: new RailStatementPullService(db, clock, railRegistry, railStatements, metrics),
  };
}

/** The rails of this process: the sandbox (or a test's), the connectors, their registry and metrics. */
function railsOf(deps: ServiceDeps, clock: Clock, metrics: MoneyMetrics, registry: Registry, log?: FastifyBaseLogger) {
  const { config, db } = deps;
  const testRail =
    deps.testRail ??
    new SandboxRail(db, clock, {
      settleDelayMs: config.sandboxSettleDelayMs,
      reverseDelayMs: config.sandboxReverseDelayMs,
    });
  const connectors =
    deps.connectors ?? (deps.connectorConfigs ?? []).map((connector) => new HttpBankRail(connector, db, clock));
  const railMetrics = new RailMetrics(registry, metrics, () => clock.now().toISOString());
  const railRegistry = railRegistryOf(deps, clock, testRail, connectors, railMetrics, log);
  const rails: RailsByMode = {
    test: railRegistry.named(testRail.name)!.adapter,
    live: railRegistry.railOf({ rail: null, mode: 'live' }),
  };
  return { connectors, railMetrics, railRegistry, rails };
}

/** The connectors (RAILS_FILE's, or a test's) as the registry observes them, their callbacks, their close. */
function connectorServicesOf(connectors: readonly RailAdapter[], railRegistry: RailRegistry, registry: Registry) {
  return {
    connectors: connectors.map((connector) => railRegistry.named(connector.name)!.adapter),
    railCallbacks: new RailCallbackService(connectors.filter(isCallbackReceiver), registry, (rail) =>
      railRegistry.answered(rail),
    ),
    closeConnectors: async () => {
      await Promise.all(
        connectors.map((connector) => (connector instanceof HttpBankRail ? connector.close() : undefined)),
      );
    },
  };
}

/** The rails of this process: the sandbox (or the test's replacement), the connectors, a live rail. */
function railRegistryOf(
  deps: ServiceDeps,
  clock: Clock,
  sandbox: RailAdapter,
  connectors: readonly RailAdapter[],
  metrics: RailMetrics,
  log?: FastifyBaseLogger,
): RailRegistry {
  const { config } = deps;
  return new RailRegistry(
    deps.db,
    clock,
    { sandbox, connectors: [...(deps.liveRail ? [deps.liveRail] : []), ...connectors] },
    {
      refusalsToOpen: config.railBreakerFailures,
      windowMs: config.railBreakerWindowMs,
      minimumCalls: config.railBreakerMinCalls,
      failureRatePercent: config.railBreakerFailureRate,
      openMs: config.railBreakerOpenMs,
      probeTimeoutMs: config.sandboxRailTimeoutMs,
      halfOpenWaitersMax: config.railBreakerHalfOpenWaiters,
    },
    metrics,
    log,
  );
}

/** The failed-authentication budgets: per client address, and per address prefix (AUTH_FAILURE_*). */
function failedAuthenticationsOf(config: Config, nowMs: () => number): FailedAuthentications {
  const windowMs = config.authFailureWindowS * 1000;
  return new FailedAuthentications(
    new AuthFailureLimiter(
      { limit: config.authFailureLimit, windowMs, addressesMax: AUTH_FAILURE_ADDRESSES_MAX },
      nowMs,
    ),
    new AuthFailureLimiter(
      { limit: config.authFailurePrefixLimit, windowMs, addressesMax: AUTH_FAILURE_PREFIXES_MAX },
      nowMs,
    ),
  );
}
