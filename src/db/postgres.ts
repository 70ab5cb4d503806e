import pg from 'pg';
import {
  type Database,
  type PoolStats,
  type Queryable,
  type QueryOptions,
  type QueryResult,
  type TransactionHandle,
  type TransactionOptions,
} from './database.ts';
import { assert } from '../domain/assert.ts';

// int8 → bigint (money is never a JS number), numeric → string (exact decimals), so both engines
// hand the services the same types.
const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === 20) return (value: string) => BigInt(value);
    if (oid === 1700) return (value: string) => value;
    if (oid === 1016) return (value: string) => pg.types.arrayParser(value, (v: string) => BigInt(v));
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

// Every parameterised statement is a named prepared statement: each connection parses it once and
// reuses it, instead of parsing (and planning) the same SQL text on every call. The names come from
// one process-wide map, so a name always means the same text; the map is bounded so that dynamic SQL
// cannot grow it without limit (past the bound, statements run unnamed as before).
const STATEMENT_NAMES_MAX = 2000;
const statementNames = new Map<string, string>();

function statementName(sql: string): string | undefined {
  let name = statementNames.get(sql);
  if (name === undefined && statementNames.size < STATEMENT_NAMES_MAX) {
    name = `bds_${statementNames.size}`;
    statementNames.set(sql, name);
  }
  return name;
}

/**
 * `named` false: behind a transaction pooler (DATABASE_POOLER=transaction), whose next transaction may
 * run on another server connection, where a statement prepared on this one does not exist. An
 * unnamed statement is parsed with each call and lives only until the next.
 */
function queryConfig(sql: string, params: readonly unknown[] | undefined, named: boolean): pg.QueryConfig {
  if (params === undefined) return { text: sql, types } as pg.QueryConfig;
  return {
    name: named ? statementName(sql) : undefined,
    text: sql,
    values: params as unknown[],
    types,
  } as pg.QueryConfig;
}

/**
 * Runs `issue`, whose queries leave in one socket write: pg writes each query on its own (a syscall,
 * and on loopback the whole delivery to the server, per write), so a BEGIN, a statement and a COMMIT
 * issued together were three writes and three wake-ups of the server. Writes nest (pg corks each
 * extended-protocol query itself); the last uncork sends them all.
 */
