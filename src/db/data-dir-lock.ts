// The embedded engine (PGlite) is one PostgreSQL inside one process: two processes that open the same
// data directory each believe they own the files, write over each other and diverge. A lock file in
// DATA_DIR makes the second one refuse to start, naming the first, before it opens anything.
//
// The file is created with O_CREAT|O_EXCL ('wx'): of two processes creating it at once, exactly one
// succeeds. It holds the holder's pid, host and start time. A lock whose pid no longer runs on this
// host (the holder was SIGKILLed, the machine lost power) is stale and is taken over; a lock from
// another host is never taken over, because this host cannot tell whether that process still runs.
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';

/** @internal Exported for its tests, not used elsewhere. */
export const DATA_DIR_LOCK_FILE = 'pglite.lock';

/** Create-or-take-over rounds before giving up: each round is lost only to another process's move. */
const LOCK_ATTEMPTS_MAX = 5;
/**
 * A lock file is created empty and written a moment later: an empty or half-written one is read
 * again this many times, LOCK_READ_PAUSE_MS apart, before it is reported as unreadable.
 */
const LOCK_READ_RETRIES_MAX = 10;
const LOCK_READ_PAUSE_MS = 50;
/** This process's start, written into its lock: with the pid, it tells this process from an earlier one. */
const PROCESS_STARTED_AT = new Date(performance.timeOrigin).toISOString();

/** What a lock file says about the process that holds it. */
export interface LockHolder {
  pid: number;
  host: string;
  /** When that process started (ISO 8601). */
  startedAt: string;
  /** What it is: `npm start (role all)`, `migrate`, … */
  purpose: string;
}

export interface DataDirLock {
  readonly path: string;
  /** The stale lock this process took over, if it found one. */
  readonly tookOver: LockHolder | undefined;
  /** Removes the lock file if it is still this process's. Idempotent, synchronous (safe in an 'exit' handler). */
  release(): void;
}

export class DataDirLockedError extends Error {
  constructor(
    message: string,
    readonly holder: LockHolder | undefined,
    readonly lockPath: string,
  ) {
    super(message);
    this.name = 'DataDirLockedError';
  }
}

interface ReadLock {
  holder: LockHolder;
  /** The file's inode, to know later that a moved file is the one that was judged. */
  ino: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function errorCode(error: unknown): string | undefined {
  return (error as { code?: string })?.code;
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (!Number.isSafeInteger(value.pid) || (value.pid as number) <= 0 || typeof value.host !== 'string')
      return undefined;
    return {
      pid: value.pid as number,
      host: value.host,
      startedAt: String(value.startedAt ?? 'unknown'),
      purpose: String(value.purpose ?? 'unknown'),
    };
  } catch {
    return undefined;
  }
}

/** The lock file's holder; undefined when the file is gone; 'unreadable' when it never parses. */
async function readLock(lockPath: string): Promise<ReadLock | undefined | 'unreadable'> {
  for (let attempt = 0; attempt <= LOCK_READ_RETRIES_MAX; attempt += 1) {
    let fd: number;
    try {
      fd = openSync(lockPath, 'r');
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const holder = parseHolder(readFileSync(fd, 'utf8'));
      if (holder) return { holder, ino: fstatSync(fd).ino };
    } finally {
      closeSync(fd);
    }
    await sleep(LOCK_READ_PAUSE_MS);
  }
  return 'unreadable';
}

/** Whether the holder may still run. Only "certainly not" lets a lock be taken over. */
function mayBeAlive(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return true;
  // Our own pid: this very process (it opened DATA_DIR already), or one that is gone and whose pid
  // came round to us (a container restarted with the same pid 1).
  if (holder.pid === process.pid) return holder.startedAt === PROCESS_STARTED_AT;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return errorCode(error) !== 'ESRCH';
  }
}

export function describeHolder(holder: LockHolder): string {
  return `pid ${holder.pid} (${holder.purpose}) on host ${holder.host}, started ${holder.startedAt}`;
}

