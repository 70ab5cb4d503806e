// Several service processes (as `npm start` runs them: SERVICE_ARGS) on one database, each with its own
// ROLE, PORT and environment, that a test can kill (any signal), restart and stop. Every process's
// output (stdout and stderr, every generation) is kept for failure messages. Every wait is bounded.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { reapedOnExit } from './child-reaper.ts';
import { TEST_METRICS_TOKEN } from './metrics.ts';
import { freePort, SERVICE_ARGS } from './process.ts';
import { until } from './until.ts';

export type Role = 'all' | 'api' | 'worker';

export interface NodeSpec {
  role: Role;
  /** Extra environment of this process (over the cluster's common environment). */
  env?: Record<string, string>;
}

export interface ExitRecord {
  node: number;
  role: Role;
  generation: number;
  pid: number | undefined;
  code: number | null;
  signal: NodeJS.Signals | null;
  at: Date;
  /** The test asked for it (kill, restart, stopAll); false means the process died on its own. */
  expected: boolean;
}

export interface ClusterOptions {
  /** Bound of the wait until a started process is ready. */
  readyTimeoutMs?: number;
  /** stopAll: how long SIGTERM may take before SIGKILL. */
  stopTimeoutMs?: number;
}

/** The JSON log line (pino, stdout) that says a process is up and listening. */
export const STARTED_LINE = 'bolivar disbursement service started';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DEFAULT_READY_TIMEOUT_MS = 45_000;
const DEFAULT_STOP_TIMEOUT_MS = 15_000;
/** Bound of the wait for a killed process to be reaped. */
const EXIT_WAIT_MS = 10_000;

class ServiceNode {
  child: ChildProcessWithoutNullStreams | undefined;
  generation = 0;
  /** Output of every generation, each preceded by a header line. */
  readonly chunks: string[] = [];
  /** Output of the current generation only (readiness looks here). */
  current = '';
  expectingExit = false;
  exited: Promise<ExitRecord> | undefined;

  constructor(
    readonly index: number,
    readonly spec: NodeSpec,
    readonly port: number,
  ) {}

  get label(): string {
    return `node ${this.index} (${this.spec.role}, port ${this.port})`;
  }
}

export class ServiceCluster {
  readonly exits: ExitRecord[] = [];
  /** What the test did to the processes, with times: for failure messages. */
  readonly timeline: string[] = [];
  private readonly nodes: ServiceNode[];
  private readonly readyTimeoutMs: number;
  private readonly stopTimeoutMs: number;
  private readonly t0 = Date.now();

  private constructor(
    private readonly commonEnv: Record<string, string>,
    nodes: ServiceNode[],
    options: ClusterOptions,
  ) {
    this.nodes = nodes;
    this.readyTimeoutMs = options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
    this.stopTimeoutMs = options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
  }

  /**
   * Starts one process per spec (all at once) and waits until each is ready: GET /health/ready
   * answers 200 (every role: a worker serves the health checks and /metrics on its port).
   * `commonEnv` must hold DATABASE_URL; ROLE, PORT and HOST are set per process.
   */
  static async start(
    specs: NodeSpec[],
    commonEnv: Record<string, string>,
    options: ClusterOptions = {},
  ): Promise<ServiceCluster> {
    const nodes: ServiceNode[] = [];
    for (const [i, spec] of specs.entries()) nodes.push(new ServiceNode(i, spec, await freePort()));
    const cluster = new ServiceCluster(commonEnv, nodes, options);
    const started = await Promise.allSettled(nodes.map((_, i) => cluster.startNode(i)));
    const failed = started.flatMap((r, i) =>
      r.status === 'rejected' ? [`${nodes[i]!.label}: ${(r.reason as Error).message}`] : [],
    );
    if (failed.length > 0) {
      await cluster.stopAll();
      throw new Error(`service cluster did not start:\n${failed.join('\n')}`);
    }
    return cluster;
  }

  get size(): number {
    return this.nodes.length;
  }

  role(i: number): Role {
    return this.node(i).spec.role;
  }

  /** http://127.0.0.1:<port> of a process (a worker's answers the health checks and /metrics only). */
  baseUrl(i: number): string {
    return `http://127.0.0.1:${this.node(i).port}`;
  }

  /** Indexes of the processes that serve the API (role api or all). */
  httpNodes(): number[] {
    return this.nodes.filter((n) => n.spec.role !== 'worker').map((n) => n.index);
  }

  /** Base URLs of every API process, up or not (a client retries on another one). */
  httpBaseUrls(): string[] {
    return this.httpNodes().map((i) => this.baseUrl(i));
  }

