// The reference bank gateway simulator (src/gateway-simulator/) as a test starts it: its own process,
// on free ports, storing in a temporary directory; stopped by its pid, and restarted on the same ports
// and directory (a killed gateway must remember what it received). Plus `httpBankUnderTest`, the HTTP
// bank connector and a BankControl over the simulator's control API, as the connector kit takes them.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RAIL_FAILURE_REASONS } from '../../src/domain/failure-reasons.ts';
import type { RailKey } from '../../src/domain/rail-signature.ts';
import { gatewayErrorCodeOf } from '../../src/rails/http-bank/status-map.ts';
import type { HttpBankConnectorConfig } from '../../src/rails/rails-file.ts';
import type { BankControl, BankNotice, BankScenario, ConnectorUnderTest } from './connector-kit/bank-control.ts';
import { reapedOnExit } from './child-reaper.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { until } from './until.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = path.join(ROOT, 'src/gateway-simulator/main.ts');
/** A start (tsx compiles on the fly) on a busy machine. */
const START_TIMEOUT_MS = 30_000;

export const TEST_REQUEST_KEYS: RailKey[] = [
  { id: 'req-2026-11', secret: 'request-secret-current-0123456789' },
  { id: 'req-2026-05', secret: 'request-secret-previous-012345678' },
];
export const TEST_CALLBACK_KEY: RailKey = { id: 'cb-2026-11', secret: 'callback-secret-current-012345678' };

export interface GatewaySimulator {
  baseUrl: string;
  controlUrl: string;
  dir: string;
  pid(): number;
  output(): string;
  /** A control API call; throws unless it answers 2xx. */
  control<T = any>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', route: string, body?: unknown): Promise<T>;
  /** Stops the process by its pid (SIGKILL: as a crash). */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again (after a SIGKILL) on the same ports, directory and callback URL; faults and callbacks not yet sent are gone. */
  restart(): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
}

export interface GatewaySimulatorOptions {
  settleDelayMs?: number;
  callbackUrl?: string;
  /** The request keys it accepts (default TEST_REQUEST_KEYS: the current and the previous one). */
  keys?: RailKey[];
}

function spawnSimulator(configFile: string): {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  ready: Promise<{ port: number; controlPort: number }>;
} {
  const child = reapedOnExit(spawn(process.execPath, ['--import', 'tsx', MAIN, '--config', configFile], { cwd: ROOT }));
  let output = '';
  const ready = new Promise<{ port: number; controlPort: number }>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split('\n')[0];
      if (output.includes('\n') && line) resolve(JSON.parse(line) as { port: number; controlPort: number });
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`gateway simulator exited with ${code}:\n${output}`)));
  });
  return { child, output: () => output, ready };
}

