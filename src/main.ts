import { buildApp, loggerOptions } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { migrate } from './db/migrate.ts';
import { describeHolder, type LockHolder } from './db/data-dir-lock.ts';
import { openDatabase } from './db/open.ts';
import { bootstrapIfEmpty, printBootstrap, syncPlatformKey, type BootstrapResult } from './services/bootstrap.ts';
import { bootstrapSteps, startWorkers } from './workers/index.ts';

function readConfig(): Config {
  try {
    return loadConfig();
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
  const config = readConfig();
  let staleLock: { previous: LockHolder; lockPath: string } | undefined;
  const db = await openDatabase(config, {
    purpose: `npm start, ROLE=${config.role}`,
    onStaleLock: (previous, lockPath) => (staleLock = { previous, lockPath }),
  });
  let bootstrap: BootstrapResult | undefined;
  let revokedBootstrapKeys = 0;
  await migrate(db, async () => {
    ({ revokedBootstrapKeys } = await syncPlatformKey(db, config.platformApiKey));
    // Only a process serving the API bootstraps: the sandbox tenant's curl and webhook endpoint name
    // this process's own port, where a worker answers no API route.
    if (config.bootstrap && config.role !== 'worker') bootstrap = await bootstrapIfEmpty(db, config, bootstrapSteps(config));
  });

  // A worker serves no API, but it is probed and scraped like any process: its port answers the
  // health checks and /metrics only.
  const surface = config.role === 'worker' ? 'operations' : 'api';
  const { app, services, warmCompilers } = await buildApp({ config, db, logger: loggerOptions(config.logLevel), surface });
  if (staleLock) {
    app.log.warn(
      { lockFile: staleLock.lockPath, previousPid: staleLock.previous.pid, previousStartedAt: staleLock.previous.startedAt },
      `took over the DATA_DIR lock of ${describeHolder(staleLock.previous)}, which is no longer running`,
    );
  }
  if (revokedBootstrapKeys > 0) {
    app.log.warn({ revoked: revokedBootstrapKeys }, 'PLATFORM_API_KEY is set: revoked the platform key of the first start (platformApiKey in bootstrap.json no longer works)');
  }
  const workers = config.role === 'api' ? undefined : startWorkers(services, app.log);

  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    // A name that does not resolve, or an address this machine does not have, is a HOST mistake.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EADDRNOTAVAIL') {
      throw new ConfigError('HOST', 'an address of this machine, or a name resolving to one', config.host, `Listening failed: ${(error as Error).message}.`);
    }
    throw error;
  }
  const bound = app.server.address();
  const address = typeof bound === 'object' && bound ? `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}` : String(bound);
  app.log.info(
    {
      role: config.role,
      engine: db.engine,
      // What this process really answers on (PORT=0 picks a free port: this is the one it got).
      listening: address,
      http: surface === 'api' ? 'API, /health/live, /health/ready, /metrics' : '/health/live, /health/ready, /metrics (no API)',
      workers: workers?.names ?? [],
      startup_ms: Math.round(performance.now() - startedAtMs),
    },
    'bolivar disbursement service started',
  );
  if (bootstrap) printBootstrap(bootstrap);
  // Schemas compile on first use; what is left compiles now, between requests.
  const warming = new AbortController();
  void warmCompilers(warming.signal);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    warming.abort();
    app.log.info({ signal }, 'shutting down: no new requests, finishing in-flight work');
    const force = setTimeout(() => {
      app.log.error('shutdown grace period over; exiting');
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    try {
      await app.close();
      await workers?.stop();
      await db.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error) => {
  process.stderr.write(`Failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(error instanceof ConfigError ? 78 : 1); // EX_CONFIG
});
