// One PostgreSQL dialect on two engines: the embedded PGlite (one connection, in-process) and a real
// PostgreSQL server through a pool. Every repository takes a `Queryable`, so the same SQL runs on
// both; `transaction` is the only way to group statements.

export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<Row>>;
  /** Runs a parameterless script of one or more statements (migrations). */
  exec(sql: string): Promise<void>;
}

/** The handle a transaction's work gets. */
export interface TransactionHandle extends Queryable {
  /**
   * The transaction's last statement: the transaction commits with it. On PostgreSQL its COMMIT is
   * sent with it (pipelined: one round trip fewer); either the statement and the commit both
   * succeed, or it throws and nothing is committed. Nothing may run in the transaction after it, and
   * `work` must return without throwing once it has resolved. A statement that checks what it wrote
   * must do so in SQL (`bds_invariant`, migration 020), since nothing can roll back after it.
   */
  queryAndCommit<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
}

/** How PostgreSQL is to plan a statement run on its own, on a pool (not in a transaction). */
export interface QueryOptions {
  /**
   * 'keyed': the statement finds every row it reads or writes by key, for many items at once (arrays
   * unnested against primary keys). PostgreSQL runs it as a keyed transaction does
   * (TransactionOptions.seqScans false): in a transaction of its own, pipelined in one round trip,
   * with no sequential scans and its generic plan.
   *
   * Why: PostgreSQL's plan cache would plan such a statement afresh at every call. Its generic plan is
   * costed for arrays of ten items, so a call with one or two always looks cheaper with a custom plan.
   * Planning these statements costs more than running them: on the payout path 0.2–0.6 ms a call
   * against 0.1–0.5 ms to run, about a third of the database's time at 16 concurrent payouts. The
   * generic plan is made once per connection from the statistics of that moment; connections are
   * replaced after DB_CONNECTION_MAX_LIFETIME_S, so the plan is made again as the tables grow.
   *
   * 'queue-head': the statement reads the head of a queue: its first due rows, in the order of the
   * queue's index (a claim, which then locks each row it picks through the primary key, as
   * claimDueEvents does; or when the next row falls due). PostgreSQL runs it as a 'keyed' one with
   * sorts disabled as well (SET LOCAL enable_sort = off), in the same round trip: the one plan left
   * without a sort is the walk of the queue's index.
   *
   * Why: a queue is nearly empty when its statistics are made and thousands deep during a payroll.
   * From those statistics, reading every due row and sorting them looked as cheap as reading the first
   * ones in index order, even when planned at each call with the call's own parameters: with 2,600
   * webhook events due, a claim read all 2,600 to pick the first 100 (about 2,900 buffers and 3–4 ms a
   * claim, plus 0.5 ms of planning) instead of its look-ahead of 400 (600 buffers, 1.7 ms).
   *
   * 'aggregate': the statement aggregates many rows of an index range (the payout report). PostgreSQL
   * runs it in a transaction of its own with JIT compilation off and 32 MB of work memory for its
   * sorts and hash tables. Measured (bench `payout-report`): JIT compiling took 0.6–2 s of a 366-day report,
   * more than it saved, and with 4 MB the percentile sort of 81,000 payments spilled to disk; docs/scaling.md,
   * "Aggregate reads".
   *
   * Only how the statement is planned and sent, never what it does. Ignored inside a transaction or on
   * a connection of withConnection (the statement runs as it is), and on PGlite.
   */
  plan?: 'keyed' | 'queue-head' | 'aggregate';
}

type Engine = 'pglite' | 'postgres';