async function startedWithin<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not started within ${ms} ms`)), ms)),
  );
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export async function startGatewaySimulator(options: GatewaySimulatorOptions = {}): Promise<GatewaySimulator> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gateway-sim-'));
  // The callback URL a test set last: a restarted gateway keeps calling it back.
  let callbackUrl = options.callbackUrl;
  const write = (ports: { port: number; controlPort: number }) => {
    const config = {
      ...ports,
      dir: path.join(dir, 'data'),
      keys: options.keys ?? TEST_REQUEST_KEYS,
      callbackKey: TEST_CALLBACK_KEY,
      callbackUrl,
      settleDelayMs: options.settleDelayMs ?? 100,
    };
    writeFileSync(path.join(dir, 'gateway.json'), JSON.stringify(config));
  };
  write({ port: 0, controlPort: 0 });
  let running = spawnSimulator(path.join(dir, 'gateway.json'));
  const ports = await startedWithin(running.ready, START_TIMEOUT_MS, 'the gateway simulator');
  const baseUrl = `http://127.0.0.1:${ports.port}`;
  const controlUrl = `http://127.0.0.1:${ports.controlPort}`;
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const child = running.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(child.pid!, signal);
    await exited;
  };
  return {
    baseUrl,
    controlUrl,
    dir,
    pid: () => running.child.pid!,
    output: () => running.output(),
    async control(method, route, body) {
      const answer = await fetch(`${controlUrl}${route}`, {
        method,
        ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      });
      const text = await answer.text();
      if (!answer.ok) throw new Error(`control ${method} ${route}: ${answer.status} ${text}`);
      const url = (body as { url?: unknown } | undefined)?.url;
      if (route === '/_control/callbacks' && typeof url === 'string') callbackUrl = url;
      return JSON.parse(text);
    },
    stop,
    async restart() {
      await stop('SIGKILL');
      write(ports);
      running = spawnSimulator(path.join(dir, 'gateway.json'));
      await startedWithin(running.ready, START_TIMEOUT_MS, 'the gateway simulator (restart)');
    },
    async close() {
      await stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The connector's config for a simulator (our current key first). */
export function connectorConfigOf(
  sim: GatewaySimulator,
  overrides: Partial<HttpBankConnectorConfig> = {},
): HttpBankConnectorConfig {
  return {
    name: 'bank-sim',
    kind: 'http-bank',
    baseUrl: sim.baseUrl,
    keys: [TEST_REQUEST_KEYS[0]!],
    callbackKeys: [TEST_CALLBACK_KEY],
    timeoutMs: 3000,
    modes: ['live'],
    ...overrides,
  };
}

/** A rails file (RAILS_FILE) listing `connectors`, in the simulator's directory. */
function railsFileOf(sim: GatewaySimulator, connectors: HttpBankConnectorConfig[]): string {
  const file = path.join(sim.dir, 'rails.json');
  writeFileSync(file, JSON.stringify({ connectors }), { mode: 0o600 });
  return file;
}

/** The service (a test app, listening) with the simulator as its live connector, callbacks pointed at it. */
export async function serviceWithGateway(
  sim: GatewaySimulator,
  options: { connector?: Partial<HttpBankConnectorConfig>; env?: Record<string, string> } = {},
): Promise<{ t: TestApp; callbackUrl: string }> {
  const connector = connectorConfigOf(sim, options.connector);
  const t = await startTestApp({ env: { RAILS_FILE: railsFileOf(sim, [connector]), ...options.env } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const callbackUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/v1/rails/${connector.name}/callbacks`;
  await sim.control('POST', '/_control/callbacks', { url: callbackUrl });
  return { t, callbackUrl };
}

function scenarioOf(scenario: BankScenario) {
  return scenario.kind === 'fail'
    ? { kind: 'fail', errorCode: gatewayErrorCodeOf(scenario.reason) }
    : { kind: scenario.kind };
}

function outcomeOf(notice: BankNotice) {
  switch (notice.kind) {
    case 'settled':
      return { status: 'SETTLED' };
    case 'failed':
      return { status: 'REJECTED', errorCode: gatewayErrorCodeOf(notice.reason) };
    case 'reversed':
      return { status: 'RETURNED', returnReason: notice.reason };
  }
}

/** Waits until every callback the gateway queued was delivered or given up (refused included). */
export async function callbacksSettled(sim: GatewaySimulator): Promise<void> {
  await until('the gateway sent every callback it queued', async () => {
    const { callbacks } = await sim.control<{
      callbacks: { pending: number; counters: { queued: number; delivered: number; dropped: number } };
    }>('GET', '/_control/state');
    return (
      callbacks.pending === 0 && callbacks.counters.queued === callbacks.counters.delivered + callbacks.counters.dropped
    );
  });
}

/** A BankControl over the simulator's control API. */
export function simulatorBank(sim: GatewaySimulator): BankControl {
  return {
    failureReasons: RAIL_FAILURE_REASONS,
    async arrange(transfer, scenario) {
      await sim.control('POST', `/_control/scenarios/${encodeURIComponent(transfer.reference)}`, scenarioOf(scenario));
      return transfer;
    },
    async submissionsOf(reference) {
      return (await sim.control<{ submissions: number }>('GET', `/_control/transfers/${encodeURIComponent(reference)}`))
        .submissions;
    },
    async notify(reference, notices, options) {
      const before = (
        await sim.control<{ callbacks: { counters: { delivered: number; refused: number } } }>('GET', '/_control/state')
      ).callbacks.counters;
      const queued = (
        await sim.control<{ queued: number }>('POST', `/_control/transfers/${encodeURIComponent(reference)}/notify`, {
          notices: notices.map(outcomeOf),
          times: options?.times ?? 1,
        })
      ).queued;
      // Delivered (recorded in our inbox) before the kit looks: the simulator sends them one at a time.
      await until('the gateway delivered its callbacks', async () => {
        const now = (
          await sim.control<{ callbacks: { counters: { delivered: number; refused: number } } }>(
            'GET',
            '/_control/state',
          )
        ).callbacks.counters;
        return now.delivered + now.refused - before.delivered - before.refused >= queued;
      });
    },
    async catalogueDown(down) {
      await sim.control('POST', '/_control/faults', { catalogueDown: down });
    },
    async unreachable(down) {
      await sim.control('POST', '/_control/faults', { refuse: down });
    },
    async statementNotReady(on) {
      await sim.control('POST', '/_control/faults', { statementNotReady: on });
    },
    async statementPageSize(size) {
      await sim.control('POST', '/_control/faults', { statementPageSize: size });
    },
    async lie(reference, lie) {
      await sim.control('POST', `/_control/tamper/${encodeURIComponent(reference)}`, lie);
    },
  };
}

/** The HTTP bank connector against a fresh simulator, behind a listening test app that receives its callbacks. */
export async function httpBankUnderTest(): Promise<ConnectorUnderTest> {
  const sim = await startGatewaySimulator({ settleDelayMs: 100 });
  try {
    const { t } = await serviceWithGateway(sim, { env: { SANDBOX_RAIL_TIMEOUT_MS: '1000' } });
    return {
      adapter: t.services.connectors[0]!,
      bank: simulatorBank(sim),
      mode: 'live',
      railTimeoutMs: t.config.sandboxRailTimeoutMs,
      async close() {
        // The gateway first: a callback it is sending keeps a connection to the app busy, and the app's
        // close then waits out that connection's keep-alive (72 s) once the callback is answered.
        await sim.close();
        await t.close();
      },
    };
  } catch (error) {
    await sim.close();
    throw error;
  }
}
