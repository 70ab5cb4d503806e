// A PgBouncer of the test's own, in transaction pooling mode, in front of one database of the
// DATABASE_URL server: a generated pgbouncer.ini in a temporary directory, a free port, started in
// the foreground (so the test holds its pid) and stopped by that pid. Not the system's pgbouncer
// service (the Debian package may run one on 6432): nothing here depends on it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { reapedOnExit } from './child-reaper.ts';
import { freePort } from './process.ts';
import { until } from './until.ts';

/** The pgbouncer binary: on PATH, or where Debian's package puts it (/usr/sbin, not on every PATH). */
export function pgbouncerBinary(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  return existsSync('/usr/sbin/pgbouncer') ? '/usr/sbin/pgbouncer' : undefined;
}

export interface PgBouncer {
  /** postgres://… of `dbname` through the pooler. */
  url: string;
  pid: number;
  /** Its server connections per database and user (default_pool_size). */
  poolSize: number;
  /** The tail of its log, for failure messages. */
  log(lines?: number): string;
  /** SIGTERM (immediate shutdown: its server connections close) by pid, bounded; then SIGKILL. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;

function ini(options: {
  dir: string;
  port: number;
  server: URL;
  user: string;
  dbname: string;
  poolSize: number;
  maxClientConn: number;
}): string {
  const { dir, server } = options;
  return `[databases]
${options.dbname} = host=${server.hostname} port=${server.port || 5432} dbname=${options.dbname}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${options.port}
unix_socket_dir = ${dir}
auth_type = trust
auth_file = ${path.join(dir, 'userlist.txt')}
admin_users = ${options.user}
pool_mode = transaction
default_pool_size = ${options.poolSize}
reserve_pool_size = 0
max_client_conn = ${options.maxClientConn}
server_lifetime = 60
logfile = ${path.join(dir, 'pgbouncer.log')}
pidfile = ${path.join(dir, 'pgbouncer.pid')}
`;
}

/**
 * Starts PgBouncer in front of `dbname` on the server of `serverUrl` (trust auth for its user, as the
 * test server has) and waits until a query passes through it.
 */
export async function startPgBouncer(
  serverUrl: string,
  dbname: string,
  options: { poolSize?: number; maxClientConn?: number } = {},
): Promise<PgBouncer> {
  const binary = pgbouncerBinary();
  if (!binary) throw new Error('pgbouncer is not installed');
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const dir = mkdtempSync(path.join(tmpdir(), 'bds-pgbouncer-'));
  const port = await freePort();
  const poolSize = options.poolSize ?? 20;
  writeFileSync(path.join(dir, 'userlist.txt'), `"${user}" ""\n`);
  writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    ini({ dir, port, server, user, dbname, poolSize, maxClientConn: options.maxClientConn ?? 1000 }),
  );
  // PgBouncer refuses to run as root; as root it runs as the postgres user, who must read its files.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) spawnSync('chown', ['-R', 'postgres', dir]);
  const args = [...(asRoot ? ['-u', 'postgres'] : []), path.join(dir, 'pgbouncer.ini')];
  const child: ChildProcess = reapedOnExit(spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = (lines = 40) => {
    const file = path.join(dir, 'pgbouncer.log');
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    return `${output}${text}`.split('\n').slice(-lines).join('\n');
  };
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${dbname}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const stopped = await until('pgbouncer exited', () => child.exitCode !== null || child.signalCode !== null, {
        timeoutMs: STOP_TIMEOUT_MS,
      }).catch(() => false);
      if (!stopped) child.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      'pgbouncer answers a query',
      async () => {
        if (child.exitCode !== null) throw new Error(`pgbouncer exited (code ${child.exitCode}):\n${log()}`);
        const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
        try {
          await client.connect();
          await client.query('SELECT 1');
          return true;
        } catch {
          return false;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      { timeoutMs: READY_TIMEOUT_MS, intervalMs: 100, detail: () => log() },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, pid: child.pid!, poolSize, log, stop };
}
