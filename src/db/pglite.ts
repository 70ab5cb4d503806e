import { PGlite, types } from '@electric-sql/pglite';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type {
  Database,
  Queryable,
  QueryOptions,
  QueryResult,
  TransactionHandle,
  TransactionOptions,
} from './database.ts';

const parsers = {
  [types.INT8]: (value: string) => BigInt(value),
  [types.NUMERIC]: (value: string) => value,
};
const serializers = {
  [types.INT8]: (value: unknown) => String(value),
};

type Tx = {
  query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[]; affectedRows?: number }>;
  exec(sql: string): Promise<unknown>;
};

function wrap(target: Tx): TransactionHandle {
  const handle: TransactionHandle = {
    async query<Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<Row>> {
      const result = await target.query<Row>(sql, params as unknown[] | undefined);
      // affectedRows is 0 for a SELECT; the row count is then the rows returned, as in node-postgres.
      return { rows: result.rows, rowCount: Math.max(result.affectedRows ?? 0, result.rows.length) };
    },
    async exec(sql: string): Promise<void> {
      await target.exec(sql);
    },
    // One in-process engine: no round trip to save; the transaction commits when its work returns.
    queryAndCommit: (sql, params) => handle.query(sql, params),
  };
  return handle;
}

/**
 * The embedded engine: one in-process PostgreSQL. It has a single connection, so PGlite itself
 * serialises transactions; row locks and advisory locks behave as on a server with one session.
 */
export class PgliteDatabase implements Database {
  readonly engine = 'pglite' as const;
  /** One in-process engine: the same handle (its durability is PGlite's own). */
  readonly relaxed: Queryable = this;
  private readonly closeHooks: Array<() => void> = [];
  private constructor(private readonly db: PGlite) {}

  /** Runs `hook` once the engine has closed its files (openDatabase releases DATA_DIR's lock so). */
  afterClose(hook: () => void): void {
    this.closeHooks.push(hook);
  }

  /**
   * `dataDir` undefined → in memory (tests). `template`: the data directory a NEW database starts
   * from (see pglite-template.ts); ignored when `dataDir` already holds a database.
   */
  static async open(dataDir: string | undefined, template?: Blob): Promise<PgliteDatabase> {
    if (dataDir) mkdirSync(dataDir, { recursive: true });
    const isNew = dataDir === undefined || !existsSync(path.join(dataDir, 'PG_VERSION'));
    const db = await PGlite.create({
      dataDir,
      parsers,
      serializers,
      ...(isNew && template ? { loadDataDir: template } : {}),
    });
    // PGlite's default statement timeout is none; keep timestamps in UTC like the server engine.
    await db.exec(`SET TIME ZONE 'UTC'`);
    return new PgliteDatabase(db);
  }

  /** `options` (a plan) mean nothing on the embedded engine: one connection, no plan cache to steer. */
  query<Row>(sql: string, params?: readonly unknown[], _options?: QueryOptions): Promise<QueryResult<Row>> {
    return wrap(this.db as unknown as Tx).query<Row>(sql, params);
  }

  transaction<T>(work: (tx: TransactionHandle) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.db.transaction(async (tx) => {
      // Planner settings (TransactionOptions.seqScans) mean nothing here, as a query's plan does not:
      // their gain was measured on PostgreSQL only.
      if (options.commit) await tx.exec('SET LOCAL bolivar.in_commit = on');
      return work(wrap(tx as unknown as Tx));
    });
  }

  withConnection<T>(work: (conn: Queryable) => Promise<T>): Promise<T> {
    return work(this);
  }

  async exec(sql: string): Promise<void> {
    await this.db.exec(sql);
  }

  /** The whole data directory as a gzipped tarball (what `template` takes). */
  dumpDataDir(): Promise<Blob> {
    return this.db.dumpDataDir('gzip') as Promise<Blob>;
  }

  async close(): Promise<void> {
    if (!this.db.closed) await this.db.close();
    for (const hook of this.closeHooks.splice(0)) hook();
  }
}
