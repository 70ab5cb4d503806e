// Start-up time: from spawning the service to its first 200 on /health/ready, as a process manager
// restarting it after a crash sees it (refused connections until then). Measured on PostgreSQL (a
// restart: the database exists and is migrated) and on the embedded engine (a first start on an
// empty DATA_DIR, bootstrap included, then a restart of it), both as `npm start` runs it and as
// `node dist/main.js` (what a process manager would run directly, without npm's own start-up).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { SERVICE_ENTRY, startFlags } from './start-command.ts';

/** Bound of one start: beyond it the start counts as failed. */
const START_TIMEOUT_MS = 60_000;
const POLL_MS = 10;

export interface StartupFigures {
  /** Median ms to the first answer, and every sample. */
  postgres_restart_ms: number;
  postgres_restart_samples_ms: number[];
  postgres_restart_npm_start_ms: number;
  pglite_first_start_ms: number;
  pglite_first_start_samples_ms: number[];
  pglite_restart_ms: number;
  targets: { postgres_restart_ms: number; pglite_first_start_ms: number };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Spawns the command and resolves with the ms until /health/ready answers 200; then stops it. */
async function timeToReady(
  root: string,
  command: string[],
  env: Record<string, string>,
  port: number,
): Promise<number> {
  const started = performance.now();
  const child = spawn(command[0]!, command.slice(1), {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: 'ignore',
    detached: true,
  });
  try {
    while (performance.now() - started < START_TIMEOUT_MS) {
      if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited with ${child.exitCode}`);
      try {
        const response = await request(`http://127.0.0.1:${port}/health/ready`);
        await response.body.dump();
        if (response.statusCode === 200) return Math.round(performance.now() - started);
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    throw new Error(`${command.join(' ')} not ready within ${START_TIMEOUT_MS} ms`);
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // npm start runs the service in a child of its own: stop the whole process group.
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
}

export async function measureStartup(options: {
  root: string;
  databaseUrl: string;
  port: number;
  runs: number;
  log: (line: string) => void;
}): Promise<StartupFigures> {
  const node = [process.execPath, ...startFlags(options.root), SERVICE_ENTRY];
  const npmStart = ['npm', 'start', '--silent'];
  const common = { LOG_LEVEL: 'warn', RATE_LIMIT_RPS: '0' };
  const onPostgres = { ...common, DATABASE_URL: options.databaseUrl, BOOTSTRAP: 'off' };

  const postgres: number[] = [];
  for (let i = 0; i < options.runs; i += 1)
    postgres.push(await timeToReady(options.root, node, onPostgres, options.port));
  const postgresNpm: number[] = [];
  for (let i = 0; i < options.runs; i += 1)
    postgresNpm.push(await timeToReady(options.root, npmStart, onPostgres, options.port));

  const first: number[] = [];
  const restart: number[] = [];
  for (let i = 0; i < options.runs; i += 1) {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bds-bench-start-'));
    try {
      const embedded = { ...common, DATA_DIR: dataDir, DATABASE_URL: '' };
      first.push(await timeToReady(options.root, node, embedded, options.port));
      restart.push(await timeToReady(options.root, node, embedded, options.port));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  const figures: StartupFigures = {
    postgres_restart_ms: median(postgres),
    postgres_restart_samples_ms: postgres,
    postgres_restart_npm_start_ms: median(postgresNpm),
    pglite_first_start_ms: median(first),
    pglite_first_start_samples_ms: first,
    pglite_restart_ms: median(restart),
    targets: { postgres_restart_ms: 2000, pglite_first_start_ms: 4000 },
  };
  options.log(
    `startup: PostgreSQL restart ${figures.postgres_restart_ms} ms (npm start ${figures.postgres_restart_npm_start_ms} ms), ` +
      `embedded first start ${figures.pglite_first_start_ms} ms, restart ${figures.pglite_restart_ms} ms`,
  );
  return figures;
}