  alive(i: number): boolean {
    const child = this.node(i).child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  pid(i: number): number | undefined {
    return this.node(i).child?.pid;
  }

  /** Sends `signal` and waits (bounded) until the process has exited. */
  async kill(i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<ExitRecord | undefined> {
    const node = this.node(i);
    if (!this.alive(i)) return undefined;
    node.expectingExit = true;
    this.note(`${signal} → ${node.label} pid ${node.child!.pid}`);
    node.child!.kill(signal);
    return this.waitExit(node, EXIT_WAIT_MS);
  }

  /** Stops the process if it runs (SIGTERM, then SIGKILL), starts it again and waits until it is ready. */
  async restart(i: number): Promise<{ readyMs: number }> {
    const node = this.node(i);
    if (this.alive(i)) await this.stopNode(node, this.stopTimeoutMs);
    return this.startNode(i);
  }

  /** SIGTERM to every live process; SIGKILL to those still up after the bound. */
  async stopAll(timeoutMs = this.stopTimeoutMs): Promise<ExitRecord[]> {
    const records = await Promise.all(
      this.nodes.map((n) => (this.alive(n.index) ? this.stopNode(n, timeoutMs) : undefined)),
    );
    return records.filter((r): r is ExitRecord => r !== undefined);
  }

  /** Exits the test did not cause. */
  unexpectedExits(): ExitRecord[] {
    return this.exits.filter((e) => !e.expected);
  }

  /** Everything a process printed, every generation. */
  output(i: number): string {
    return this.node(i).chunks.join('');
  }

  tail(i: number, lines = 40): string {
    return this.output(i).split('\n').slice(-lines).join('\n');
  }

  /** Lines of any process's output matching `pattern`, prefixed with the process. */
  grep(pattern: RegExp, max = 50): string[] {
    const found: string[] = [];
    for (const node of this.nodes) {
      for (const line of this.output(node.index).split('\n')) {
        if (pattern.test(line)) found.push(`[${node.index}:${node.spec.role}] ${line}`);
        if (found.length >= max) return found;
      }
    }
    return found;
  }

  /** pino lines at error level or above (level ≥ 50), and anything on stderr that is not JSON. */
  errorLines(max = 50): string[] {
    return this.grep(/^\{.*"level":(50|60)[,}]|^(?!\{|===)\S/, max);
  }

  /** For failure messages: the timeline, every exit, and the tail of every process's output. */
  report(lines = 40): string {
    const parts = [`--- cluster timeline ---`, ...this.timeline];
    parts.push('--- exits ---', ...this.exits.map((e) => JSON.stringify(e)));
    for (const node of this.nodes)
      parts.push(
        `--- ${node.label}, generation ${node.generation}, last ${lines} lines ---`,
        this.tail(node.index, lines),
      );
    return parts.join('\n');
  }

  /** Every process's full output and the timeline, as files for saveArtifacts. */
  artifactFiles(): Record<string, string> {
    const files: Record<string, string> = {
      'timeline.txt': [...this.timeline, '', ...this.exits.map((e) => JSON.stringify(e))].join('\n'),
    };
    for (const node of this.nodes) files[`node-${node.index}-${node.spec.role}.log`] = this.output(node.index);
    return files;
  }

  private node(i: number): ServiceNode {
    const node = this.nodes[i];
    if (!node) throw new Error(`no node ${i} (cluster of ${this.nodes.length})`);
    return node;
  }

  private note(what: string): void {
    this.timeline.push(`+${((Date.now() - this.t0) / 1000).toFixed(2)}s ${what}`);
  }

  private async startNode(i: number): Promise<{ readyMs: number }> {
    const node = this.node(i);
    const startedAt = Date.now();
    node.generation += 1;
    node.current = '';
    node.expectingExit = false;
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      BOOTSTRAP: 'off',
      RATE_LIMIT_RPS: '0',
      METRICS_TOKEN: TEST_METRICS_TOKEN,
      // A worker's info lines are its domain events (outcomes, deliveries); the API's request lines are noise.
      LOG_LEVEL: node.spec.role === 'worker' ? 'info' : 'warn',
      ...this.commonEnv,
      ...node.spec.env,
      ROLE: node.spec.role,
      PORT: String(node.port),
      HOST: '127.0.0.1',
    };
    const child = reapedOnExit(spawn(process.execPath, SERVICE_ARGS, { cwd: REPO_ROOT, env }));
    node.child = child;
    const header = `=== ${node.label} generation ${node.generation} pid ${child.pid} started at +${((startedAt - this.t0) / 1000).toFixed(2)}s ===\n`;
    node.chunks.push(header);
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      node.chunks.push(text);
      if (node.child === child) node.current += text;
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const generation = node.generation;
    node.exited = new Promise<ExitRecord>((resolve) => {
      child.on('exit', (code, signal) => {
        const record: ExitRecord = {
          node: i,
          role: node.spec.role,
          generation,
          pid: child.pid,
          code,
          signal,
          at: new Date(),
          expected: node.expectingExit,
        };
        this.exits.push(record);
        this.note(
          `${node.label} pid ${child.pid} exited (code ${code}, signal ${signal})${record.expected ? '' : ' UNEXPECTEDLY'}`,
        );
        node.chunks.push(`=== ${node.label} pid ${child.pid} exited: code ${code}, signal ${signal} ===\n`);
        resolve(record);
      });
    });
    this.note(`started ${node.label} pid ${child.pid}`);

    const state = await until(
      `${node.label} ready`,
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) return 'exited';
        return (await this.isReady(node)) ? 'ready' : undefined;
      },
      { timeoutMs: startedAt + this.readyTimeoutMs - Date.now(), intervalMs: 50 },
    ).catch(() => 'not ready' as const);
    if (state === 'exited') {
      throw new Error(
        `${node.label} exited during start (code ${child.exitCode}, signal ${child.signalCode}):\n${node.current}`,
      );
    }
    if (state === 'ready') {
      const readyMs = Date.now() - startedAt;
      this.note(`${node.label} pid ${child.pid} ready in ${readyMs} ms`);
      return { readyMs };
    }
    node.expectingExit = true;
    child.kill('SIGKILL');
    await this.waitExit(node, EXIT_WAIT_MS).catch(() => undefined);
    throw new Error(`${node.label} not ready within ${this.readyTimeoutMs} ms:\n${node.current}`);
  }