/**
 * Takes DATA_DIR's lock, or throws DataDirLockedError naming the process that holds it. `purpose`
 * says what this process is, for the message another process will print.
 */
export async function lockDataDir(dataDir: string, purpose: string): Promise<DataDirLock> {
  mkdirSync(dataDir, { recursive: true });
  const lockPath = path.join(path.resolve(dataDir), DATA_DIR_LOCK_FILE);
  const token = randomUUID();
  const mine: LockHolder & { token: string } = {
    pid: process.pid,
    host: hostname(),
    startedAt: PROCESS_STARTED_AT,
    purpose,
    token,
  };
  let tookOver: LockHolder | undefined;
  const refuse = (holder: LockHolder | undefined, message: string): never => {
    throw new DataDirLockedError(message, holder, lockPath);
  };
  const singleProcess =
    'The embedded database (PGlite) serves one process: stop that one first, or set DATABASE_URL to run several processes on PostgreSQL.';

  for (let attempt = 0; attempt < LOCK_ATTEMPTS_MAX; attempt += 1) {
    try {
      writeFileSync(lockPath, `${JSON.stringify(mine)}\n`, { flag: 'wx', mode: 0o644 });
      return heldLock(lockPath, token, tookOver);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
    const found = await readLock(lockPath);
    if (found === undefined) continue; // released meanwhile: create it again
    if (found === 'unreadable') {
      refuse(
        undefined,
        `DATA_DIR ${path.dirname(lockPath)} is locked by ${lockPath}, which names no process. If no other process uses DATA_DIR, delete that file. ${singleProcess}`,
      );
    }
    const { holder, ino } = found as ReadLock;
    if (mayBeAlive(holder)) {
      const elsewhere =
        holder.host !== hostname()
          ? ` This host cannot tell whether it still runs; if it does not, delete ${lockPath}.`
          : '';
      refuse(
        holder,
        `DATA_DIR ${path.dirname(lockPath)} is in use by another process: ${describeHolder(holder)}.${elsewhere} ${singleProcess}`,
      );
    }
    // Stale: its process no longer runs on this host, so the lock is taken over.
    if (removeStaleLock(lockPath, token, ino)) tookOver = holder;
  }
  throw new DataDirLockedError(
    `could not take the lock ${lockPath} in ${LOCK_ATTEMPTS_MAX} attempts: other processes keep taking it`,
    undefined,
    lockPath,
  );
}

/**
 * Removes the lock file judged stale (inode `ino`); false when another process moved first, and the
 * next round creates or judges the lock again.
 */
function removeStaleLock(lockPath: string, token: string, ino: number): boolean {
  // Move it aside under a name only this process uses, then make sure the file moved is the one
  // judged stale: a process that took it over first may already have put its own in its place.
  const aside = `${lockPath}.stale-${process.pid}-${token}`;
  try {
    renameSync(lockPath, aside);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
  if (statSync(aside).ino !== ino) {
    // Another process's fresh lock: put it back (without replacing whatever may be there now).
    // Its holder releases by the token inside, so a copy serves it as well as the original. Only
    // three processes finding one stale lock within the same few microseconds could still race here.
    try {
      writeFileSync(lockPath, readFileSync(aside), { flag: 'wx', mode: 0o644 });
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
    unlinkSync(aside);
    return false;
  }
  unlinkSync(aside);
  return true;
}

function heldLock(lockPath: string, token: string, tookOver: LockHolder | undefined): DataDirLock {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.removeListener('exit', release);
    try {
      // Only our own: never remove a lock another process holds now.
      const current = JSON.parse(readFileSync(lockPath, 'utf8')) as { token?: string };
      if (current.token === token) unlinkSync(lockPath);
    } catch {
      // Gone already, or not ours to remove.
    }
  };
  // Any exit that runs JavaScript releases it, including a failed start; only SIGKILL and a crash of
  // the machine leave it behind, and the next start takes that one over.
  process.on('exit', release);
  return { path: lockPath, tookOver, release };
}
