// One PostgreSQL dialect on two engines: the embedded PGlite (one connection, in-process) and a real
// PostgreSQL server through a pool. Every repository takes a `Queryable`, so the same SQL runs on
// both; `transaction` is the only way to group statements.

export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
  /** Runs a parameterless script of one or more statements (migrations). */
  exec(sql: string): Promise<void>;
}

export type Engine = 'pglite' | 'postgres';

export interface TransactionOptions {
  /**
   * false: every statement of this transaction finds its rows by key, so the planner is told not to
   * scan whole tables (SET LOCAL enable_seqscan = off, in the same round trip as BEGIN). Plans cached
   * on the connection meanwhile — foreign-key checks, trigger queries, prepared statements — are made
   * as index lookups even when the tables were tiny at the time, instead of sequential scans that
   * stay cached while the tables grow (see PostgresDatabase's connection lifetime). No effect on
   * correctness; where no index fits, PostgreSQL still scans.
   */
  seqScans?: boolean;
}

export interface Database extends Queryable {
  readonly engine: Engine;
  /** Runs `work` in one transaction (READ COMMITTED); commits on return, rolls back on throw. */
  transaction<T>(work: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * For statements whose loss in a database crash is recovered by design (an idempotency slot, the
   * sandbox rail's copy of a transfer, an acknowledgement the reaper re-asks for): committed without
   * waiting for the WAL flush. The next synchronous commit flushes them too. Never for money.
   */
  readonly relaxed: Queryable;
  /** Runs `work` on one dedicated connection (needed for session-level advisory locks). */
  withConnection<T>(work: (conn: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The relaxed-durability handle of a database (see `Database.relaxed`), or the handle itself. */
export function relaxedOf(db: Queryable): Queryable {
  return 'relaxed' in db ? (db as Database).relaxed : db;
}

/** PostgreSQL error codes the services branch on. */
export const PG_UNIQUE_VIOLATION = '23505';
export const PG_CHECK_VIOLATION = '23514';
export const PG_SERIALIZATION_FAILURE = '40001';
export const PG_DEADLOCK = '40P01';

export function pgErrorCode(error: unknown): string | undefined {
  if (error && typeof error === 'object' && 'code' in error && typeof (error as { code: unknown }).code === 'string') {
    return (error as { code: string }).code;
  }
  return undefined;
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  if (pgErrorCode(error) !== PG_UNIQUE_VIOLATION) return false;
  return constraint === undefined || (error as { constraint?: string }).constraint === constraint;
}

/** Asserts a statement touched exactly the rows the caller expected: anything else is a bug. */
export function assertRowCount(result: QueryResult<unknown>, expected: number, what: string): void {
  if (result.rowCount !== expected) {
    throw new Error(`invariant: ${what} touched ${result.rowCount} rows, expected ${expected}`);
  }
}