export interface TransactionOptions {
  /**
   * true: a commit transaction (the committer's). Its BEGIN marks it as one for its own statements
   * (SET LOCAL bolivar.in_commit = on, in the same message), which the lock statements test before they
   * insert anything (IN_COMMIT_TRANSACTION in db/commit/lock-rows.ts). On PostgreSQL that BEGIN is not waited
   * for: it leaves with the commit's first statement, one round trip fewer per commit.
   */
  commit?: boolean;
  /**
   * false: every statement of this transaction finds its rows by key, so the planner is told not to
   * scan whole tables (SET LOCAL enable_seqscan = off, in the same round trip as BEGIN), and to use each
   * prepared statement's generic plan, made once per connection, instead of planning it again at every
   * call (PostgreSQL: SET LOCAL plan_cache_mode = force_generic_plan; see QueryOptions.plan 'keyed'). Plans cached
   * on the connection meanwhile — foreign-key checks, trigger queries, prepared statements — are made
   * as index lookups even when the tables were tiny at the time, instead of sequential scans that
   * stay cached while the tables grow (see PostgresDatabase's connection lifetime). Performance only
   * (their measured gain is by KEYED_PLANNER in db/postgres.ts); where no index fits, PostgreSQL still
   * scans. Ignored on PGlite, where it was never measured.
   */
  seqScans?: boolean;
}

/** One connection pool's occupancy, for the metrics (PostgreSQL only: PGlite has no pool). */
export interface PoolStats {
  pool: 'main' | 'relaxed';
  max: number;
  /** Connections open (checked out or idle). */
  total: number;
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
}

export interface Database extends Queryable {
  readonly engine: Engine;
  /** Runs `work` in one transaction (READ COMMITTED); commits on return, rolls back on throw. */
  transaction<T>(work: (tx: TransactionHandle) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * For statements whose loss in a database crash is recovered by design (an idempotency slot, the
   * sandbox rail's copy of a transfer, a rail acceptance record, the webhook dispatcher's claims and
   * attempt results): committed without waiting for the WAL flush. The next synchronous commit
   * flushes them too. Never for money.
   */
  readonly relaxed: Queryable;
  /** Runs `work` on one dedicated connection (needed for session-level advisory locks). */
  withConnection<T>(work: (conn: Queryable) => Promise<T>): Promise<T>;
  /** The pools' occupancy now, without I/O; absent on an engine without a pool. */
  poolStats?(): PoolStats[];
  close(): Promise<void>;
}

/** The relaxed-durability handle of a database (see `Database.relaxed`), or the handle itself. */
export function relaxedOf(db: Queryable): Queryable {
  return 'relaxed' in db ? (db as Database).relaxed : db;
}

/** PostgreSQL error codes the services branch on. */
const PG_SERIALIZATION_FAILURE = '40001';
const PG_DEADLOCK = '40P01';
const PG_LOCK_NOT_AVAILABLE = '55P03';
const PG_QUERY_CANCELED = '57014';

/** Transaction conflicts PostgreSQL resolves by aborting one side: safe to run the transaction again. */
export function isRetryableConflict(error: unknown): boolean {
  const code = pgErrorCode(error);
  return code === PG_DEADLOCK || code === PG_SERIALIZATION_FAILURE;
}

// Server-side codes of a database that is restarting, shutting down, out of connections, or that
// gave up waiting (statement or lock timeout): the request may succeed in a moment.
const TRANSIENT_CODES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '53400',
  PG_LOCK_NOT_AVAILABLE,
  PG_QUERY_CANCELED,
  PG_DEADLOCK,
  PG_SERIALIZATION_FAILURE,
]);
const TRANSIENT_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
const TRANSIENT_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection is closed',
  'terminating connection',
];

/**
 * The database could not answer now — lost or refused connection, server restarting, pool exhausted,
 * a statement or lock timeout — as opposed to a bug or a constraint violation. Requests that fail
 * this way answer 503 (retryable); nothing they did was committed, or, if the commit itself was cut
 * off, the retry with the same Idempotency-Key finds what was.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const code = (error as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (code.startsWith('08') || TRANSIENT_CODES.has(code) || TRANSIENT_NODE_CODES.has(code))
  )
    return true;
  const message = (error as { message?: unknown }).message;
  return typeof message === 'string' && TRANSIENT_MESSAGES.some((m) => message.includes(m));
}

export function pgErrorCode(error: unknown): string | undefined {
  if (error && typeof error === 'object' && 'code' in error && typeof (error as { code: unknown }).code === 'string') {
    return (error as { code: string }).code;
  }
  return undefined;
}
