// CPU time spent by the processes of a run, from Linux's /proc: on a shared, noisy machine the
// throughput of a CPU-bound run moves with whatever else runs, but the CPU each payout costs moves
// much less, so it is the figure that shows whether a change made the work cheaper.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let cachedClockTicks: number | undefined;

/** The kernel's clock ticks per second (`getconf CLK_TCK`), the unit of /proc's CPU times. */
export function clockTicks(): number {
  if (cachedClockTicks === undefined) {
    try {
      cachedClockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      cachedClockTicks = 100;
    }
  }
  return cachedClockTicks;
}

/** The fields of /proc/PID/stat after the command name (which may hold spaces), or undefined. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

// Offsets in statFields (stat(5) field number minus 3).
const PPID = 1;
const UTIME = 11;
const STIME = 12;
const CUTIME = 13;
const CSTIME = 14;

/**
 * Clock ticks (user + system) the process has used so far, with `children` also those of its children
 * it has reaped; undefined without /proc or once it exited.
 */
export function statCpuTicks(pid: number, options: { children?: boolean } = {}): number | undefined {
  const f = statFields(pid);
  if (!f) return undefined;
  return Number(f[UTIME]) + Number(f[STIME]) + (options.children ? Number(f[CUTIME]) + Number(f[CSTIME]) : 0);
}

/** CPU seconds (user + system) the process has used so far; undefined without /proc or once it exited. */
export function processCpuSeconds(pid: number): number | undefined {
  const t = statCpuTicks(pid);
  return t === undefined ? undefined : t / clockTicks();
}

/** Whether the process is a PostgreSQL one (a remote server's pid may name any process here). */
function isPostgres(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres');
  } catch {
    return false;
  }
}

/** The PostgreSQL server's process (the parent of a backend), when the server runs on this machine. */
export function postmasterOf(backendPid: number): number | undefined {
  if (!isPostgres(backendPid)) return undefined;
  const f = statFields(backendPid);
  const parent = f ? Number(f[PPID]) : undefined;
  return parent !== undefined && isPostgres(parent) ? parent : undefined;
}

/**
 * CPU seconds the whole PostgreSQL server has used so far: the postmaster, its live processes
 * (backends, WAL writer, checkpointer…) and those that already exited (counted into the postmaster's
 * children's time when it reaped them). Every database of the server is included.
 */
export function serverCpuSeconds(postmasterPid: number): number | undefined {
  const own = statFields(postmasterPid);
  if (!own) return undefined;
  let ticks = Number(own[UTIME]) + Number(own[STIME]) + Number(own[CUTIME]) + Number(own[CSTIME]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f && Number(f[PPID]) === postmasterPid) ticks += Number(f[UTIME]) + Number(f[STIME]);
  }
  return ticks / clockTicks();
}

/** The machine's busy and total CPU time so far (seconds summed over cores), from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number) as number[];
    const busy = user! + nice! + system! + irq! + softirq! + steal!;
    return { busy: busy / clockTicks(), total: (busy + idle! + iowait!) / clockTicks() };
  } catch {
    return undefined;
  }
}
