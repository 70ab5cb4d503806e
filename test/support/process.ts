import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:net';
import { TEST_METRICS_TOKEN } from './metrics.ts';
import { until } from './until.ts';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface ServiceProcess {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  baseUrl: string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * The service as `npm start` runs it: the bundle `npm run build` writes (scripts/test.mjs builds it
 * before the suite runs, so it is the code under test).
 */
export const SERVICE_ARGS = ['--enable-source-maps', 'dist/main.js'];

/**
 * How the service is launched: its node command directly (what `npm start` ends in), or through npm
 * itself, whose signal handling is part of what a user's process supervisor sees. `--ignore-scripts`
 * skips only the prestart build, which the suite has already done. Through npm, the child leads its own
 * process group so a test can clean up everything npm started (`killGroup`).
 */
export type Launcher = 'node' | 'npm start';

/** Starts the service as `npm start` does and waits until ready. */
export async function startService(env: Record<string, string>, port: number, readyTimeoutMs = 30_000, launcher: Launcher = 'node'): Promise<ServiceProcess & { readyMs: number }> {
  const startedAt = Date.now();
  const childEnv = { ...process.env, LOG_LEVEL: 'warn', METRICS_TOKEN: TEST_METRICS_TOKEN, ...env, PORT: String(port), HOST: '127.0.0.1' };
  const child = launcher === 'node' ? spawn(process.execPath, SERVICE_ARGS, { env: childEnv }) : spawn('npm', ['start', '--silent', '--ignore-scripts'], { env: childEnv, detached: true });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const baseUrl = `http://127.0.0.1:${port}`;
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const service: ServiceProcess = {
    child,
    baseUrl,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
  const state = await until('the service ready', async () => {
    if (child.exitCode !== null) return 'exited';
    const response = await fetch(`${baseUrl}/health/ready`).catch(() => undefined); // undefined: not listening yet
    return response?.status === 200 ? 'ready' : undefined;
  }, { timeoutMs: readyTimeoutMs - (Date.now() - startedAt), intervalMs: 100 }).catch(() => 'not ready' as const);
  if (state === 'ready') return { ...service, readyMs: Date.now() - startedAt };
  if (state === 'exited') throw new Error(`service exited with ${child.exitCode}:\n${output}`);
  await service.stop('SIGKILL');
  throw new Error(`service not ready within ${readyTimeoutMs} ms:\n${output}`);
}

/** The migration command as `npm run migrate` runs it. */
export const MIGRATE_ARGS = ['--enable-source-maps', 'dist/migrate.js'];

/** Bound of a process that is expected to exit by itself (a refused start, a migration). */
const RUN_TO_EXIT_TIMEOUT_MS = 60_000;

/** Runs the service (or `args`) until it exits by itself; SIGKILLed past `timeoutMs` (code null). */
export function runToExit(env: Record<string, string>, args: string[] = SERVICE_ARGS, timeoutMs = RUN_TO_EXIT_TIMEOUT_MS): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env } });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => {
      output += `\n[test] still running after ${timeoutMs} ms: SIGKILL\n`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
