// A hot-standby streaming replica of a test's private PostgreSQL cluster (private-postgres.ts): a base
// backup of the primary (pg_basebackup -R -X stream, which writes standby.signal and the connection
// back to the primary; --checkpoint=fast, as the default spread checkpoint made the backup of an
// idle 46 MB cluster take 93 s here), then a second server on it, in a temporary directory and on a free port,
// stopped by its postmaster's pid. The primary must accept replication connections from 127.0.0.1:
// initdb's pg_hba.conf does (trust), the machine's shared server may not.
//
// As root the binaries run as the `postgres` OS user (runuser), like the private cluster's.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { isRoot, osUserIds, postgresBinDir, type PrivatePostgres } from './private-postgres.ts';
import { freePort } from './process.ts';
import { until } from './until.ts';

const OS_USER = 'postgres';
/** Bound of the base backup (the whole cluster is copied). */
const BASEBACKUP_TIMEOUT_MS = 120_000;
/** Bound of the wait until the standby accepts connections, and until it exits once stopped. */
const SERVER_WAIT_MS = 30_000;

/**
 * Settings a hot standby must have at least as high as its primary's, or its recovery stops at once
 * ("insufficient parameter settings"): the private cluster sets some on its command line, which the
 * base backup does not copy.
 */
const STANDBY_AT_LEAST_PRIMARY = [
  'max_connections',
  'max_worker_processes',
  'max_wal_senders',
  'max_prepared_transactions',
  'max_locks_per_transaction',
];

/** Why a replica cannot be made here (a skip reason), or undefined. */
export function streamingReplicaAvailable(): string | undefined {
  const bin = postgresBinDir();
  if (!bin) return 'no PostgreSQL server binaries under /usr/lib/postgresql/<version>/bin';
  if (!existsSync(path.join(bin, 'pg_basebackup'))) return `no pg_basebackup in ${bin}`;
  return undefined;
}

// Whatever happens to the test, no standby outlives the test process, nor its directory.
const running = new Set<StreamingReplica>();
process.once('exit', () => {
  for (const replica of running) replica.killNow();
});

export class StreamingReplica {
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private output = '';

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
    /** The base backup: how long it took and how much it copied. */
    readonly basebackup: { ms: number; kilobytes: number },
  ) {}

  get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  url(dbname = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${dbname}`;
  }

  /** A base backup of `primary` in a fresh temporary directory, started as a hot standby; resolves once it answers in recovery. */
  static async of(primary: PrivatePostgres): Promise<StreamingReplica> {
    const bin = postgresBinDir()!;
    const dir = mkdtempSync(path.join(tmpdir(), 'bds-replica-'));
    if (isRoot()) {
      const ids = osUserIds(OS_USER)!;
      chownSync(dir, ids.uid, ids.gid);
    }
    try {
      const started = Date.now();
      await run(
        path.join(bin, 'pg_basebackup'),
        [
          '-h',
          '127.0.0.1',
          '-p',
          String(primary.port),
          '-U',
          'postgres',
          '-D',
          path.join(dir, 'data'),
          '-R',
          '-X',
          'stream',
          '--checkpoint=fast',
          '--no-sync',
        ],
        BASEBACKUP_TIMEOUT_MS,
      );
      const ms = Date.now() - started;
      const kilobytes = Number(
        (await run('du', ['-sk', path.join(dir, 'data')], BASEBACKUP_TIMEOUT_MS)).split(/\s/)[0],
      );
      const replica = new StreamingReplica(dir, await freePort(), bin, { ms, kilobytes });
      await replica.start(await settingsOf(primary));
      return replica;
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** The postmaster's pid, from its postmaster.pid (runuser's child when we are root). */
  get pid(): number | undefined {
    const file = path.join(this.dataDir, 'postmaster.pid');
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  }

  /** The server's own output (its log goes to stderr). */
  log(): string {
    return this.output;
  }

  /** Stops the standby by its pid (SIGINT: PostgreSQL's fast shutdown, every session terminated) and waits for it to exit. */
  async stop(): Promise<void> {
    const pid = this.pid;
    if (pid === undefined || !this.exited) return;
    process.kill(pid, 'SIGINT');
    await Promise.race([
      this.exited,
      new Promise((_, reject) =>
        setTimeout(
          () => reject(new Error(`the standby (pid ${pid}) did not exit within ${SERVER_WAIT_MS} ms\n${this.output}`)),
          SERVER_WAIT_MS,
        ).unref(),
      ),
    ]);
    running.delete(this);
  }

  /** Stops the standby if it runs, and removes its directory. Safe to call twice. */
  async remove(): Promise<void> {
    try {
      await this.stop().catch(() => this.killNow());
    } finally {
      running.delete(this);
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  /** Synchronous last resort (process exit): SIGQUIT (immediate shutdown) to the postmaster, directory removed. */
  killNow(): void {
    const pid = this.pid;
    if (pid !== undefined && this.child?.exitCode === null) {
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        // already gone
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async start(settings: Record<string, string>): Promise<void> {
    const args = [
      '-D',
      this.dataDir,
      '-p',
      String(this.port),
      '-k',
      this.dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'hot_standby=on',
    ];
    for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
    const postgres = path.join(this.bin, 'postgres');
    const child = isRoot() ? spawn('runuser', ['-u', OS_USER, '--', postgres, ...args]) : spawn(postgres, args);
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    running.add(this);
    child.stdout?.on('data', (chunk) => (this.output += chunk));
    child.stderr?.on('data', (chunk) => (this.output += chunk));
    let lastError = '';
    const ready = await until(
      'the standby answers in recovery',
      async () => {
        if (child.exitCode !== null) return 'exited';
        const client = new pg.Client({ connectionString: this.url(), connectionTimeoutMillis: 2_000 });
        try {
          await client.connect();
          const { rows } = await client.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
          return rows[0]?.standby ? 'ready' : undefined;
        } catch (error) {
          lastError = (error as Error).message;
          return undefined;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      { timeoutMs: SERVER_WAIT_MS, intervalMs: 100 },
    ).catch(() => 'not ready');
    if (ready === 'ready') return;
    this.killNow();
    throw new Error(`the standby on port ${this.port} is ${ready} (last error: ${lastError})\n${this.output}`);
  }
}

async function settingsOf(primary: PrivatePostgres): Promise<Record<string, string>> {
  const client = new pg.Client({ connectionString: primary.url() });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; setting: string }>(
      'SELECT name, setting FROM pg_settings WHERE name = ANY($1)',
      [STANDBY_AT_LEAST_PRIMARY],
    );
    return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  } finally {
    await client.end();
  }
}

/** Runs a command (as the postgres OS user when we are root), bounded; its stdout. */
function run(command: string, args: string[], timeoutMs: number): Promise<string> {
  const [file, argv] = isRoot() ? ['runuser', ['-u', OS_USER, '--', command, ...args]] : [command, args];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}
