import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { pino, type LoggerOptions } from 'pino';
import { buildApp, loggerOptions } from './app.ts';
import { buildMetricsServer } from './http/metrics-server.ts';
import type { App } from './http/types.ts';
import { createMetricsRegistry } from './http/plugins/metrics.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { readRailsFile, type ConnectorConfig } from './rails/rails-file.ts';
import { DatabaseUnreachableError, describeDatabase, withDatabaseWait } from './db/connect-wait.ts';
import { migrate } from './db/migrate.ts';
import { describeHolder, type LockHolder } from './db/data-dir-lock.ts';
import type { Database } from './db/database.ts';
import { openDatabase } from './db/open.ts';
import { bootstrapIfEmpty, printBootstrap, syncPlatformKey, type BootstrapResult } from './services/bootstrap.ts';
import { bootstrapSteps, startWorkers } from './workers/index.ts';

/** The settings and the connectors of the rails file; a bad one stops the start (exit 78, EX_CONFIG). */
function readConfig(): { config: Config; connectors: ConnectorConfig[] } {
  try {
    const config = loadConfig();
    return { config, connectors: readRailsFile(config.railsFile, process.env) };
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

async function main(): Promise<void> {
  const startedAtMs = performance.now();
  const { config, connectors } = readConfig();
  const { db, staleLock, bootstrap, revokedBootstrapKeys } = await openAndMigrate(config);

  // A worker serves no API, but it is probed and scraped like any process: its port answers the
  // health checks and /metrics only.
  const surface = config.role === 'worker' ? 'operations' : 'api';
  const metrics = createMetricsRegistry();
  const { app, services, warmCompilers } = await buildApp({
    config,
    connectorConfigs: connectors,
    db,
    logger: loggerOptions(config.logLevel),
    surface,
    metrics,
  });
  // The internal listener shares the registry: the same metrics, on a port the operator keeps private.
  const metricsServer =
    config.metricsPort === undefined
      ? undefined
      : await buildMetricsServer(config, metrics, loggerOptions(config.logLevel));
  if (staleLock) {
    app.log.warn(
      {
        lockFile: staleLock.lockPath,
        previousPid: staleLock.previous.pid,
        previousStartedAt: staleLock.previous.startedAt,
      },
      `took over the DATA_DIR lock of ${describeHolder(staleLock.previous)}, which is no longer running`,
    );
  }
  if (revokedBootstrapKeys > 0) {
    app.log.warn(
      { revoked: revokedBootstrapKeys },
      'PLATFORM_API_KEY is set: revoked the platform key of the first start (platformApiKey in bootstrap.json no longer works)',
    );
  }
  const workers = config.role === 'api' ? undefined : startWorkers(services, app.log);

  await listen(app, config.port, config.host, 'HOST');
  if (metricsServer) await listen(metricsServer, config.metricsPort!, config.metricsHost, 'METRICS_HOST');
  logStarted(app, metricsServer, {
    config,
    connectors,
    engine: db.engine,
    surface,
    workers: workers?.names ?? [],
    startedAtMs,
  });
  if (bootstrap) printBootstrap(bootstrap);
  // Schemas compile on first use; what is left compiles now, between requests.
  const warming = new AbortController();
  void warmCompilers(warming.signal);
  stopOnSignals(config, app.log, async () => {
    warming.abort();
    await app.close();
    await metricsServer?.close();
    await workers?.stop();
    await db.close();
  });
}

/** Opens the database, then migrates it (and syncs the platform key, and bootstraps an empty one) at first contact. */
interface StaleLock {
  previous: LockHolder;
  lockPath: string;
}

async function openAndMigrate(
  config: Config,
): Promise<{ db: Database; staleLock?: StaleLock; bootstrap?: BootstrapResult; revokedBootstrapKeys: number }> {
  let staleLock: StaleLock | undefined;
  const db = await openDatabase(config, {
    purpose: `npm start, ROLE=${config.role}`,
    onStaleLock: (previous, lockPath) => (staleLock = { previous, lockPath }),
  });
  let bootstrap: BootstrapResult | undefined;
  let revokedBootstrapKeys = 0;
  const firstContact = () =>
    migrate(db, async () => {
      ({ revokedBootstrapKeys } = await syncPlatformKey(db, config.platformApiKey));
      // Only a process serving the API bootstraps: the sandbox tenant's curl and webhook endpoint name
      // this process's own port, where a worker answers no API route.
      if (config.bootstrap && config.role !== 'worker')
        bootstrap = await bootstrapIfEmpty(db, config, bootstrapSteps(config));
    });
  if (config.databaseUrl === undefined) await firstContact();
  else await waitForPostgres(firstContact, config, config.databaseUrl);
  return { db, staleLock, bootstrap, revokedBootstrapKeys };
}

/** The startup line: what this process answers on, and how long it took to get there. */
function logStarted(
  app: App,
  metricsServer: { server: { address(): AddressInfo | string | null } } | undefined,
  started: {
    config: Config;
    connectors: readonly ConnectorConfig[];
    engine: string;
    surface: 'api' | 'operations';
    workers: readonly string[];
    startedAtMs: number;
  },
): void {
  const { config, surface } = started;
  const address = listeningOn(app.server);
  const metricsAt = [
    metricsServer && `${listeningOn(metricsServer.server)}/metrics`,
    config.metricsToken && `${address}/metrics`,
  ]
    .filter(Boolean)
    .join(' and ');
  const metricsOn =
    metricsAt === ''
      ? 'not served: set METRICS_TOKEN or METRICS_PORT'
      : `${metricsAt}${config.metricsToken ? ' (Authorization: Bearer METRICS_TOKEN)' : ''}`;
  app.log.info(
    {
      role: config.role,
      engine: started.engine,
      // What this process really answers on (PORT=0 picks a free port: this is the one it got).
      listening: address,
      http: surface === 'api' ? 'API, /health/live, /health/ready' : '/health/live, /health/ready (no API)',
      metrics: metricsOn,
      workers: started.workers,
      // The configured connectors (never their keys); the first serving live carries live payouts.
      connectors: started.connectors.map((connector) => ({
        name: connector.name,
        modes: connector.modes,
        gateway: new URL(connector.baseUrl).origin,
      })),
      startup_ms: Math.round(performance.now() - started.startedAtMs),
    },
    'bolivar disbursement service started',
  );
}

/** SIGTERM or SIGINT: stop taking requests, finish in-flight work, exit; past SHUTDOWN_GRACE_MS, exit anyway. */
function stopOnSignals(config: Config, log: FastifyBaseLogger, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: no new requests, finishing in-flight work');
    const force = setTimeout(() => {
      log.error('shutdown grace period over; exiting');
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    try {
      await stop();
      process.exit(0);
    } catch (error) {
      log.error({ err: error }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/**
 * A start while PostgreSQL is unreachable or restarting waits for it (DB_CONNECT_WAIT_S), logging
 * each attempt, instead of giving up at the first refused connection.
 */
async function waitForPostgres(
  firstContact: () => Promise<unknown>,
  config: Config,
  databaseUrl: string,
): Promise<void> {
  const log = pino(loggerOptions(config.logLevel) as LoggerOptions);
  const database = describeDatabase(databaseUrl);
  await withDatabaseWait(firstContact, {
    waitS: config.dbConnectWaitS,
    database,
    onRetry: ({ attempt, error, retryInMs, waitedMs }) =>
      log.warn(
        { database, attempt, error, retry_in_ms: retryInMs, waited_ms: waitedMs, wait_max_s: config.dbConnectWaitS },
        'waiting for PostgreSQL',
      ),
  });
}

/** Listens, or throws a ConfigError naming the host variable when the address is not this machine's. */
async function listen(
  server: { listen(options: { port: number; host: string }): Promise<string> },
  port: number,
  host: string,
  variable: 'HOST' | 'METRICS_HOST',
): Promise<void> {
  try {
    await server.listen({ port, host });
  } catch (error) {
    // A name that does not resolve, or an address this machine does not have, is a HOST mistake.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EADDRNOTAVAIL') {
      throw new ConfigError(
        variable,
        'an address of this machine, or a name resolving to one',
        host,
        `Listening failed: ${(error as Error).message}.`,
      );
    }
    throw error;
  }
}

function listeningOn(server: { address(): AddressInfo | string | null }): string {
  const bound = server.address();
  return typeof bound === 'object' && bound
    ? `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`
    : String(bound);
}

main().catch((error) => {
  process.stderr.write(`Failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  // EX_CONFIG for a configuration mistake, EX_UNAVAILABLE for a database that never answered.
  process.exit(error instanceof ConfigError ? 78 : error instanceof DatabaseUnreachableError ? 69 : 1);
});
