// A throw-away PostgreSQL cluster owned by one test: its own data directory, port, socket directory
// and log file, so the test may stop, restart or crash the server without disturbing the shared
// server other test files use in parallel.
//
// initdb refuses to run as root: as root the binaries run as the `postgres` OS user (runuser), in a
// fresh temporary directory chowned to it; as any other user they run as that user.
import { execFile, spawnSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './process.ts';
import { until } from './until.ts';

const PG_ROOT = '/usr/lib/postgresql';
const OS_USER = 'postgres';
/** Bound of every pg_ctl / initdb call. */
const COMMAND_TIMEOUT_MS = 60_000;
/** Bound of the wait until a started server accepts connections. */
const READY_TIMEOUT_MS = 30_000;

/** The newest /usr/lib/postgresql/<version>/bin holding initdb and pg_ctl, or undefined. */
export function postgresBinDir(): string | undefined {
  if (!existsSync(PG_ROOT)) return undefined;
  const versions = readdirSync(PG_ROOT)
    .filter((v) => /^\d+(\.\d+)?$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = path.join(PG_ROOT, version, 'bin');
    if (
      existsSync(path.join(bin, 'initdb')) &&
      existsSync(path.join(bin, 'pg_ctl')) &&
      existsSync(path.join(bin, 'postgres'))
    )
      return bin;
  }
  return undefined;
}

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export function osUserIds(user: string): { uid: number; gid: number } | undefined {
  const uid = spawnSync('id', ['-u', user], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', user], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Why a private cluster cannot be made on this machine (a skip reason), or undefined when it can. */
export function privatePostgresAvailable(): string | undefined {
  if (process.platform !== 'linux') return `a private PostgreSQL cluster needs Linux (this is ${process.platform})`;
  if (!postgresBinDir()) return `no PostgreSQL server binaries (initdb, pg_ctl) under ${PG_ROOT}/<version>/bin`;
  if (isRoot()) {
    if (!osUserIds(OS_USER))
      return `running as root, and there is no '${OS_USER}' OS user to run initdb as (initdb refuses root)`;
    if (spawnSync('runuser', ['--help']).error)
      return `running as root, and runuser (to run initdb as '${OS_USER}') is missing`;
  }
  return undefined;
}

export interface PrivatePostgresOptions {
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
}

export type StopMode = 'smart' | 'fast' | 'immediate';

// Whatever happens to the test, no private server outlives the test process, nor its directory.
const runningClusters = new Set<PrivatePostgres>();
function stopClustersNow(): void {
  for (const cluster of runningClusters) cluster.stopSync();
}
process.once('exit', stopClustersNow);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stopClustersNow();
    process.kill(process.pid, signal);
  });
}

