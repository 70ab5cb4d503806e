// CPU per component over one payroll's window (first request to last webhook), for sizing: how many
// payouts one core of each component carries (an api process, a worker, PostgreSQL, PgBouncer, the
// load generator), and how many PostgreSQL connections the service held at most. Read from /proc, so
// it counts what the kernel counted, whatever else the process did in the window.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import pg from 'pg';
import { clockTicks, processCpuSeconds, statCpuTicks } from './cpu-time.ts';

/** How often the service's PostgreSQL connections are counted. */
const CONNECTION_SAMPLE_MS = 200;

export interface ComponentCpuFigures {
  /** CPU seconds (user + system) each component used in the window; PostgreSQL is every `postgres` process of the machine. */
  cpu_seconds: Record<string, number>;
  /** Payouts / CPU seconds: how many payouts one core of that component carries. */
  payouts_per_cpu_second: Record<string, number>;
  /**
   * The most connections to the bench database seen at once (sampled every 200 ms) from the run's
   * processes: in all, and per process (each service process, PgBouncer when used).
   */
  postgres_connections_max: number;
  postgres_connections_max_by_process: Record<string, number>;
  window_seconds: number;
}

/**
 * CPU seconds so far of every process whose command is `postgres`: each one's own time plus its reaped
 * children's (the postmaster's, for the backends that already exited), so a backend that ends within
 * the window still counts. Every PostgreSQL server and database of the machine is included.
 */
function postgresCpuSeconds(): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue; // exited meanwhile
    }
    ticks += statCpuTicks(Number(entry), { children: true }) ?? 0;
  }
  return ticks / clockTicks();
}

/** The service processes (by role), and PgBouncer when the run goes through it. */
interface Components {
  service: Array<{ role: string; pid: number }>;
  poolerPid?: number;
}

function snapshot(components: Components): Record<string, number | undefined> {
  return {
    ...Object.fromEntries(components.service.map((p) => [p.role, processCpuSeconds(p.pid)])),
    postgres: postgresCpuSeconds(),
    ...(components.poolerPid === undefined ? {} : { pgbouncer: processCpuSeconds(components.poolerPid) }),
  };
}

/** The TCP sockets of the machine by inode, with their local port (IPv4 and IPv6), from /proc/net. */
function localPortsByInode(): Map<string, number> {
  const ports = new Map<string, number>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9) ports.set(f[9]!, parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/** The local ports of the TCP sockets `pid` holds open: its end of each of its connections. */
function localPortsOf(pid: number, byInode: Map<string, number>): Set<number> {
  const ports = new Set<number>();
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return ports;
  }
  for (const fd of fds) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      const port = inode === undefined ? undefined : byInode.get(inode);
      if (port !== undefined) ports.add(port);
    } catch {
      // closed meanwhile
    }
  }
  return ports;
}

/**
 * Every 200 ms, over a connection of its own: the client connections to `databaseUrl`'s database, each
 * matched to the process holding its other end (its client port among the process's sockets). Keeps
 * the most seen at once per process and in all; connections of anything else (the bench itself, an
 * idle service of an earlier scenario) are not counted.
 */
async function connectionSampler(databaseUrl: string, holders: Record<string, number>) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const dbName = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  const max: Record<string, number> = Object.fromEntries(Object.keys(holders).map((name) => [name, 0]));
  let maxTotal = 0;
  let closed = false;
  let inFlight: Promise<unknown> | undefined;
  const count = (clientPorts: number[]) => {
    const byInode = localPortsByInode();
    let total = 0;
    for (const [name, pid] of Object.entries(holders)) {
      const own = localPortsOf(pid, byInode);
      const n = clientPorts.filter((port) => own.has(port)).length;
      max[name] = Math.max(max[name]!, n);
      total += n;
    }
    maxTotal = Math.max(maxTotal, total);
  };
  const sample = () => {
    if (inFlight) return; // a slow answer on a loaded machine: skip a tick rather than pile up
    inFlight = client
      .query<{ port: number }>(
        `SELECT client_port AS port FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`,
        [dbName],
      )
      .then(({ rows }) => count(rows.map((r) => r.port)))
      .catch(() => undefined)
      .finally(() => (inFlight = undefined));
  };
  sample();
  const timer = setInterval(sample, CONNECTION_SAMPLE_MS);
  return {
    async stop(): Promise<{ max: Record<string, number>; maxTotal: number }> {
      clearInterval(timer);
      await inFlight;
      if (!closed) await client.end().catch(() => undefined);
      closed = true;
      return { max, maxTotal };
    },
  };
}

export interface ComponentCpuMeter {
  /** Ends the window; the load generator's CPU seconds come from the load generator itself (it has exited by then). */
  stop(payouts: number, loadGeneratorCpuSeconds: number | undefined): Promise<ComponentCpuFigures>;
  /** Closes the connection counter without figures (a run that failed); harmless after stop. */
  close(): Promise<void>;
}

/** Starts the window; `databaseUrl` is the bench database, direct. Undefined where there is no /proc. */
export async function startComponentCpu(
  components: Components,
  databaseUrl: string,
): Promise<ComponentCpuMeter | undefined> {
  const before = snapshot(components);
  if (Object.values(before).some((s) => s === undefined)) return undefined;
  const holders = Object.fromEntries(components.service.map((p) => [p.role, p.pid]));
  if (components.poolerPid !== undefined) holders.pgbouncer = components.poolerPid;
  const connections = await connectionSampler(databaseUrl, holders);
  const startedMs = Date.now();
  return {
    async stop(payouts, loadGeneratorCpuSeconds) {
      const after = snapshot(components);
      const windowSeconds = (Date.now() - startedMs) / 1000;
      const seen = await connections.stop();
      const cpuSeconds: Record<string, number> = {};
      for (const [name, seconds] of Object.entries(after)) {
        if (seconds !== undefined && before[name] !== undefined) cpuSeconds[name] = seconds - before[name]!;
      }
      if (loadGeneratorCpuSeconds !== undefined) cpuSeconds.load_generator = loadGeneratorCpuSeconds;
      return {
        cpu_seconds: Object.fromEntries(Object.entries(cpuSeconds).map(([name, s]) => [name, Number(s.toFixed(2))])),
        payouts_per_cpu_second: Object.fromEntries(
          Object.entries(cpuSeconds).map(([name, s]) => [name, s > 0 ? Math.round(payouts / s) : 0]),
        ),
        postgres_connections_max: seen.maxTotal,
        postgres_connections_max_by_process: seen.max,
        window_seconds: Number(windowSeconds.toFixed(2)),
      };
    },
    close: async () => void (await connections.stop()),
  };
}

/** "payouts per CPU-second: api 1170/CPU-s (1.71 s), …; PostgreSQL connections ≤ 36 (api 27, worker 9)" */
export function describeComponentCpu(c: ComponentCpuFigures): string {
  const parts = Object.entries(c.payouts_per_cpu_second).map(
    ([name, perS]) => `${name} ${perS}/CPU-s (${c.cpu_seconds[name]!.toFixed(2)} s)`,
  );
  const byProcess = Object.entries(c.postgres_connections_max_by_process)
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');
  return `payouts per CPU-second: ${parts.join(', ')}; PostgreSQL connections ≤ ${c.postgres_connections_max} (${byProcess})`;
}
