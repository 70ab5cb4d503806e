import pg from 'pg';
import type { Database, Queryable, QueryResult, TransactionOptions } from './database.ts';

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

function queryConfig(sql: string, params: readonly unknown[] | undefined): pg.QueryConfig {
  if (params === undefined) return { text: sql, types } as pg.QueryConfig;
  return { name: statementName(sql), text: sql, values: params as unknown[], types } as pg.QueryConfig;
}

class PgQueryable implements Queryable {
  constructor(private readonly client: pg.PoolClient) {}
  async query<Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>> {
    const result = await this.client.query(queryConfig(sql, params));
    return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
  }
  async exec(sql: string): Promise<void> {
    await this.client.query(sql);
  }
}

export class PostgresDatabase implements Database {
  readonly engine = 'postgres' as const;
  private readonly pool: pg.Pool;
  private readonly relaxedPool: pg.Pool;
  readonly relaxed: Queryable;

  /**
   * `maxLifetimeSeconds` replaces each connection after that long. A connection keeps the plans it
   * cached — its prepared statements, and PostgreSQL's own for foreign-key checks and trigger
   * queries — until the statistics of their tables change. Where autovacuum is off, or has not yet
   * analysed a table that grew from empty, a plan made when the table was tiny (a sequential scan)
   * stays, and every payout pays a scan of the whole ledger. A new connection plans again against the
   * current table sizes. 0 keeps connections for as long as they are used.
   */
  constructor(connectionString: string, poolSize: number, options: { maxLifetimeSeconds?: number } = {}) {
    const maxLifetimeSeconds = options.maxLifetimeSeconds ?? 0;
    this.pool = new pg.Pool({
      connectionString,
      max: poolSize,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: 10_000,
      maxLifetimeSeconds,
    });
    // An idle client that loses its server must not crash the process; the pool replaces it.
    this.pool.on('error', () => undefined);
    this.relaxedPool = new pg.Pool({
      connectionString,
      max: Math.max(2, Math.ceil(poolSize / 4)),
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: 10_000,
      maxLifetimeSeconds,
      options: '-c synchronous_commit=off',
    });
    this.relaxedPool.on('error', () => undefined);
    const relaxedPool = this.relaxedPool;
    this.relaxed = {
      async query<Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>> {
        const result = await relaxedPool.query(queryConfig(sql, params));
        return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
      },
      async exec(sql: string): Promise<void> {
        await relaxedPool.query(sql);
      },
    };
  }

  async query<Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>> {
    const result = await this.pool.query(queryConfig(sql, params));
    return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
  }

  async exec(sql: string): Promise<void> {
    await this.pool.query(sql);
  }

  async transaction<T>(work: (tx: Queryable) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      // Without parameters this is one simple-protocol message: both statements, one round trip.
      await client.query(options.seqScans === false ? 'BEGIN; SET LOCAL enable_seqscan = off' : 'BEGIN');
      const result = await work(new PgQueryable(client));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async withConnection<T>(work: (conn: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      return await work(new PgQueryable(client));
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.relaxedPool.end();
    await this.pool.end();
  }
}