export class PrivatePostgres {
  private running = false;
  private readonly history: string[] = [];

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
    private readonly settings: Record<string, string | number>,
  ) {}

  /** initdb in a fresh temporary directory, then start on a free port; resolves once it accepts connections. */
  static async start(options: PrivatePostgresOptions = {}): Promise<PrivatePostgres> {
    const reason = privatePostgresAvailable();
    if (reason) throw new Error(`private PostgreSQL unavailable: ${reason}`);
    const bin = postgresBinDir()!;
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-pg-'));
    try {
      mkdirSync(path.join(dir, 'socket'));
      writeFileSync(path.join(dir, 'postgres.log'), '');
      if (isRoot()) {
        const ids = osUserIds(OS_USER)!;
        for (const p of [dir, path.join(dir, 'socket'), path.join(dir, 'postgres.log')]) chownSync(p, ids.uid, ids.gid);
      }
      const settings = {
        // A test cluster: the OS never crashes under it, so skipping fsync loses nothing a
        // PostgreSQL crash (or an immediate stop) would not lose anyway.
        fsync: 'off',
        full_page_writes: 'off',
        max_connections: 200,
        shared_buffers: '128MB',
        ...options.settings,
      };
      let lastError: unknown;
      for (let attempt = 1; attempt <= 3; attempt += 1) {
        const port = await freePort();
        const cluster = new PrivatePostgres(dir, port, bin, settings);
        try {
          if (attempt === 1)
            await cluster.run('initdb', [
              '-D',
              cluster.dataDir,
              '-A',
              'trust',
              '-U',
              'postgres',
              '-E',
              'UTF8',
              '--no-sync',
              '--no-instructions',
            ]);
          await cluster.startServer();
          return cluster;
        } catch (error) {
          // Most likely the free port was taken meanwhile: try another one.
          lastError = error;
          runningClusters.delete(cluster);
          await cluster.run('pg_ctl', ['-D', cluster.dataDir, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
        }
      }
      throw lastError;
    } catch (error) {
      const log = existsSync(path.join(dir, 'postgres.log'))
        ? readFileSync(path.join(dir, 'postgres.log'), 'utf8')
        : '';
      rmSync(dir, { recursive: true, force: true });
      throw new Error(
        `could not start a private PostgreSQL: ${(error as Error).message}\n--- postgres.log ---\n${log}`,
      );
    }
  }

  get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  get logFile(): string {
    return path.join(this.dir, 'postgres.log');
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** postgres://postgres@127.0.0.1:<port>/<dbname> */
  url(dbname = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${dbname}`;
  }

  /** Creates a database and returns its URL. */
  async createDatabase(name: string): Promise<string> {
    if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
    const client = new pg.Client({ connectionString: this.url('postgres') });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${name}`);
    } finally {
      await client.end();
    }
    return this.url(name);
  }

  /**
   * Stops the server (`fast`: disconnects every session with 57P01 and checkpoints; `immediate`: a
   * crash, recovered from the WAL at the next start), keeps it down for `downMs`, starts it again
   * and waits until it accepts connections.
   */
  async restart(options: { mode?: StopMode; downMs?: number } = {}): Promise<{ downMs: number }> {
    const stoppedAt = Date.now();
    await this.stopServer(options.mode ?? 'fast');
    if (options.downMs && options.downMs > 0) await new Promise((resolve) => setTimeout(resolve, options.downMs));
    await this.startServer();
    return { downMs: Date.now() - stoppedAt };
  }

  /** Stops the server and leaves it stopped (its directory and port kept) until `resume`. */
  async halt(mode: StopMode = 'fast'): Promise<void> {
    await this.stopServer(mode);
  }

  /** Starts a halted server again and waits until it accepts connections. */
  async resume(): Promise<void> {
    await this.startServer();
  }

  /** Stops the server and removes its directory. Safe to call twice. */
  async stop(): Promise<void> {
    runningClusters.delete(this);
    if (!existsSync(this.dir)) return;
    try {
      if (this.running) await this.stopServer('fast').catch(() => this.stopServer('immediate'));
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  /** Synchronous last resort (process exit): immediate stop, directory removed. */
  stopSync(): void {
    runningClusters.delete(this);
    if (!existsSync(this.dir)) return;
    const full = path.join(this.bin, 'pg_ctl');
    const args = ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '20', 'stop'];
    spawnSync(isRoot() ? 'runuser' : full, isRoot() ? ['-u', OS_USER, '--', full, ...args] : args, { timeout: 30_000 });
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The server's log file, plus what initdb and pg_ctl printed. */
  log(): string {
    const file = existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '(log file removed)';
    return `${this.history.join('\n')}\n--- postgres.log ---\n${file}`;
  }

  /** The last `lines` lines of log(). */
  logTail(lines = 60): string {
    return this.log().split('\n').slice(-lines).join('\n');
  }

  private async startServer(): Promise<void> {
    const opts = [`-p ${this.port}`, `-k ${path.join(this.dir, 'socket')}`, '-c listen_addresses=127.0.0.1'];
    for (const [name, value] of Object.entries(this.settings)) opts.push(`-c ${name}=${value}`);
    runningClusters.add(this);
    await this.run('pg_ctl', [
      '-D',
      this.dataDir,
      '-l',
      this.logFile,
      '-w',
      '-t',
      String(READY_TIMEOUT_MS / 1000),
      '-o',
      opts.join(' '),
      'start',
    ]);
    this.running = true;
    await this.waitAcceptingConnections();
  }

  private async stopServer(mode: StopMode): Promise<void> {
    await this.run('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', String(COMMAND_TIMEOUT_MS / 1000), 'stop']);
    this.running = false;
  }

  private async waitAcceptingConnections(): Promise<void> {
    let lastError: unknown;
    const accepting = await until(
      'connections accepted',
      async () => {
        const client = new pg.Client({ connectionString: this.url('postgres'), connectionTimeoutMillis: 2000 });
        try {
          await client.connect();
          await client.query('SELECT 1');
          await client.end();
          return true;
        } catch (error) {
          lastError = error;
          await client.end().catch(() => undefined);
          return false;
        }
      },
      { timeoutMs: READY_TIMEOUT_MS, intervalMs: 100 },
    ).catch(() => false);
    if (accepting) return;
    throw new Error(
      `private PostgreSQL on port ${this.port} does not accept connections after ${READY_TIMEOUT_MS} ms: ${(lastError as Error)?.message}\n${this.logTail()}`,
    );
  }

  /** Runs a server binary (as the postgres OS user when we are root), bounded. */
  private run(binary: string, args: string[]): Promise<string> {
    const full = path.join(this.bin, binary);
    const [command, argv] = isRoot() ? ['runuser', ['-u', OS_USER, '--', full, ...args]] : [full, args];
    const started = Date.now();
    return new Promise((resolve, reject) => {
      execFile(
        command,
        argv,
        { cwd: this.dir, timeout: COMMAND_TIMEOUT_MS, encoding: 'utf8' },
        (error, stdout, stderr) => {
          this.history.push(
            `$ ${binary} ${args.join(' ')}  (${Date.now() - started} ms${error ? `, failed: ${error.message.split('\n')[0]}` : ''})\n${stdout}${stderr}`.trimEnd(),
          );
          if (error) reject(new Error(`${binary} ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`));
          else resolve(stdout);
        },
      );
    });
  }
}
