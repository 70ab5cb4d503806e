import type { FastifyBaseLogger } from 'fastify';
import type { Services } from '../services/index.ts';
import type { Config } from '../config.ts';
import { lockAndPostEntry } from '../db/commit/ledger-entry.ts';
import { fundingEntry } from '../domain/ledger.ts';
import { ownOriginOf, type BootstrapStep } from '../services/bootstrap.ts';
import { DailyCloseWorker } from './daily-close.ts';
import { IdempotencyPurge } from './idempotency-purge.ts';
import { RailInboxPurge } from './rail-inbox-purge.ts';
import { Reaper } from './reaper.ts';
import { ReportFold } from './report-fold.ts';
import { startLoop, type RunningLoop } from './run-loop.ts';
import { setWebhookEndpoint } from '../services/webhook-endpoints.ts';
import { HttpWebhookTransport } from '../webhooks/sender.ts';
import { originShareOf, WebhookDispatcher } from './webhook-dispatcher.ts';
import { RECONCILE_QUEUE_POLL_MS, ReconciliationWorker } from './reconciliation.ts';
import { RailStatementPullWorker, STATEMENT_PULL_POLL_MS } from './rail-statement-pull.ts';
import { AUDIT_ARCHIVE_POLL_MS, AuditArchiveWorker } from './audit-archive.ts';
import { AuditArchiver } from '../services/audit-archive.ts';

export interface RunningWorkers {
  /** The loops running, by name (for the startup log). */
  readonly names: readonly string[];
  stop(): Promise<void>;
}

const DAILY_CLOSE_INTERVAL_MS = 60_000;
const IDEMPOTENCY_PURGE_INTERVAL_MS = 60_000;

/** The background loops of the `worker` role: reaper, daily close, webhook dispatch, idempotency and rail inbox purges, report fold, reconciliation, rail statement pull, audit archive. */
// long function: the list of worker loops a process runs, one entry each — a declarative table.
export function startWorkers(services: Services, log: FastifyBaseLogger): RunningWorkers {
  const { config } = services;
  const reaper = new Reaper(
    services.db,
    services.clock,
    services.railRegistry,
    services.outcomes,
    {
      intervalMs: config.reaperIntervalMs,
      railTimeoutMs: config.sandboxRailTimeoutMs,
      railQueueMaxAgeMs: config.railQueueMaxAgeS * 1000,
    },
    log,
    services.metrics,
  );
  const close = new DailyCloseWorker(services.treasury, log);
  const dispatcher = webhookDispatcherOf(services, log);
  const purge = new IdempotencyPurge(services.db, services.clock);
  const inboxPurge = new RailInboxPurge(services.db, services.clock);
  const reportFold = new ReportFold(services.db, log);
  const reconciliation = new ReconciliationWorker(
    services.reconciliation,
    services.clock,
    config.reconcileIntervalS,
    log,
  );
  const statementPull = new RailStatementPullWorker(
    services.railStatementPulls,
    services.clock,
    config.railStatementPullAtMinutes,
    log,
  );
  const auditArchive = new AuditArchiveWorker(
    new AuditArchiver(services.db, services.clock, {
      retentionDays: config.auditRetentionDays,
      dir: config.auditArchiveDir,
    }),
    log,
  );
  const metrics = services.metrics;
  const loops: RunningLoop[] = [
    startLoop({
      name: 'webhook-dispatcher',
      intervalMs: config.dispatcherIntervalMs,
      runOnce: () => dispatcher.runOnce(),
      log,
      metrics,
    }),
    startLoop({ name: 'reaper', intervalMs: config.reaperIntervalMs, runOnce: () => reaper.runOnce(), log, metrics }),
    startLoop({
      name: 'daily-close',
      intervalMs: DAILY_CLOSE_INTERVAL_MS,
      runOnce: () => close.runOnce(),
      log,
      metrics,
    }),
    startLoop({
      name: 'idempotency-purge',
      intervalMs: IDEMPOTENCY_PURGE_INTERVAL_MS,
      runOnce: () => purge.runOnce(),
      log,
      metrics,
    }),
    startLoop({
      name: 'rail-inbox-purge',
      intervalMs: IDEMPOTENCY_PURGE_INTERVAL_MS,
      runOnce: () => inboxPurge.runOnce(),
      log,
      metrics,
    }),
    startLoop({
      name: 'report-fold',
      intervalMs: config.reportFoldIntervalMs,
      runOnce: () => reportFold.runOnce(),
      log,
      metrics,
    }),
    startLoop({
      name: 'reconciliation',
      intervalMs: RECONCILE_QUEUE_POLL_MS,
      runOnce: () => reconciliation.runOnce(),
      log,
      metrics,
    }),
    startLoop({
      name: 'rail-statement-pull',
      intervalMs: STATEMENT_PULL_POLL_MS,
      runOnce: () => statementPull.runOnce(),
      log,
      metrics,
    }),
    startLoop({
      name: 'audit-archive',
      intervalMs: AUDIT_ARCHIVE_POLL_MS,
      runOnce: () => auditArchive.runOnce(),
      log,
      metrics,
    }),
  ];
  return {
    names: loops.map((loop) => loop.name),
    async stop() {
      // The run under way ends at its next page (recorded as abandoned), so the loop's pass returns.
      await Promise.all([...loops.map((loop) => loop.stop()), services.reconciliation.stop()]);
      await dispatcher.close();
    },
  };
}

