import { isTransientDatabaseError } from './database.ts';

/** The first wait between two attempts; each next one doubles, up to DB_CONNECT_RETRY_MAX_MS. */
const DB_CONNECT_RETRY_FIRST_MS = 250;
/** @internal Exported for its tests, not used elsewhere. */
export const DB_CONNECT_RETRY_MAX_MS = 5_000;

/** The database did not answer within DB_CONNECT_WAIT_S: the message names it, never its password. */
export class DatabaseUnreachableError extends Error {
  constructor(
    readonly database: string,
    readonly waitedS: number,
    readonly lastError: string,
  ) {
    super(
      `PostgreSQL at ${database} did not answer within ${waitedS} s (DB_CONNECT_WAIT_S=${waitedS}); last error: ${lastError}. Check that it runs and that DATABASE_URL names it.`,
    );
    this.name = 'DatabaseUnreachableError';
  }
}

/** `host:port/database` of a DATABASE_URL: what an operator needs to find it, without user or password. */
export function describeDatabase(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    const host = url.hostname || url.searchParams.get('host') || 'localhost';
    return `${host}:${url.port || '5432'}/${decodeURIComponent(url.pathname.replace(/^\//, '')) || '(default database)'}`;
  } catch {
    return '(DATABASE_URL)';
  }
}

/**
 * A server that is restarting, still starting, or whose name does not resolve yet (a container
 * started alongside it) will likely answer in a moment. Anything else (a wrong password, a missing
 * database) will not, and stops the start at once.
 */
function worthWaitingFor(error: unknown): boolean {
  const causes = [error, (error as { cause?: unknown } | undefined)?.cause];
  return causes.some((e) => isTransientDatabaseError(e) || (e as { code?: unknown } | undefined)?.code === 'ENOTFOUND');
}

export interface ConnectWaitOptions {
  /** DB_CONNECT_WAIT_S: how long to keep trying; 0 tries once. */
  waitS: number;
  /** describeDatabase(DATABASE_URL). */
  database: string;
  /** One line per failed attempt. */
  onRetry: (attempt: { attempt: number; error: string; retryInMs: number; waitedMs: number }) => void;
  nowMs?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs `firstContact` (the start's first work on the database: migrations, bootstrap), again after
 * each transient failure, with a doubling wait, until DB_CONNECT_WAIT_S has passed; then throws
 * DatabaseUnreachableError. A start while PostgreSQL restarts thus waits for it, as a running process
 * rides the same restart out. The work must be safe to run again (each of its transactions commits
 * whole or not at all; migrations and bootstrap check what is already done).
 */
export async function withDatabaseWait<T>(firstContact: () => Promise<T>, options: ConnectWaitOptions): Promise<T> {
  const nowMs = options.nowMs ?? (() => performance.now());
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const startedMs = nowMs();
  const deadlineMs = startedMs + options.waitS * 1000;
  let retryInMs = DB_CONNECT_RETRY_FIRST_MS;
  // Bounded by the deadline: every turn but the last sleeps, at least DB_CONNECT_RETRY_FIRST_MS or
  // what is left of DB_CONNECT_WAIT_S.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await firstContact();
    } catch (error) {
      if (!worthWaitingFor(error)) throw error;
      const message =
        error instanceof Error ? error.message || String((error as { code?: unknown }).code) : String(error);
      const remainingMs = deadlineMs - nowMs();
      if (remainingMs <= 0) throw new DatabaseUnreachableError(options.database, options.waitS, message);
      const waitMs = Math.ceil(Math.min(retryInMs, remainingMs));
      options.onRetry({ attempt, error: message, retryInMs: waitMs, waitedMs: Math.round(nowMs() - startedMs) });
      await sleep(waitMs);
      retryInMs = Math.min(retryInMs * 2, DB_CONNECT_RETRY_MAX_MS);
    }
  }
}