function together<T>(client: pg.ClientBase, issue: () => T): T {
  const stream = (client as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection
    ?.stream;
  stream?.cork?.();
  try {
    return issue();
  } finally {
    stream?.uncork?.();
  }
}

/**
 * A checked-out client has no error listener of the pool's: a connection dropped between two queries
 * of a transaction (a server restart, a network cut) would be an unhandled 'error' event and kill the
 * process. The query in flight fails on its own; this listener only keeps the event handled, and the
 * client is then released as broken so the pool replaces it.
 */
function checkOut(client: pg.ClientBase): { broken(): boolean; done(): void } {
  let failed = false;
  const onError = () => {
    failed = true;
  };
  client.on('error', onError);
  return {
    broken: () => failed,
    done: () => client.removeListener('error', onError),
  };
}

/** What marks a commit transaction as one (TransactionOptions.commit), sent with its BEGIN. */
const IN_COMMIT = 'SET LOCAL bolivar.in_commit = on';
/**
 * The planner settings of a keyed transaction (TransactionOptions.seqScans false, QueryOptions.plan
 * 'keyed'). Performance only: no result depends on them (a commit transaction is marked by
 * bolivar.in_commit, above). Stays for what it buys, A/B 2026-11-27: payout c16 872/s with both, 341/s
 * without either (−61 %), PostgreSQL CPU per payout 0.80 vs 1.14 ms (+42 %); docs/scaling.md, "Keyed planner".
 */
const KEYED_PLANNER = 'SET LOCAL enable_seqscan = off; SET LOCAL plan_cache_mode = force_generic_plan';
/** BEGIN of the transaction of a statement run on its own, by its QueryOptions.plan: one message each. */
const BEGIN_PLANNED = {
  keyed: `BEGIN; ${KEYED_PLANNER}`,
  /**
   * A keyed one that never scans the whole queue nor sorts what its index already orders. Stays for
   * what it buys: 600 outbox rows read instead of 2,700 at the least (−78 %); docs/scaling.md, "Queue head".
   */
  'queue-head': `BEGIN; ${KEYED_PLANNER}; SET LOCAL enable_sort = off`,
  /** See QueryOptions.plan 'aggregate'. */
  aggregate: `BEGIN; SET LOCAL jit = off; SET LOCAL work_mem = '32MB'`,
} as const;

/** BEGIN of a transaction with these options, and what it sets for itself: one message. */
function beginOf(options: TransactionOptions): string {
  return ['BEGIN', ...(options.commit ? [IN_COMMIT] : []), ...(options.seqScans === false ? [KEYED_PLANNER] : [])].join(
    '; ',
  );
}

/**
 * One pool and how its connections carry the service's session settings. `local`: '' when each
 * connection got them at its start (startup options, direct to PostgreSQL); behind a transaction
 * pooler, which refuses startup options and hands each transaction any server connection, the
 * `SET LOCAL …` that opens every transaction instead (`opening`).
 */
interface Target {
  pool: pg.Pool;
  /** Statements are prepared under a name, once per connection (queryConfig). */
  named: boolean;
  local: string;
}

/** `begin` (a BEGIN and its own settings, one message) with the target's session settings first. */
function opening(target: Target, begin: string): string {
  return target.local === '' ? begin : begin.replace(/^BEGIN/, `BEGIN; ${target.local}`);
}

/**
 * A query on a pool. A statement with a plan (QueryOptions.plan) runs in a transaction of its own:
 * its BEGIN_PLANNED, the statement and COMMIT leave together (the pool pipelines) and come back in one
 * round trip, as a commit transaction's BEGIN and write do. If the statement fails, the server answers
 * the COMMIT with ROLLBACK; the statement's error is what the caller sees. (Were BEGIN to fail, the
 * statement would run on its own, as planned statements did before: each is one statement, atomic by
 * itself.) Any other statement runs as it is.
 */
async function poolQuery<Row>(
  target: Target,
  sql: string,
  params: readonly unknown[] | undefined,
  options: QueryOptions | undefined,
): Promise<QueryResult<Row>> {
  if (params !== undefined && options?.plan !== undefined) {
    return transactionOn(target, (tx) => tx.queryAndCommit<Row>(sql, params), BEGIN_PLANNED[options.plan], true);
  }
  // Behind a transaction pooler a statement gets its settings (its timeouts above all) only from a
  // transaction's SET LOCAL: it runs in one of its own, sent in the same round trip.
  if (target.local !== '') return transactionOn(target, (tx) => tx.queryAndCommit<Row>(sql, params), 'BEGIN', true);
  const result = await target.pool.query(queryConfig(sql, params, target.named));
  return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
}

/** A parameterless script on a pool; behind a transaction pooler, in a transaction of its own (poolQuery). */
async function poolExec(target: Target, sql: string): Promise<void> {
  if (target.local !== '') await poolQuery(target, sql, undefined, undefined);
  else await target.pool.query(sql);
}

class PgQueryable implements Queryable {
  constructor(
    protected readonly client: pg.ClientBase,
    private readonly named: boolean,
  ) {}
  /** `options` (a plan) mean nothing here: on one connection, or in a transaction, a statement runs as it is. */
  async query<Row>(sql: string, params?: readonly unknown[], _options?: QueryOptions): Promise<QueryResult<Row>> {
    const result = await this.client.query(queryConfig(sql, params, this.named));
    return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
  }
  async exec(sql: string): Promise<void> {
    await this.client.query(sql);
  }
}

/**
 * A transaction's statements. `begin`: its BEGIN, sent but not yet answered (pipelined with the first
 * statement), whose answer the first statement waits for. The last statement may carry the COMMIT
 * (queryAndCommit).
 */
class PgTransaction extends PgQueryable implements TransactionHandle {
  /** COMMIT went out with the last statement and succeeded. */
  committed = false;

  constructor(
    client: pg.PoolClient,
    named: boolean,
    private begin?: Promise<unknown>,
  ) {
    super(client, named);
  }

  override async query<Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>> {
    assert(!this.committed, 'a statement after the transaction committed');
    const pending = super.query<Row>(sql, params);
    const begin = this.begin;
    if (begin) {
      this.begin = undefined;
      try {
        await begin;
      } catch (error) {
        pending.catch(() => undefined);
        throw error;
      }
    }
    return pending;
  }

  async queryAndCommit<Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>> {
    // Pipelined behind the statement: if the statement fails, the transaction is aborted and the
    // server answers this COMMIT with ROLLBACK, so nothing of it is committed.
    const [result, commit] = together(
      this.client,
      () => [this.query<Row>(sql, params), this.client.query('COMMIT')] as const,
    );
    commit.catch(() => undefined);
    let rows: QueryResult<Row>;
    try {
      rows = await result;
    } catch (error) {
      await commit.catch(() => undefined);
      throw error;
    }
    const ended = await commit;
    assert(ended.command === 'COMMIT', `the transaction ended with ${ended.command}, not COMMIT`);
    this.committed = true;
    return rows;
  }
}

/**
 * One transaction on a connection of `target` (PostgresDatabase.transaction, and planned statements on
 * either pool), opened by `begin` (after the target's session settings, if it has any to set). `pipelined`:
 * BEGIN's answer is not waited for before the work's first statement goes out.
 */
async function transactionOn<T>(
  target: Target,
  work: (tx: TransactionHandle) => Promise<T>,
  begin: string,
  pipelined: boolean,
): Promise<T> {
  const client = await target.pool.connect();
  const opened = opening(target, begin);
  const checkedOut = checkOut(client);
  let broken = false;
  try {
    // Without parameters BEGIN and its settings are one simple-protocol message: one round trip.
    // A commit transaction (TransactionOptions.commit: the committer's) does not wait for its answer:
    // the pool pipelines, so BEGIN leaves together with the commit's first statement, one round trip
    // fewer per commit. That statement answers only once BEGIN is seen to have succeeded, and it
    // inserts nothing outside the transaction (IN_COMMIT_TRANSACTION in db/commit/lock-rows.ts): only a
    // successful BEGIN sets bolivar.in_commit.
    let tx: PgTransaction | undefined;
    let begun: Promise<unknown>;
    let working: Promise<T>;
    if (pipelined) {
      // BEGIN and what the work issues before its first await leave in one write.
      [begun, working] = together(client, () => {
        const sent = client.query(opened);
        sent.catch(() => undefined);
        tx = new PgTransaction(client, target.named, sent);
        return [sent, work(tx)] as const;
      });
    } else {
      begun = client.query(opened);
      await begun;
      tx = new PgTransaction(client, target.named);
      working = work(tx);
    }
    const result = await working.catch((error: unknown) => {
      assert(!tx!.committed, `the transaction had committed when its work failed: ${(error as Error)?.message}`);
      throw error;
    });
    await begun;
    if (!tx!.committed) await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch {
      broken = true;
    }
    throw error;
  } finally {
    checkedOut.done();
    client.release(broken || checkedOut.broken());
  }
}

/**
 * No JIT compilation: every statement of the service is a short keyed one, and JIT costs hundreds of
 * milliseconds per execution when a plan's estimated cost crosses jit_above_cost — which any plan of a
 * transaction run with enable_seqscan off does (a disabled scan is costed at 1e10).
 */
const SESSION_OPTIONS = '-c jit=off';

const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;
const DEFAULT_LOCK_TIMEOUT_MS = 5_000;
const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 30_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

export interface PostgresOptions {
  maxLifetimeSeconds?: number;
  /** DB_STATEMENT_TIMEOUT_MS: the longest any one statement may run. */
  statementTimeoutMs?: number;
  /** DB_LOCK_TIMEOUT_MS: the longest a statement waits for a row lock. */
  lockTimeoutMs?: number;
  /** A transaction left open by a stalled process is ended by the server after this long. */
  idleInTransactionTimeoutMs?: number;
  /** How long a request waits for a free pool connection. */
  connectTimeoutMs?: number;
  /**
   * DATABASE_POOLER: 'transaction' when the connection string names a transaction pooler (PgBouncer
   * pool_mode=transaction): statements go unnamed and every setting is SET LOCAL in each transaction.
   */
  pooler?: 'none' | 'transaction';
  /** DATABASE_DIRECT_URL: PostgreSQL itself, for work that needs a session of its own (withConnection). */
  directUrl?: string;
}

type Timeouts = Record<'statement_timeout' | 'lock_timeout' | 'idle_in_transaction_session_timeout', number>;

/** What every connection of a pool runs with; the relaxed pool's commits also do not wait for the WAL flush. */
function sessionSettings(timeouts: Timeouts, relaxed: boolean): string[] {
  const settings = ['jit = off', ...Object.entries(timeouts).map(([name, ms]) => `${name} = ${ms}`)];
  return relaxed ? [...settings, 'synchronous_commit = off'] : settings;
}

/**
 * A pool of `max` connections and how it carries its session settings: direct to PostgreSQL, as
 * startup options of each connection; behind a transaction pooler, as SET LOCAL in each transaction.
 */
function openTarget(
  connectionString: string,
  max: number,
  options: PostgresOptions,
  timeouts: Timeouts,
  relaxed: boolean,
): Target {
  const pooled = options.pooler === 'transaction';
  const pool = new pg.Pool({
    connectionString,
    // Queries issued together on one client go out together (pg's pipeline mode). The service
    // issues one query at a time per client, except a commit's BEGIN (see `transaction`) and a
    // planned statement's transaction (poolQuery).
    pipeline: true,
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    maxLifetimeSeconds: options.maxLifetimeSeconds ?? 0,
    ...(pooled
      ? {}
      : { options: relaxed ? `${SESSION_OPTIONS} -c synchronous_commit=off` : SESSION_OPTIONS, ...timeouts }),
  });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // Nor one in any other state: a server shutting down sends every connection a FATAL (57P01), and
  // a client with no listener at that moment raises it as an unhandled 'error' event. An API process
  // of the PostgreSQL-restart liveness test died exactly so (once in three runs), on a client that was
  // neither idle nor in a transaction of ours (pool.query's own listener is a `once`). Each query still
  // fails on its own, and a client that lost its connection is not queryable: the pool drops it.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const local = pooled
    ? sessionSettings(timeouts, relaxed)
        .map((setting) => `SET LOCAL ${setting}`)
        .join('; ')
    : '';
  return { pool, named: !pooled, local };
}

export class PostgresDatabase implements Database {
  readonly engine = 'postgres' as const;
  private readonly main: Target;
  private readonly relaxedTarget: Target;
  readonly relaxed: Queryable;
  /** How withConnection reaches PostgreSQL directly; undefined: through the main pool. */
  private readonly direct: { url: string | undefined; timeouts: Timeouts; connectTimeoutMs: number } | undefined;

  /**
   * `maxLifetimeSeconds` replaces each connection after that long. A connection keeps the plans it
   * cached — its prepared statements, and PostgreSQL's own for foreign-key checks and trigger
   * queries — until the statistics of their tables change. Where autovacuum is off, or has not yet
   * analysed a table that grew from empty, a plan made when the table was tiny (a sequential scan)
   * stays, and every payout pays a scan of the whole ledger. A new connection plans again against the
   * current table sizes. 0 keeps connections for as long as they are used. (Behind a pooler it is the
   * pooler's server connections that keep plans: its server_lifetime plays this part, docs/pooler.md.)
   */
  constructor(connectionString: string, poolSize: number, options: PostgresOptions = {}) {
    // Every statement and lock wait of the service is bounded: a stuck query or a lock held by a
    // stalled transaction fails its request (503, retryable) instead of holding a connection forever.
    const timeouts: Timeouts = {
      statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
      lock_timeout: options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
      idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    };
    this.main = openTarget(connectionString, poolSize, options, timeouts, false);
    const relaxedTarget = openTarget(connectionString, Math.max(2, Math.ceil(poolSize / 3)), options, timeouts, true);
    this.relaxedTarget = relaxedTarget;
    this.relaxed = {
      async query<Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<Row>> {
        return poolQuery<Row>(relaxedTarget, sql, params, options);
      },
      async exec(sql: string): Promise<void> {
        await poolExec(relaxedTarget, sql);
      },
    };
    this.direct =
      options.pooler === 'transaction'
        ? { url: options.directUrl, timeouts, connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS }
        : undefined;
  }

  async query<Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<Row>> {
    return poolQuery<Row>(this.main, sql, params, options);
  }

  async exec(sql: string): Promise<void> {
    await poolExec(this.main, sql);
  }

  transaction<T>(work: (tx: TransactionHandle) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return transactionOn(this.main, work, beginOf(options), options.commit === true);
  }

  async withConnection<T>(work: (conn: Queryable) => Promise<T>): Promise<T> {
    if (this.direct) return this.withDirectConnection(work);
    const client = await this.main.pool.connect();
    const checkedOut = checkOut(client);
    try {
      return await work(new PgQueryable(client, true));
    } finally {
      checkedOut.done();
      client.release(checkedOut.broken());
    }
  }

  /**
   * Behind a transaction pooler a session of our own (a session advisory lock: migrations) would be
   * split across server connections, and a lock taken on one would outlive us on a connection the
   * pooler keeps: such work gets a connection straight to PostgreSQL, opened for it and closed after.
   */
  private async withDirectConnection<T>(work: (conn: Queryable) => Promise<T>): Promise<T> {
    const { url, timeouts, connectTimeoutMs } = this.direct!;
    assert(
      url !== undefined,
      'behind a transaction pooler, work that needs a session of its own needs DATABASE_DIRECT_URL',
    );
    const client = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: connectTimeoutMs,
      options: SESSION_OPTIONS,
      ...timeouts,
    });
    await client.connect();
    const checkedOut = checkOut(client);
    try {
      return await work(new PgQueryable(client, false));
    } finally {
      checkedOut.done();
      await client.end().catch(() => undefined);
    }
  }

  poolStats(): PoolStats[] {
    // pg-pool queues a request for one tick even when a connection is idle; only with none idle is
    // a queued request really waiting for one.
    const of = (pool: PoolStats['pool'], p: pg.Pool): PoolStats => ({
      pool,
      max: p.options.max ?? 0,
      total: p.totalCount,
      idle: p.idleCount,
      waiting: p.idleCount > 0 ? 0 : p.waitingCount,
    });
    return [of('main', this.main.pool), of('relaxed', this.relaxedTarget.pool)];
  }

  private closed = false;

  /** Ends both pools; a second call does nothing. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.relaxedTarget.pool.end();
    await this.main.pool.end();
  }
}