  private async isReady(node: ServiceNode): Promise<boolean> {
    try {
      const response = await fetch(`http://127.0.0.1:${node.port}/health/ready`, { signal: AbortSignal.timeout(3000) });
      await response.arrayBuffer();
      return response.status === 200;
    } catch {
      return false;
    }
  }

  private async stopNode(node: ServiceNode, timeoutMs: number): Promise<ExitRecord> {
    const child = node.child!;
    node.expectingExit = true;
    this.note(`SIGTERM → ${node.label} pid ${child.pid}`);
    child.kill('SIGTERM');
    try {
      return await this.waitExit(node, timeoutMs);
    } catch {
      this.note(`${node.label} pid ${child.pid} still up ${timeoutMs} ms after SIGTERM: SIGKILL`);
      child.kill('SIGKILL');
      return this.waitExit(node, EXIT_WAIT_MS);
    }
  }

  private async waitExit(node: ServiceNode, timeoutMs: number): Promise<ExitRecord> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${node.label} did not exit within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([node.exited!, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

interface Killer {
  /** Stops killing (waits for a restart in progress), then restarts any process that is down. */
  stop(): Promise<{ kills: number; restartErrors: string[] }>;
  readonly kills: number;
}

/**
 * Runs `load` while processes are killed and restarted (startKiller); the kills stop, and a process
 * still down is restarted, when the load ends, even when it throws.
 */
export async function underKills(
  cluster: ServiceCluster,
  options: Parameters<typeof startKiller>[1],
  load: () => Promise<unknown>,
): Promise<{ loadMs: number; kills: number; restartErrors: string[] }> {
  const started = Date.now();
  const killer = startKiller(cluster, options);
  let stopped: Awaited<ReturnType<Killer['stop']>>;
  try {
    await load();
  } finally {
    stopped = await killer.stop();
  }
  return { loadMs: Date.now() - started, ...stopped };
}

/**
 * SIGKILLs one process every `everyMs` (cycling through `order`), restarting it at once and waiting
 * until it is ready again before the next pause. The first kill comes after `firstAfterMs`.
 */
function startKiller(
  cluster: ServiceCluster,
  options: { order: number[]; everyMs: number; firstAfterMs?: number; signal?: NodeJS.Signals },
): Killer {
  let stopped = false;
  let kills = 0;
  const restartErrors: string[] = [];
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const loop = (async () => {
    await pause(options.firstAfterMs ?? options.everyMs);
    for (let n = 0; !stopped; n += 1) {
      const i = options.order[n % options.order.length]!;
      if (await cluster.kill(i, options.signal ?? 'SIGKILL')) kills += 1;
      try {
        await cluster.restart(i);
      } catch (error) {
        restartErrors.push(`restart of node ${i}: ${(error as Error).message.slice(0, 2000)}`);
      }
      if (!stopped) await pause(options.everyMs);
    }
  })();
  return {
    get kills() {
      return kills;
    },
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      for (let i = 0; i < cluster.size; i += 1) {
        if (cluster.alive(i)) continue;
        try {
          await cluster.restart(i);
        } catch (error) {
          restartErrors.push(`final restart of node ${i}: ${(error as Error).message.slice(0, 2000)}`);
        }
      }
      return { kills, restartErrors };
    },
  };
}