/**
 * The webhook dispatcher of this process, configured by the WEBHOOK_* knobs.
 * @internal Exported for its tests, not used elsewhere.
 */
export function webhookDispatcherOf(
  services: Pick<Services, 'config' | 'db' | 'clock'> & Partial<Pick<Services, 'metrics'>>,
  log?: FastifyBaseLogger,
): WebhookDispatcher {
  const { config } = services;
  const originConcurrency = originShareOf(config.webhookConcurrency);
  return new WebhookDispatcher(
    services.db,
    services.clock,
    new HttpWebhookTransport({
      timeoutMs: config.webhookTimeoutMs,
      connectionsPerOrigin: originConcurrency,
      ownOrigin: ownOriginOf(config),
    }),
    {
      timeoutMs: config.webhookTimeoutMs,
      backoffScale: config.webhookBackoffScale,
      concurrency: config.webhookConcurrency,
      originConcurrency,
      pollIntervalMs: config.dispatcherIntervalMs,
    },
    log,
    services.metrics,
  );
}

/** Sandbox money for the bootstrap tenant: 1,000,000,000.00 Bs of test-mode prefunding. */
const SANDBOX_PREFUNDING_MINOR = 100_000_000_000n;

/**
 * First-start steps contributed by features: the sandbox tenant is prefunded (test mode), and its
 * test-mode webhook endpoint is the built-in sandbox sink.
 */
export function bootstrapSteps(_config: Config): BootstrapStep[] {
  return [
    async (tx, sandbox) => {
      await lockAndPostEntry(
        tx,
        { tenantId: sandbox.tenantId, mode: 'test' },
        fundingEntry('BS', SANDBOX_PREFUNDING_MINOR),
      );
    },
    async (tx, sandbox) => {
      await setWebhookEndpoint(tx, {
        tenantId: sandbox.tenantId,
        mode: 'test',
        url: sandboxSinkUrl(sandbox.baseUrl),
        at: new Date(),
      });
    },
  ];
}

/**
 * The built-in sink's URL, the same for every tenant: the sink tells programs apart by the delivered
 * event and its signature, never by its URL.
 * @internal Exported for its tests, not used elsewhere.
 */
export function sandboxSinkUrl(baseUrl: string): string {
  return `${baseUrl}/v1/sandbox/webhooks/sink`;
}
