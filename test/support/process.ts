import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TEST_METRICS_TOKEN } from './metrics.ts';
import { until } from './until.ts';

/**
 * Ports handed out by `freePort`, one file per port naming the test process that holds it, shared by
 * every test process of the suite (they run in parallel). A port the kernel calls free is free only
 * until something binds it: between `freePort` closing it and the service binding it, another test
 * process's `freePort` could be given the same one, and its service's /health/ready would then answer
 * for ours. A reservation here keeps each port to one test process for that process's life (and
 * so across suites that the same user runs at once on this machine).
 */
const RESERVATIONS_DIR = path.join(tmpdir(), `bds-test-ports-${process.getuid?.() ?? 'user'}`);
/** Bound of the ports tried before `freePort` gives up (each one the kernel's, then reserved). */
const PORT_PICK_ATTEMPTS_MAX = 50;
const reservedHere = new Set<string>();

process.once('exit', () => {
  for (const file of reservedHere) rmSync(file, { force: true });
});

function kernelFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Reserves `port` for this test process; false when another test process holds it, or held it. */
function reserve(port: number): boolean {
  const file = path.join(RESERVATIONS_DIR, String(port));
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    reservedHere.add(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    let holder: number;
    try {
      holder = Number(readFileSync(file, 'utf8'));
    } catch {
      return false; // released meanwhile: another pick will do
    }
    // Left by a test process that died: cleared for a later pick, not taken over here (two processes
    // taking it over at once could both believe they hold it). A file being written reads empty.
    if (holder && !alive(holder)) rmSync(file, { force: true });
    return false;
  }
}

/** A port no process listens on and no other test process of the suite was given. */
export async function freePort(): Promise<number> {
  mkdirSync(RESERVATIONS_DIR, { recursive: true });
  for (let attempt = 0; attempt < PORT_PICK_ATTEMPTS_MAX; attempt += 1) {
    const port = await kernelFreePort();
    if (reserve(port)) return port;
  }
  throw new Error(`no free port in ${PORT_PICK_ATTEMPTS_MAX} tries (reservations in ${RESERVATIONS_DIR})`);
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

/** The port a service was started on was bound by another process first (one that did not reserve it). */
class PortTakenError extends Error {}

/**
 * Bound of the starts on another port when the one picked was bound first by a process that does not
 * go through `freePort` (a server a test binds to port 0, an outgoing connection's local port).
 */
const PORT_TAKEN_RESTARTS_MAX = 3;
/** Bound of one readiness probe, so that a listener that never answers does not stall the wait. */
const READY_PROBE_TIMEOUT_MS = 2_000;

/**
 * Starts the service as `npm start` does and waits until ready: on `port`, or, without one, on a port
 * of its own from `freePort` (another one if that is taken before the service binds it).
 */
export async function startService(
  env: Record<string, string>,
  port?: number,
  readyTimeoutMs = 30_000,
  launcher: Launcher = 'node',
): Promise<ServiceProcess & { readyMs: number }> {
  if (port !== undefined) return launch(env, port, readyTimeoutMs, launcher);
  for (let restart = 0; ; restart += 1) {
    try {
      return await launch(env, await freePort(), readyTimeoutMs, launcher);
    } catch (error) {
      if (!(error instanceof PortTakenError) || restart >= PORT_TAKEN_RESTARTS_MAX) throw error;
    }
  }
}

async function launch(
  env: Record<string, string>,
  port: number,
  readyTimeoutMs: number,
  launcher: Launcher,
): Promise<ServiceProcess & { readyMs: number }> {
  const startedAt = Date.now();
  const childEnv = {
    ...process.env,
    LOG_LEVEL: 'warn',
    METRICS_TOKEN: TEST_METRICS_TOKEN,
    ...env,
    PORT: String(port),
    HOST: '127.0.0.1',
  };
  const child =
    launcher === 'node'
      ? spawn(process.execPath, SERVICE_ARGS, { env: childEnv })
      : spawn('npm', ['start', '--silent', '--ignore-scripts'], { env: childEnv, detached: true });
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
  const state = await until(
    'the service ready',
    async () => {
      if (child.exitCode !== null) return 'exited';
      // undefined: not listening yet, or something else holds the port and does not answer.
      const response = await fetch(`${baseUrl}/health/ready`, {
        signal: AbortSignal.timeout(READY_PROBE_TIMEOUT_MS),
      }).catch(() => undefined);
      return response?.status === 200 ? 'ready' : undefined;
    },
    { timeoutMs: readyTimeoutMs - (Date.now() - startedAt), intervalMs: 100 },
  ).catch(() => 'not ready' as const);
  if (state === 'ready') return { ...service, readyMs: Date.now() - startedAt };
  if (state === 'exited')
    throw new (/EADDRINUSE/.test(output) ? PortTakenError : Error)(`service exited with ${child.exitCode}:\n${output}`);
  await service.stop('SIGKILL');
  throw new Error(`service not ready within ${readyTimeoutMs} ms:\n${output}`);
}

/** The migration command as `npm run migrate` runs it. */
export const MIGRATE_ARGS = ['--enable-source-maps', 'dist/migrate.js'];

/** Bound of a process that is expected to exit by itself (a refused start, a migration). */
const RUN_TO_EXIT_TIMEOUT_MS = 60_000;

/** Runs the service (or `args`) until it exits by itself; SIGKILLed past `timeoutMs` (code null). */
export function runToExit(
  env: Record<string, string>,
  args: string[] = SERVICE_ARGS,
  timeoutMs = RUN_TO_EXIT_TIMEOUT_MS,
): Promise<{ code: number | null; output: string }> {
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
